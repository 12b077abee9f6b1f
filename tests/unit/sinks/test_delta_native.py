"""The native Delta writer's own logic on real delta-rs tables (no Spark): which locations
it reaches, which table features it refuses, which deletes it drops before a merge
(sinks/delta/native.py). Spark reading its commits:
tests/integration/test_delta_native_writer.py."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.errors import OptionError
from sparkcdc.sinks.delta import native
from sparkcdc.sinks.delta.config import DeltaSinkConfig

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])


def _txn(path: str, app: str) -> int | None:
    """The version the target recorded for ``app`` (its ``txn``), as delta-rs reads it."""
    from deltalake import DeltaTable

    return DeltaTable(path).transaction_version(app)


def _target(path: Path, ids: list[int], feed: bool = True) -> str:
    from deltalake import write_deltalake

    config = {"delta.enableChangeDataFeed": "true"} if feed else None
    rows = pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)
    write_deltalake(str(path), rows, configuration=config)
    return str(path)


def _batch(changes: list[tuple[int, bool]]) -> pa.Table:
    """Each key's last change: (id, deleted)."""
    return pa.table(
        {
            "id": pa.array([i for i, _ in changes], pa.int64()),
            "v": [None if gone else f"new{i}" for i, gone in changes],
            "_deleted": [gone for _, gone in changes],
        }
    )


def _rows(path: str) -> dict[int, str]:
    from deltalake import DeltaTable

    table = DeltaTable(path).to_pyarrow_table()
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def test_the_storage_it_reaches_named_as_delta_rs_names_it() -> None:
    assert native.delta_rs_uri("/lake/db/t") == "/lake/db/t"
    assert native.delta_rs_uri("file:/lake/db/t") == "/lake/db/t"
    assert native.delta_rs_uri("file:///lake/a%20b") == "/lake/a b"
    assert native.delta_rs_uri("s3a://bucket/lake/t") == "s3://bucket/lake/t"
    assert native.delta_rs_uri("abfss://c@a.dfs.core.windows.net/l") == (
        "abfss://c@a.dfs.core.windows.net/l"
    )
    assert native.delta_rs_uri("gs://bucket/l") == "gs://bucket/l"
    assert native.delta_rs_uri("hdfs://nn/lake") is None
    with pytest.raises(OptionError, match=r"'writer'.*hdfs://nn/lake.*'writer: spark'"):
        DeltaSinkConfig.from_options({"path": "hdfs://nn/lake", "writer": "native"})
    config = DeltaSinkConfig.from_options({"path": "s3a://b/l", "writer": "native"})
    assert config.storage_options == {}


def test_storage_options_reach_delta_rs_and_never_show_a_secret(tmp_path: Path) -> None:
    options = {
        "path": str(tmp_path),
        "writer": "native",
        "storage-options.AWS_REGION": "eu-west-1",
        "storage-options.AWS_SECRET_ACCESS_KEY": "hunter2-aws",
        "storage-options.AZURE_STORAGE_ACCOUNT_KEY": "hunter2-azure",
        "storage-options.GOOGLE_SERVICE_ACCOUNT_KEY": "hunter2-gcs",
    }
    config = DeltaSinkConfig.from_options(options)
    assert config.storage_options["AWS_SECRET_ACCESS_KEY"] == "hunter2-aws"
    assert "hunter2" not in repr(config) and "eu-west-1" in repr(config)
    # passed through as they are (a local folder's store ignores them)
    location = _target(tmp_path / "t", [1, 2])
    table = native.open_table(location, config.storage_options)
    assert table._storage_options == dict(config.storage_options)
    assert _txn(location, "p") is None
    # Spark's writer takes its storage settings from spark-conf: said, not ignored
    spark_options = {**options, "writer": "spark"}
    with pytest.raises(OptionError, match=r"storage-options.*spark-conf") as refused:
        DeltaSinkConfig.from_options(spark_options)
    assert "hunter2" not in str(refused.value)


def test_features_outside_the_verified_ones_are_unsupported() -> None:
    assert native.unsupported({"changeDataFeed", "deletionVectors", "columnMapping"}) == []
    assert native.unsupported({"changeDataFeed", "rowTracking", "domainMetadata"}) == [
        "domainMetadata",
        "rowTracking",
    ]


def test_a_legacy_protocols_features_come_from_its_version(tmp_path: Path) -> None:
    path = _target(tmp_path / "t", [1])
    features = native.table_features(path)
    assert "changeDataFeed" in features and native.unsupported(features) == []


def test_a_merge_with_an_absent_key_deleted_and_an_insert_lands(tmp_path: Path) -> None:
    """delta-rs alone fails this merge (NOT NULL column, change feed, an insert, a delete of
    a key the target lacks); the writer drops that delete, records the txn, and a replay
    check sees it."""
    path = _target(tmp_path / "t", [1, 2, 3])
    batch = _batch([(2, True), (9, True), (5, False), (1, False)])
    native.merge(path, batch, ["id"], ["id", "v"], (), "_deleted", "_reread", "{}", "app", 4)
    assert _rows(path) == {1: "new1", 3: "v3", 5: "new5"}
    assert _txn(path, "app") == 4
    replay = _batch([(1, True)])  # batch 4 again (other rows: it must not be looked at)
    assert not native.merge(path, replay, ["id"], ["id", "v"], (), "_deleted", "", "{}", "app", 4)
    assert not native.append(path, replay.drop_columns(["_deleted"]), "{}", "app", 3)
    assert _rows(path) == {1: "new1", 3: "v3", 5: "new5"}
    assert len(native.history(path, None)) == 2


def test_a_merge_that_changes_nothing_still_commits_its_txn(tmp_path: Path) -> None:
    path = _target(tmp_path / "t", [1])
    batch = _batch([(7, True)])
    native.merge(path, batch, ["id"], ["id", "v"], (), "_deleted", "_reread", '{"b": 1}', "app", 1)
    assert _txn(path, "app") == 1
    (newest,) = native.history(path, 1)
    assert newest[0] == 1 and newest[2] == '{"b": 1}'
    assert _rows(path) == {1: "v1"}


@settings(max_examples=25, deadline=None)
@given(
    held=st.sets(st.integers(0, 30), max_size=12),
    changes=st.dictionaries(st.integers(0, 30), st.booleans(), min_size=1, max_size=12),
)
def test_only_deletes_of_keys_the_target_lacks_are_dropped(
    tmp_path_factory: pytest.TempPathFactory, held: set[int], changes: dict[int, bool]
) -> None:
    from deltalake import DeltaTable

    path = _target(tmp_path_factory.mktemp("t"), sorted(held) or [99])
    batch = _batch(sorted(changes.items()))
    nullable = {"id": False, "v": True}
    kept = native._without_absent_deletes(DeltaTable(path), batch, ["id"], "_deleted", nullable)
    ids, gone = kept.column("id").to_pylist(), kept.column("_deleted").to_pylist()
    dropped = {i for i, deleted in changes.items() if deleted and i not in (held or {99})}
    if all(changes.values()):
        assert ids == sorted(changes)  # all deletes: nothing to trip the bug, kept whole
    else:
        assert ids == sorted(set(changes) - dropped)
    assert gone == [changes[i] for i in ids]


def test_a_delete_of_a_held_unique_key_with_a_null_part_is_merged(tmp_path: Path) -> None:
    """A unique key may hold NULL (``k2`` here); the target holds ``(1, NULL)``. Its
    delete, in a batch that also inserts into a target with a change feed and a NOT NULL
    column, is of a key the target holds: kept, so the row goes (a join on the key
    columns alone never matches NULL with NULL)."""
    from deltalake import write_deltalake

    schema = pa.schema(
        [
            pa.field("k1", pa.int64(), nullable=False),
            pa.field("k2", pa.string()),
            pa.field("v", pa.string(), nullable=False),
        ]
    )
    held = pa.table({"k1": [1, 1, 2], "k2": [None, "a", None], "v": ["x", "y", "z"]}, schema)
    path = str(tmp_path / "t")
    write_deltalake(path, held, configuration={"delta.enableChangeDataFeed": "true"})
    batch = pa.table(
        {
            "k1": pa.array([1, 3, 4], pa.int64()),
            "k2": pa.array([None, None, "b"], pa.string()),
            "v": pa.array([None, "new3", None], pa.string()),
            "_deleted": [True, False, True],  # (1, NULL) held; (4, 'b') not
        }
    )
    key, columns = ["k1", "k2"], ["k1", "k2", "v"]
    native.merge(path, batch, key, columns, (), "_deleted", "_reread", "{}", "app", 1)
    from deltalake import DeltaTable

    rows = DeltaTable(path).to_pyarrow_table().to_pylist()
    assert sorted(rows, key=lambda r: (r["k1"], r["k2"] or "")) == [
        {"k1": 1, "k2": "a", "v": "y"},
        {"k1": 2, "k2": None, "v": "z"},
        {"k1": 3, "k2": None, "v": "new3"},
    ]


_PART = st.one_of(st.none(), st.sampled_from(["a", "b"]))


@settings(max_examples=25, deadline=None)
@given(
    held=st.sets(st.tuples(st.integers(0, 4), _PART), min_size=1, max_size=8),
    changes=st.dictionaries(st.tuples(st.integers(0, 4), _PART), st.booleans(), max_size=8),
)
def test_deletes_of_keys_with_a_null_part_are_dropped_only_where_absent(
    tmp_path_factory: pytest.TempPathFactory,
    held: set[tuple[int, str | None]],
    changes: dict[tuple[int, str | None], bool],
) -> None:
    from deltalake import DeltaTable, write_deltalake

    schema = pa.schema([pa.field("k1", pa.int64(), nullable=False), pa.field("k2", pa.string())])
    keys = sorted(held, key=str)
    path = str(tmp_path_factory.mktemp("t"))
    rows = pa.table({"k1": [k for k, _ in keys], "k2": [p for _, p in keys]}, schema)
    write_deltalake(path, rows, configuration={"delta.enableChangeDataFeed": "true"})
    order = sorted(changes, key=str)
    batch = pa.table(
        {
            "k1": pa.array([k for k, _ in order], pa.int64()),
            "k2": pa.array([p for _, p in order], pa.string()),
            "_deleted": [changes[k] for k in order],
        }
    )
    nullable = {"k1": False, "k2": True}
    kept = native._without_absent_deletes(
        DeltaTable(path), batch, ["k1", "k2"], "_deleted", nullable
    )
    left = list(zip(kept.column("k1").to_pylist(), kept.column("k2").to_pylist(), strict=True))
    if all(changes.values()) or not any(changes.values()):
        assert left == order  # nothing to trip the bug: kept whole
    else:
        assert left == [k for k in order if not changes[k] or k in held]


def test_native_creation_only_where_spark_would_make_the_same_table() -> None:
    """A property Spark checks or normalises (any other ``delta.`` key, in any case, or a
    sparkcdc one in another spelling) and the session's Delta defaults for new tables
    leave the creation to Spark (review)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from sparkcdc.sinks.delta import native_targets

    schema = StructType([StructField("id", LongType()), StructField("v", StringType())])
    ours = {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "false"}
    assert native_targets.creatable("/lake/t", schema, ours)
    assert not native_targets.creatable("/lake/t", schema, ours, session_defaults=True)
    assert not native_targets.creatable("s3://bucket/t", schema, ours)
    for odd in (
        {"delta.enableChangeDataFeed": "TRUE"},
        {"Delta.enableChangeDataFeed": "true"},
        {"delta.logRetentionDuration": "30 days"},
    ):
        assert not native_targets.creatable("/lake/t", schema, {**ours, **odd}), odd
    assert native_targets.creatable("/lake/t", schema, {**ours, "sparkcdc.appends-for": "p"})

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
    assert native.committed_version(location, "p", config.storage_options) is None
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
    assert native.committed_version(path, "app") == 4
    replay = _batch([(1, True)])  # batch 4 again (other rows: it must not be looked at)
    assert not native.merge(path, replay, ["id"], ["id", "v"], (), "_deleted", "", "{}", "app", 4)
    assert not native.append(path, replay.drop_columns(["_deleted"]), "{}", "app", 3)
    assert _rows(path) == {1: "new1", 3: "v3", 5: "new5"}
    assert len(native.history(path, None)) == 2


def test_a_merge_that_changes_nothing_still_commits_its_txn(tmp_path: Path) -> None:
    path = _target(tmp_path / "t", [1])
    batch = _batch([(7, True)])
    native.merge(path, batch, ["id"], ["id", "v"], (), "_deleted", "_reread", '{"b": 1}', "app", 1)
    assert native.committed_version(path, "app") == 1
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

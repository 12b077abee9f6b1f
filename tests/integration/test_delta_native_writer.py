"""The Delta sink's native writer (delta-rs, ``writer: native``) against Spark's writer: the
same batches give the same table and the same change data feed (``readChangeFeed``, commit
versions and timestamps aside), one commit per target per batch, and a replayed batch
writes nothing (sinks/delta/native.py).

The batches cover what delta-rs needs the sink's help for: a delete of a key the target
never held alongside an insert (delta-rs's NOT NULL + change feed merge bug), a batch that
changes nothing (delta-rs makes no commit of its own), an update to identical values, and
rows read again that leave a kept column alone. A target with a table feature delta-rs
cannot write is refused, naming it and ``writer: spark``; one sparkcdc widened goes on
with Spark's writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta import native_targets
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.write_plan import WritePlan, plan_of
from sparkcdc.snapshot.schema_change import ColumnMoves

PIPELINE = "native-diff:0"
SCHEMA = "id BIGINT NOT NULL, a INT, b STRING"
CHANGES = ", _change_type STRING, _commit_version BIGINT, _commit_timestamp TIMESTAMP"
SOURCE = TableId("db", "t")

#: Batches of changes (id, a, b, change type, commit version): the snapshot; then an
#: update, a delete, an insert, an identical update, and a key inserted and deleted
#: within the batch (its delete is of a key the target never held); a batch of only such
#: a key; more snapshot rows mixed with log changes.
BATCHES: list[list[tuple[Any, ...]]] = [
    [(i, i * 10, f"r{i}", "insert", 100) for i in range(1, 8)],
    [
        (2, 20, "r2", "update_preimage", 150),
        (2, 21, "r2b", "update_postimage", 150),
        (3, 30, "r3", "delete", 160),
        (50, 500, "new", "insert", 170),
        (4, 40, "r4", "update_preimage", 175),
        (4, 40, "r4", "update_postimage", 175),
        (60, 600, "gone", "insert", 180),
        (60, 600, "gone", "delete", 190),
    ],
    [(70, 1, "x", "insert", 210), (70, 1, "x", "delete", 220)],
    [
        (8, 80, "r8", "insert", 400),
        (9, 90, "r9", "insert", 400),
        (5, 50, "r5", "update_preimage", 350),
        (5, 55, "r5b", "update_postimage", 350),
        (80, 8, "y", "insert", 360),
        (80, 8, "y", "delete", 370),
    ],
]


def _txn(path: str, app: str) -> int | None:
    """The version the target recorded for ``app`` (its ``txn``), as delta-rs reads it."""
    from deltalake import DeltaTable

    return DeltaTable(path).transaction_version(app)


def _plan(spark: Any, batch_id: int, rows: Sequence[tuple[Any, ...]]) -> WritePlan:
    """Batch ``batch_id`` as the pipeline counts it: inserts at ``100 * (batch_id + 1)`` are
    the snapshot's rows."""
    end = 100 * (batch_id + 1)
    frame = spark.createDataFrame([(*r, None) for r in rows], SCHEMA + CHANGES)
    snapshot = sum(1 for r in rows if r[3] == "insert" and r[4] == end)
    inserts = sum(1 for r in rows if r[3] == "insert") - snapshot
    return plan_of(
        PIPELINE,
        batch_id,
        {SOURCE: frame},
        f'{{"batch": {batch_id}}}',
        rows={SOURCE: len(rows)},
        snapshot_version=end,
        snapshot_rows={SOURCE: snapshot},
        log_inserts={SOURCE: inserts},
    )


def _sink(spark: Any, lake: Path, writer: str, mode: str = "upsert") -> tuple[DeltaSink, str]:
    sink = _sinks(spark, lake, writer, [SOURCE], mode)
    return sink, sink.target_path(SOURCE)


def _sinks(
    spark: Any, lake: Path, writer: str, sources: Sequence[TableId], mode: str = "upsert"
) -> DeltaSink:
    from pyspark.sql.types import StructType

    options = {"path": str(lake), "writer": writer, "changelog-mode": mode}
    sink = DeltaSink(DeltaSinkConfig.from_options(options), PIPELINE)
    sink.open(spark, [SinkTable(s, StructType.fromDDL(SCHEMA), ("id",)) for s in sources])
    return sink


def _version(spark: Any, path: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()["version"])


def _feed(spark: Any, path: str) -> list[tuple[Any, ...]]:
    """The target's change data feed from its creation on, commit versions aside."""
    feed = spark.read.format("delta").option("readChangeFeed", "true")
    rows = feed.option("startingVersion", 0).load(path).drop("_commit_version", "_commit_timestamp")
    return sorted(tuple(r) for r in rows.collect())


def _rows(spark: Any, path: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())


def _batches_of_commits(spark: Any, path: str) -> list[int]:
    """The batch id of each commit after the table's creation, oldest first."""
    import json

    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").where("version > 0")
    metadata = history.orderBy("version").select("userMetadata").collect()
    return [json.loads(m)["batch_id"] for (m,) in metadata]


def test_native_writes_what_spark_writes_change_feed_included(spark: Any, tmp_path: Path) -> None:
    old, old_path = _sink(spark, tmp_path / "spark", "spark")
    new, new_path = _sink(spark, tmp_path / "native", "native")
    for batch_id, rows in enumerate(BATCHES):
        for sink in (old, new):
            sink.write(_plan(spark, batch_id, rows))
        before = _version(spark, new_path)
        new.write(_plan(spark, batch_id, rows))  # a replay: nothing
        assert _version(spark, new_path) == before
    assert _rows(spark, new_path) == _rows(spark, old_path)
    assert {r[0] for r in _rows(spark, new_path)} == {1, 2, 4, 5, 6, 7, 8, 9, 50}
    assert _feed(spark, new_path) == _feed(spark, old_path)
    # one commit per batch: the last batch's snapshot rows and log changes are one merge
    # (Spark's writer appends the snapshot rows first)
    assert _batches_of_commits(spark, new_path) == [0, 1, 2, 3]
    assert _batches_of_commits(spark, old_path) == [0, 1, 2, 3, 3]
    assert _txn(new_path, PIPELINE) == len(BATCHES) - 1
    engines = spark.sql(f"DESCRIBE HISTORY delta.`{new_path}`").where("version > 0")
    assert {e for (e,) in engines.select("engineInfo").collect()} == {"delta-rs:py-1.6.6"}
    # a restarted sink (a new process) skips the replay of the last batch too
    again, _ = _sink(spark, tmp_path / "native", "native")
    before = _version(spark, new_path)
    again.write(_plan(spark, len(BATCHES) - 1, BATCHES[-1]))
    assert _version(spark, new_path) == before


def test_native_history_target_equals_sparks(spark: Any, tmp_path: Path) -> None:
    old, old_path = _sink(spark, tmp_path / "spark", "spark", "append")
    new, new_path = _sink(spark, tmp_path / "native", "native", "append")
    for batch_id, rows in enumerate(BATCHES):
        for sink in (old, new):
            sink.write(_plan(spark, batch_id, rows))
            sink.write(_plan(spark, batch_id, rows))  # the replay: nothing
    assert _rows(spark, new_path) == _rows(spark, old_path)
    assert len(_rows(spark, new_path)) == sum(len(rows) for rows in BATCHES)
    assert _batches_of_commits(spark, new_path) == [0, 1, 2, 3]


def test_a_truncate_is_one_commit_and_skipped_on_replay(spark: Any, tmp_path: Path) -> None:
    sink, path = _sink(spark, tmp_path, "native")
    sink.write(_plan(spark, 0, BATCHES[0]))
    table = sink.tables[SOURCE]
    for _ in range(2):
        sink.truncate(spark, table, _plan(spark, 1, []))
    assert _rows(spark, path) == [] and _batches_of_commits(spark, path) == [0, 1]
    feed = _feed(spark, path)
    assert sorted(r[0] for r in feed if r[3] == "delete") == list(range(1, 8))


def test_a_feature_delta_rs_cannot_write_is_refused_naming_the_way_out(
    spark: Any, tmp_path: Path
) -> None:
    _, path = _sink(spark, tmp_path, "spark")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')")
    with pytest.raises(SparkCdcError, match=r"rowTracking.*'writer: spark'"):
        _sink(spark, tmp_path, "native")


def test_a_target_sparkcdc_widened_goes_on_with_sparks_writer(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.types import StructType

    sink, path = _sink(spark, tmp_path, "native")
    sink.write(_plan(spark, 0, BATCHES[0]))
    wider = SinkTable(SOURCE, StructType.fromDDL("id BIGINT NOT NULL, a BIGINT, b STRING"), ("id",))
    sink.evolve(spark, wider, sink.tables[SOURCE], ColumnMoves())
    sink.write(_plan(spark, 1, BATCHES[1]))
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").first()
    assert history["engineInfo"].startswith("Apache-Spark")  # Spark's MERGE wrote it
    assert {r[0] for r in _rows(spark, path)} == {1, 2, 4, 5, 6, 7, 50}


def _jobs_of(spark: Any, write: Any) -> int:
    """How many Spark jobs ``write()`` ran (its threads inherit the job group)."""
    import uuid

    context = spark.sparkContext
    group = f"native-jobs-{uuid.uuid4()}"
    context.setJobGroup(group, "counted")
    try:
        write()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    return len(context.statusTracker().getJobIdsForGroup(group))


@pytest.mark.parametrize("mode", ["upsert", "append"])
def test_a_batch_of_many_targets_is_one_spark_job_and_one_commit_each(
    spark: Any, tmp_path: Path, mode: str
) -> None:
    """Issue 62: the rows of every target a batch changes reach delta-rs through one Spark
    job, however many targets; each target gets one commit per batch, with the txn."""
    sources = [TableId("db", f"t{i}") for i in range(5)]
    sink = _sinks(spark, tmp_path, "native", sources, mode)
    for batch_id, rows in enumerate(BATCHES):
        frame = _plan(spark, batch_id, rows).targets[SOURCE]
        plan = plan_of(
            PIPELINE,
            batch_id,
            {s: frame.changes for s in sources},
            f'{{"batch": {batch_id}}}',
            rows={s: frame.rows or 0 for s in sources},
            snapshot_version=100 * (batch_id + 1),
            snapshot_rows={s: frame.snapshot_rows or 0 for s in sources},
            log_inserts={s: frame.log_inserts or 0 for s in sources},
        )
        assert _jobs_of(spark, lambda plan=plan: sink.write(plan)) == 1
        assert _jobs_of(spark, lambda plan=plan: sink.write(plan)) == 1  # a replay: no commit
    for source in sources:
        path = sink.target_path(source)
        assert _batches_of_commits(spark, path) == [0, 1, 2, 3]
        assert _txn(path, PIPELINE) == len(BATCHES) - 1
    one, _ = _sink(spark, tmp_path / "one", "native", mode)
    for batch_id, rows in enumerate(BATCHES):
        one.write(_plan(spark, batch_id, rows))
    assert _rows(spark, sink.target_path(sources[-1])) == _rows(spark, one.target_path(SOURCE))


def _detail(spark: Any, path: str) -> tuple[Any, ...]:
    """What Spark says of the target's protocol, properties and columns."""
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()
    features = sorted(detail["tableFeatures"])
    schema = spark.read.format("delta").load(path).schema
    return (
        detail["minReaderVersion"],
        detail["minWriterVersion"],
        features,
        detail["properties"],
        detail["partitionColumns"],
        schema,
    )


def _creator(spark: Any, path: str) -> str:
    first = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").where("version = 0").first()
    return str(first["engineInfo"])


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"change-data-feed": "false", "deletion-vectors": "false"},
        {"deletion-vectors": "false"},  # the change data feed alone: writer 7 too
    ],
)
def test_a_target_delta_rs_creates_is_the_one_spark_creates(
    spark: Any, tmp_path: Path, options: dict[str, str]
) -> None:
    """Issue 62: the native writer creates folder targets by their first commit (no Spark call
    per table), with Spark's protocol, features, properties and columns; a column name
    Delta stores only with column mapping leaves the creation to Spark."""
    from pyspark.sql.types import StructType

    made = {}
    for writer in ("spark", "native"):
        config = {"path": str(tmp_path / writer), "writer": writer, **options}
        sink = DeltaSink(DeltaSinkConfig.from_options(config), PIPELINE)
        odd = SinkTable(TableId("db", "odd"), StructType.fromDDL("id BIGINT, `a b` INT"), ("id",))
        naive = StructType.fromDDL("id BIGINT NOT NULL, at TIMESTAMP_NTZ, d DECIMAL(10, 2)")
        ntz = SinkTable(TableId("db", "ntz"), naive, ("id",))  # MySQL's DATETIME
        sink.open(spark, [SinkTable(SOURCE, StructType.fromDDL(SCHEMA), ("id",)), odd, ntz])
        made[writer] = sink
    for source in (SOURCE, TableId("db", "ntz")):
        path = made["native"].target_path(source)
        assert _creator(spark, path) == native_targets.ENGINE
        assert _detail(spark, path) == _detail(spark, made["spark"].target_path(source))
    odd_path = made["native"].target_path(TableId("db", "odd"))
    assert _creator(spark, odd_path).startswith("Apache-Spark")
    # the native writer's own test above writes, reads and feeds such targets

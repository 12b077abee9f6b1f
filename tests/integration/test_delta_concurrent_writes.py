"""The Delta sink writing a batch's targets at once (``concurrent-writes``,
spark/concurrent_writes.py): each target gets its own commits, with its own transaction id
and offset, once; a batch that fails in one target fails as a whole, a stopping run starts
no target, and the replay finishes the batch without writing any target twice."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import APPENDS_FOR, DeltaSink
from sparkcdc.sinks.write_plan import WritePlan, plan_of
from sparkcdc.spark.concurrent_writes import WritesStopped

PIPELINE = "many:query-1"
IDS = [TableId("db", f"t{i}") for i in range(6)]


def _changes(spark: Any, rows: list[tuple[int, str, str, int]], fail: bool = False) -> Any:
    """A changelog of (key, value, change type, version) rows; ``fail``: reading it fails."""
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        [(k, v, kind, version, None) for k, v, kind, version in rows],
        "k bigint, v string, _change_type string, _commit_version bigint, "
        "_commit_timestamp timestamp",
    )
    if fail:
        frame = frame.withColumn("v", F.when(F.col("k") >= 0, F.raise_error(F.lit("boom"))))
    return frame


def _batch(batch_id: int, changes: dict[TableId, Any], snapshot: int | None = None) -> WritePlan:
    counts = {t: 2 for t in changes}
    return plan_of(
        pipeline=PIPELINE,
        batch_id=batch_id,
        changes=changes,
        source_offset=json.dumps({"batch": batch_id}),
        rows=counts,
        snapshot_version=snapshot,
        snapshot_rows=counts if snapshot is not None else None,
    )


def _history(spark: Any, path: str) -> list[tuple[str, int | None]]:
    """(operation, batch id of its commit metadata) of each commit, oldest first."""
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version")
    rows = history.select("operation", "userMetadata").collect()
    return [(r[0], json.loads(r[1])["batch_id"] if r[1] else None) for r in rows]


@pytest.fixture
def sink(spark: Any, tmp_path: Path) -> DeltaSink:
    from pyspark.sql.types import StructType

    config = DeltaSinkConfig.from_options({"path": str(tmp_path), "concurrent-writes": "4"})
    sink = DeltaSink(config, PIPELINE)
    schema = StructType.fromDDL("k bigint, v string")
    sink.open(spark, [SinkTable(table, schema, ("k",)) for table in IDS])
    return sink


def test_targets_written_at_once_each_commit_once_with_their_offset(
    spark: Any, sink: DeltaSink
) -> None:
    snapshot = {
        t: _changes(spark, [(1, f"{t.table}-a", "insert", 7), (2, "b", "insert", 7)]) for t in IDS
    }
    sink.write(_batch(1, snapshot, snapshot=7))
    images = [("old", "update_preimage"), ("new", "update_postimage")]
    update = {t: _changes(spark, [(1, f"{t.table}-{v}", k, 8) for v, k in images]) for t in IDS}
    sink.write(_batch(2, update))
    sink.write(_batch(2, update))  # a replay: skipped by every target
    for key in (
        "spark.databricks.delta.write.txnAppId",
        "spark.databricks.delta.commitInfo.userMetadata",
    ):
        assert spark.conf.get(key, None) is None, f"{key} left set in the batch's session"
    for table in IDS:
        path = sink.target_path(table)
        # created as this pipeline's own: no commit of its own marks it before the append
        assert _history(spark, path) == [("CREATE TABLE", None), ("WRITE", 1), ("MERGE", 2)]
        properties = spark.sql(f"SHOW TBLPROPERTIES delta.`{path}`").collect()
        assert {r[0]: r[1] for r in properties}.get(APPENDS_FOR) == PIPELINE
        rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
        assert rows == [(1, f"{table.table}-new"), (2, "b")]

    # replays of the snapshot appends, which carry no transaction id: skipped, as this sink
    # wrote them, and in a new run as the targets' histories say (sinks/delta/appended.py)
    sink.write(_batch(1, snapshot, snapshot=7))
    restarted = DeltaSink(sink.config, PIPELINE)
    restarted.open(spark, list(sink.tables.values()))
    restarted.write(_batch(1, snapshot, snapshot=7))
    for table in IDS:
        assert _history(spark, sink.target_path(table))[1:] == [("WRITE", 1), ("MERGE", 2)]


def test_snapshot_rows_are_merged_where_the_history_cannot_say_they_are_in(
    spark: Any, sink: DeltaSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sparkcdc.sinks.delta import appended

    first = {t: _changes(spark, [(1, "a", "insert", 7), (2, "b", "insert", 7)]) for t in IDS}
    sink.write(_batch(1, first, snapshot=7))
    for table in IDS:  # another writer's commit, the newest one
        spark.sql(f"ALTER TABLE delta.`{sink.target_path(table)}` SET TBLPROPERTIES ('x' = '1')")
    monkeypatch.setattr(appended, "HISTORY_ROWS", 1)  # the walk reads that commit only
    rows = {t: _changes(spark, [(1, "a", "insert", 8), (3, "c", "insert", 8)]) for t in IDS}
    restarted = DeltaSink(sink.config, PIPELINE)  # a new run: knows nothing yet
    restarted.open(spark, list(sink.tables.values()))
    restarted.write(_batch(2, rows, snapshot=8))  # merged, marked as carrying them
    again = DeltaSink(sink.config, PIPELINE)
    again.open(spark, list(sink.tables.values()))
    again.write(_batch(2, rows, snapshot=8))  # its replay: the marked MERGE says they are in
    for table in IDS:
        path = sink.target_path(table)
        operations = [op for op, _ in _history(spark, path)]
        assert operations == ["CREATE TABLE", "WRITE", "SET TBLPROPERTIES", "MERGE"]
        found = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
        assert found == [(1, "a"), (2, "b"), (3, "c")]


def test_a_batch_failing_in_one_target_fails_and_its_replay_writes_each_target_once(
    spark: Any, sink: DeltaSink
) -> None:
    def changes(fail: TableId | None) -> dict[TableId, Any]:
        return {t: _changes(spark, [(5, f"{t.table}-5", "insert", 9)], fail=t == fail) for t in IDS}

    broken = IDS[1]
    with pytest.raises(Exception, match="boom"):
        sink.write(_batch(3, changes(broken)))
    assert _history(spark, sink.target_path(broken)) == [("CREATE TABLE", None)]
    sink.stopping = lambda: True  # a stopping run starts no target's write
    with pytest.raises(WritesStopped):
        sink.write(_batch(3, changes(None)))
    assert _history(spark, sink.target_path(broken)) == [("CREATE TABLE", None)]
    sink.stopping = None
    sink.write(_batch(3, changes(None)))  # the replay, as Spark runs it after a restart
    for table in IDS:
        path = sink.target_path(table)
        assert _history(spark, path) == [("CREATE TABLE", None), ("MERGE", 3)]
        rows = [tuple(r) for r in spark.read.format("delta").load(path).collect()]
        assert rows == [(5, f"{table.table}-5")]

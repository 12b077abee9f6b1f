"""Targets that keep columns their table lost (``lenient``/``ignore`` after a drop): a row
read again leaves them to the target, unless the key changed in the log earlier in the
batch, which says what they hold. The reduction of a batch to each key's last change, and
a Delta target written with it; each case is written down by hand from that rule. (JDBC:
tests/integration/test_pipeline_schema_changes.py, the try_evolve case.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import MicroBatch, SinkTable
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.reduce import DELETED, REREAD, last_change_per_key

END = 10  #: the batch end's version: rows read again carry it


def test_rows_read_again_leave_kept_columns_to_the_target_or_the_log(spark: Any) -> None:
    from pyspark.sql import functions as F

    rows = [
        # id, a, b (kept: NULL in rows of the new shape), change, version
        (1, 10, None, "update_postimage", END),  # read again only: b stays in the target
        (2, 20, None, "update_postimage", 5),  # after the drop: b NULL
        (2, 21, None, "update_postimage", END),
        (3, 30, "x", "update_preimage", 4),  # before the drop: b = 'y'
        (3, 30, "y", "update_postimage", 4),
        (3, 31, None, "update_postimage", END),
        (4, 40, "z", "delete", 5),  # deleted, inserted again after the drop
        (4, 41, None, "insert", 6),
        (4, 42, None, "update_postimage", END),
        (5, 50, "w", "delete", 5),  # deleted, then (in the log) nothing: read again?
        (5, 51, None, "update_postimage", END),
        (6, 60, None, "update_postimage", 7),  # the log only
        (7, 70, "v", "delete", 8),
    ]
    changes = spark.createDataFrame(
        rows, "id int, a int, b string, _change_type string, _commit_version long"
    )
    reread = F.col("_change_type").isin("update", "update_postimage") & (
        F.col("_commit_version") == F.lit(END)
    )
    reduced = last_change_per_key(changes, ["id"], ["id", "a", "b"], ["b"], reread)
    got = {r["id"]: (r["a"], r["b"], r[DELETED], r[REREAD]) for r in reduced.collect()}
    assert got == {
        1: (10, None, False, True),
        2: (21, None, False, False),
        3: (31, "y", False, False),
        4: (42, None, False, False),
        5: (51, None, False, False),
        6: (60, None, False, False),
        7: (70, "v", True, False),
    }
    plain = last_change_per_key(changes, ["id"], ["id", "a", "b"])
    assert REREAD not in plain.columns
    assert {r["id"]: r["a"] for r in plain.collect()}[3] == 31


def test_a_delta_target_keeps_the_kept_column_of_rows_read_again(
    spark: Any, tmp_path: Path
) -> None:
    table = SinkTable(TableId("db", "t"), _schema(), ("id",))
    sink = DeltaSink(DeltaSinkConfig.from_options({"path": str(tmp_path)}))
    sink.open(spark, [table])
    first = [(i, i, f"v{i}", "insert", 1) for i in (1, 2, 3, 4)]
    sink.write(_batch(spark, 1, first, version=1))
    # b was dropped: rows carry NULL in it
    second = [
        (1, 10, None, "update_postimage", END),  # read again: b stays 'v1'
        (2, 20, None, "update_postimage", 5),  # the log after the drop: b NULL
        (2, 21, None, "update_postimage", END),
        (3, 30, None, "update_postimage", 6),  # the log only: b NULL
        (4, 40, "v4", "delete", 7),
        (5, 50, None, "update_postimage", END),  # a new key read again: b NULL
    ]
    sink.write(_batch(spark, 2, second, version=END, kept=("b",)))
    rows = spark.read.format("delta").load(str(tmp_path / "db" / "t")).collect()
    assert {r[0]: tuple(r) for r in rows} == {
        1: (1, 10, "v1"),
        2: (2, 21, None),
        3: (3, 30, None),
        5: (5, 50, None),
    }


def _schema() -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromDDL("id int, a int, b string")


def _batch(
    spark: Any,
    batch_id: int,
    rows: list[tuple[Any, ...]],
    version: int,
    kept: tuple[str, ...] = (),
) -> MicroBatch:
    frame = spark.createDataFrame(
        [(*r, None) for r in rows],
        "id int, a int, b string, _change_type string, _commit_version long,"
        " _commit_timestamp timestamp",
    )
    table = TableId("db", "t")
    return MicroBatch(
        "p:1",
        batch_id,
        {table: frame},
        '{"log": {}}',
        snapshot_version=version,
        kept_columns={table: kept},
    )

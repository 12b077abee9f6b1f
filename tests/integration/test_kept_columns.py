"""Targets that keep columns their table lost (``lenient``/``ignore`` after a drop): a row
read again leaves them to the target, unless the key changed in the log earlier in the
batch, which says what they hold. The reduction of a batch to each key's last change, and
a Delta target written with it; each case is written down by hand from that rule. (JDBC:
tests/integration/test_pipeline_schema_changes.py, the try_evolve case.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.reduce import DELETED, KEPT_SET, REREAD, last_change_per_key
from sparkcdc.sinks.write_plan import WritePlan, plan_of

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
    reduced = last_change_per_key(changes, ["id"], ["id", "a", "b"], [("b",)], reread)
    got = {r["id"]: (r["a"], r["b"], r[DELETED], r[REREAD]) for r in reduced.collect()}
    assert got == {
        1: (10, None, False, 0),
        2: (21, None, False, None),
        3: (31, "y", False, None),
        4: (42, None, False, None),
        5: (51, None, False, None),
        6: (60, None, False, None),
        7: (70, "v", True, None),
    }
    plain = last_change_per_key(changes, ["id"], ["id", "a", "b"])
    assert REREAD not in plain.columns
    assert {r["id"]: r["a"] for r in plain.collect()}[3] == 31

    # two tables in one target: ids below 100 lost b (kind 0), the others lost a (kind 1)
    kinds = changes.withColumn(KEPT_SET, F.when(F.col("id") < 100, 0).otherwise(1))
    other = spark.createDataFrame(
        [
            (101, None, "p", "update_postimage", END),  # read again: a stays, b written
            (102, None, "q", "update_postimage", 5),  # the log, then read again
            (102, None, "r", "update_postimage", END),
        ],
        changes.schema,
    ).withColumn(KEPT_SET, F.lit(1))
    both = last_change_per_key(
        kinds.unionByName(other), ["id"], ["id", "a", "b"], [("b",), ("a",)], reread
    )
    got = {r["id"]: (r["a"], r["b"], r[DELETED], r[REREAD]) for r in both.collect()}
    assert got[1] == (10, None, False, 0) and got[3] == (31, "y", False, None)
    assert got[101] == (None, "p", False, 1)
    assert got[102] == (None, "r", False, None)  # a from the log (NULL), b as read


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
    sink.write(_batch(spark, 2, second, version=END, kept=(("b",),)))
    rows = spark.read.format("delta").load(str(tmp_path / "db" / "t")).collect()
    assert {r[0]: tuple(r) for r in rows} == {
        1: (1, 10, "v1"),
        2: (2, 21, None),
        3: (3, 30, None),
        5: (5, 50, None),
    }


def test_a_merged_delta_target_keeps_what_each_table_lost(spark: Any, tmp_path: Path) -> None:
    """Two tables in one target (ids below 100 and the rest): the first lost b, which the
    second still has; rows of each read again keep their own table's lost columns only."""
    table = SinkTable(TableId("db", "t"), _schema(), ("id",))
    sink = DeltaSink(DeltaSinkConfig.from_options({"path": str(tmp_path)}))
    sink.open(spark, [table])
    first = [(i, i, f"v{i}", "insert", 1) for i in (1, 2, 101, 102)]
    sink.write(_batch(spark, 1, first, version=1))
    second = [
        (1, 10, None, "update_postimage", END, 0),  # read again: b stays 'v1'
        (2, 20, None, "update_postimage", 5, 0),  # the log after the drop: b NULL
        (101, 110, "w101", "update_postimage", END, 1),  # read again: b is its own
        (102, 120, None, "update_postimage", END, 1),  # read again: b NULL in the table
    ]
    sink.write(_batch(spark, 2, second, version=END, kept=(("b",), ())))
    rows = spark.read.format("delta").load(str(tmp_path / "db" / "t")).collect()
    assert {r[0]: tuple(r) for r in rows} == {
        1: (1, 10, "v1"),
        2: (2, 20, None),
        101: (101, 110, "w101"),
        102: (102, 120, None),
    }


def _schema() -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromDDL("id int, a int, b string")


def _batch(
    spark: Any,
    batch_id: int,
    rows: list[tuple[Any, ...]],
    version: int,
    kept: tuple[tuple[str, ...], ...] = ((),),
) -> WritePlan:
    """``rows``: id, a, b, change, version, and with several ``kept`` sets, the row's."""
    frame = spark.createDataFrame(
        [(*r[:5], None, *r[5:]) for r in rows],
        "id int, a int, b string, _change_type string, _commit_version long,"
        " _commit_timestamp timestamp" + (f", {KEPT_SET} int" if len(kept) > 1 else ""),
    )
    table = TableId("db", "t")
    return plan_of(
        "p:1",
        batch_id,
        {table: frame},
        '{"log": {}}',
        snapshot_version=version,
        kept_columns={table: kept},
    )


def test_spark_folds_absent_values_as_the_arrow_reduction_does(spark: Any) -> None:
    """``_unchanged`` (PostgreSQL's changelog-mode upsert): Spark's reduction
    (sinks/reduce.py) equals the Arrow one (sinks/reduce_arrow.py, checked against a model
    by tests/unit/sinks/test_reduce_arrow.py) on random changes of many keys, some with no
    value of a column in the batch."""
    import random

    import pyarrow as pa

    from sparkcdc.sinks.reduce_arrow import last_change_per_key as arrow_last

    rng = random.Random(64)
    kinds = ("insert", "update_preimage", "update_postimage", "delete")
    rows = []
    versions = rng.sample(range(1000), 300)  # distinct: Spark's max_by breaks no ties
    for version in versions:
        kind = rng.choice(kinds)
        absent = (
            rng.choice([None, ["v"], ["w"], ["v", "w"]]) if kind == "update_postimage" else None
        )
        v = None if absent and "v" in absent else rng.choice([None, "a", "b", "c"])
        w = None if absent and "w" in absent else rng.choice([None, "x", "y"])
        rows.append((rng.randrange(150), v, w, kind, version, absent))
    schema = (
        "k BIGINT, v STRING, w STRING, _change_type STRING, _commit_version BIGINT, "
        "_unchanged ARRAY<STRING>"
    )
    changes = spark.createDataFrame(rows, schema)
    reduced = last_change_per_key(changes, ["k"], ["k", "v", "w"])
    names = ["k", "v", "w", "_change_type", "_commit_version", "_unchanged"]
    table = pa.table(
        {n: pa.array([r[i] for r in rows]) for i, n in enumerate(names[:-1])}
        | {"_unchanged": pa.array([r[5] for r in rows], pa.list_(pa.string()))}
    )
    expected = arrow_last(table, ["k"], ["k", "v", "w"])

    def settled(row: dict[str, Any]) -> tuple[Any, ...]:
        if row[DELETED]:  # a removed key's values are not written
            return (row["k"], row["_commit_version"], True)
        absent = None if row["_unchanged"] is None else tuple(sorted(row["_unchanged"]))
        return (row["k"], row["v"], row["w"], row["_commit_version"], absent)

    got = {settled(r.asDict()) for r in reduced.collect()}
    assert got == {settled(r) for r in expected.to_pylist()}
    assert any(len(s) == 5 and s[4] for s in got)  # some keys keep stored values

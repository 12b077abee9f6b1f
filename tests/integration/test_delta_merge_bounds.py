"""The Delta sink's MERGE bounded by the batch's keys (sinks/delta/pruning.py) writes the
same target as an unbounded one: random batches of inserts, updates and deletes over keys
of every kind the bound covers (and of kinds it leaves out), with and without deletion
vectors, each checked against the expected rows computed here, row by row."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta import spark_merge as delta_sink
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.pruning import COLLECTED_ROWS, LISTED_KEYS, key_bounds
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.write_plan import plan_of

KEY_KINDS: dict[str, tuple[str, Any]] = {
    # name: (Spark type of the first key column, key value of an integer)
    "bigint": ("bigint", lambda i: i - 500),
    "string": ("string", lambda i: f"k'`\u00e9{i:05d}" if i % 7 else f"K{i}"),
    "decimal": ("decimal(12,3)", lambda i: Decimal(i) / 8 - 40),
    "date": ("date", lambda i: date.fromordinal(730_000 + i)),
    "timestamp": ("timestamp", lambda i: datetime(2024, 3, 1) + timedelta(minutes=7 * i)),
}


def _schema(kind: str) -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromDDL(f"k {KEY_KINDS[kind][0]}, n int, v string")


def _batch(spark: Any, schema: Any, changes: list[tuple[Any, int, str, str]], version: int) -> Any:
    """A changelog DataFrame of (key, n, value, change type) rows."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    full = StructType(
        [
            *schema.fields,
            StructField("_change_type", StringType(), False),
            StructField("_commit_version", LongType(), False),
            StructField("_commit_timestamp", TimestampType(), True),
        ]
    )
    rows = [(k, n, v, kind, version * 1000 + i, None) for i, (k, n, v, kind) in enumerate(changes)]
    return spark.createDataFrame(rows, full).cache()


def _random_batch(
    pick: random.Random, kind: str, state: dict[Any, tuple[Any, int, str]], size: int
) -> list[tuple[Any, int, str, str]]:
    """Random changes against ``state`` (applied to it): inserts of new keys, updates and
    deletes of present ones, some keys changed twice in one batch."""
    make = KEY_KINDS[kind][1]
    changes = []
    for _ in range(size):
        present = list(state)
        roll = pick.random()
        if present and roll < 0.35:
            key = pick.choice(present)
            row = (key, state[key][1], state[key][2])
            new = (key, pick.randrange(1000), f"u{pick.randrange(10**6)}")
            changes += [(*row, "update_preimage"), (*new, "update_postimage")]
            state[key] = new
        elif present and roll < 0.5:
            key = pick.choice(present)
            changes.append((*state.pop(key), "delete"))
        else:
            key = make(pick.randrange(5000))
            if key in state:
                continue
            state[key] = (key, pick.randrange(1000), f"i{pick.randrange(10**6)}")
            changes.append((*state[key], "insert"))
    return changes


@pytest.mark.parametrize(
    ("kind", "deletion_vectors"),
    [(kind, False) for kind in KEY_KINDS] + [("bigint", True), ("string", True)],
)
def test_bounded_merges_write_exactly_the_expected_rows(
    spark: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    deletion_vectors: bool,
) -> None:
    rewrite_below = delta_sink.REWRITE_BELOW_BYTES
    table = SinkTable(TableId("db", f"t_{kind}"), _schema(kind), ("k",))
    sink = DeltaSink(
        DeltaSinkConfig.from_options(
            {"path": str(tmp_path), "deletion-vectors": str(deletion_vectors).lower()}
        )
    )
    sink.open(spark, [table])
    pick = random.Random(f"{kind}-{deletion_vectors}")
    state: dict[Any, tuple[Any, int, str]] = {}
    # a first batch too big to collect (an aggregated range), then small ones (listed
    # keys) and bigger ones (a collected range)
    for batch_id, size in enumerate([COLLECTED_ROWS + 200, 5, LISTED_KEYS + 30, 1, 40], start=1):
        # odd batches mark replaced rows where the table has deletion vectors, even ones
        # rewrite the files they touch (this small a target's way), those files' deletion
        # vectors included
        monkeypatch.setattr(delta_sink, "REWRITE_BELOW_BYTES", 0 if batch_id % 2 else rewrite_below)
        changes = _random_batch(pick, kind, state, size)
        frame = _batch(spark, table.schema, changes, batch_id)
        sink.write(
            plan_of(
                pipeline="bounds-test",
                batch_id=batch_id,
                changes={table.source: frame},
                rows={table.source: len(changes)},
            )
        )
        frame.unpersist()
    path = sink.target_path(table.source)
    rows = spark.read.format("delta").load(path).collect()
    got = {row[0]: tuple(row) for row in rows}
    assert len(got) == len(rows), "a key twice in the target"
    assert got == state
    if deletion_vectors:  # both ways ran
        merges = [
            dict(m)
            for (m,) in spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
            .where("operation = 'MERGE'")
            .select("operationMetrics")
            .collect()
        ]
        assert any(int(m.get("numTargetDeletionVectorsAdded", 0)) > 0 for m in merges)
        assert any(
            int(m.get("numTargetDeletionVectorsAdded", 0)) == 0
            and int(m["numTargetFilesRemoved"]) > 0
            for m in merges
        ), merges


def test_the_bound_lists_few_keys_ranges_many_and_leaves_out_what_is_not_exact(
    spark: Any,
) -> None:
    def bound(kind: str, keys: list[Any]) -> str | None:
        schema = _schema(kind)
        frame = spark.createDataFrame([(k, 1, "x") for k in keys], schema)
        column = key_bounds(frame, "k", schema["k"].dataType)
        return None if column is None else str(column)

    few = bound("bigint", [5, -3, 9])
    # listed (rows), and a range each (files: Delta skips by an IN list's least and
    # greatest key, but leg by leg of an OR)
    assert few is not None and "in(t.k" in few and few.count("or(") == 2, few
    # clusters of keys far apart: a range each
    ends = [*range(1, 101), *range(10**7, 10**7 + 100)]
    clustered = bound("bigint", ends)
    assert clustered is not None and clustered.count("or(") == 1, clustered
    summed = bound("bigint", [*range(1, 601), *range(10**7, 10**7 + 600)])  # aggregated
    assert summed is not None and summed.count("or(") == 1, summed
    assert "10000599" in summed and "600" in summed, summed
    dates = bound("date", [date(2020, 1, d) for d in range(1, 31)] * 40 + [date(2026, 1, 1)])
    assert dates is not None and dates.count("or(") == 1, dates
    many = bound("bigint", list(range(LISTED_KEYS + 1)))
    assert many is not None and "'in(" not in many, many
    aggregated = bound("bigint", list(range(COLLECTED_ROWS + 5)))
    assert aggregated is not None and "'in(" not in aggregated, aggregated
    assert bound("bigint", [None, *range(COLLECTED_ROWS + 5)]) is None
    assert bound("string", ["a", "b"]) is not None
    assert bound("decimal", [Decimal("1.5")]) is not None
    assert bound("date", [date(2024, 1, 1)]) is not None
    # a timestamp's Python value is ambiguous in a daylight-saving fall-back hour
    assert bound("timestamp", [datetime(2024, 1, 1)]) is None
    # <=> matches NULL keys, which a range or list would leave out
    assert bound("bigint", [1, None]) is None


def test_a_batch_at_both_ends_of_the_table_reads_only_the_files_there(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deletes of the oldest rows, updates of recent ones and inserts of new keys: the
    MERGE skips the files in between (one range would span them all)."""
    # marked, not rewritten: the files stay as laid out here
    monkeypatch.setattr(delta_sink, "REWRITE_BELOW_BYTES", 0)
    table = SinkTable(TableId("db", "ends"), _schema("bigint"), ("k",))
    sink = DeltaSink(DeltaSinkConfig.from_options({"path": str(tmp_path)}))
    sink.open(spark, [table])
    path = sink.target_path(table.source)
    for part in range(8):  # eight files of 1,000 ascending keys each
        rows = spark.range(part * 1000, (part + 1) * 1000).selectExpr(
            "id AS k", "CAST(id % 7 AS INT) AS n", "CAST(id AS STRING) AS v"
        )
        rows.coalesce(1).write.format("delta").mode("append").save(path)
    changes = [(k, k % 7, str(k), "delete") for k in range(100)]
    for k in range(7_900, 8_000):
        changes += [(k, k % 7, str(k), "update_preimage"), (k, 0, "new", "update_postimage")]
    changes += [(k, 1, "ins", "insert") for k in range(8_000, 8_100)]
    frame = _batch(spark, table.schema, changes, 1)
    sink.write(
        plan_of(
            pipeline="bounds-test",
            batch_id=1,
            changes={table.source: frame},
            rows={table.source: len(changes)},
        )
    )
    got = dict(spark.read.format("delta").load(path).select("k", "v").collect())
    assert len(got) == 8_000 and got[7_950] == "new" and got[8_050] == "ins" and 5 not in got
    # the files Delta's skipping leaves for the bound (as the MERGE's search for the files
    # to touch does): the first, and the last two (the MERGE wrote the ninth)
    bound = key_bounds(frame, "k", table.schema["k"].dataType)
    assert bound is not None and str(bound).count("or(") == 1, bound
    assert _files_read(spark.read.format("delta").load(path).alias("t").where(bound)) == 3


def _files_read(frame: Any) -> int:
    """How many files ``frame``'s one file scan read, once collected."""
    frame.collect()
    leaves = frame._jdf.queryExecution().executedPlan().collectLeaves()
    scans = [leaves.apply(i) for i in range(leaves.size())]
    (files,) = [s.metrics().get("numFiles").get().value() for s in scans]
    return int(files)

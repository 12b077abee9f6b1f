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
from sparkcdc.sinks.base import MicroBatch, SinkTable
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.pruning import COLLECTED_ROWS, LISTED_KEYS, key_bounds
from sparkcdc.sinks.delta.sink import DeltaSink

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
    spark: Any, tmp_path: Path, kind: str, deletion_vectors: bool
) -> None:
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
        changes = _random_batch(pick, kind, state, size)
        frame = _batch(spark, table.schema, changes, batch_id)
        sink.write(
            MicroBatch(
                pipeline="bounds-test",
                batch_id=batch_id,
                changes={table.source: frame},
                row_counts={table.source: len(changes)},
            )
        )
        frame.unpersist()
    rows = spark.read.format("delta").load(sink.target_path(table.source)).collect()
    got = {row[0]: tuple(row) for row in rows}
    assert len(got) == len(rows), "a key twice in the target"
    assert got == state


def test_the_bound_lists_few_keys_ranges_many_and_leaves_out_what_is_not_exact(
    spark: Any,
) -> None:
    def bound(kind: str, keys: list[Any]) -> str | None:
        schema = _schema(kind)
        frame = spark.createDataFrame([(k, 1, "x") for k in keys], schema)
        column = key_bounds(frame, "k", schema["k"].dataType)
        return None if column is None else str(column)

    few = bound("bigint", [5, -3, 9])
    assert few is not None and "'in(t.k" in few, few
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

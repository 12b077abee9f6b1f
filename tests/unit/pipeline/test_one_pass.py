"""Which batches are one table's chunks and nothing else, from the offsets alone."""

from __future__ import annotations

import json
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.pipeline import one_pass
from sparkcdc.snapshot.offset import SourceOffset

LOG = {"file": "binlog.000002", "pos": 2910236, "gtid": "0-1001-45688"}
SCHEMA = {"table": {"table": "app.a"}, "change": "ALTER TABLE a ADD COLUMN c INT"}


def chunks_of_one_table(
    previous: str | None, offset: str, from_scratch: bool = False
) -> TableId | None:
    start = None if previous is None else SourceOffset.parse(previous)
    return one_pass.chunks_of_one_table(start, SourceOffset.parse(offset), from_scratch)


def offset(tables: dict[str, Any], log: dict[str, Any] | None = None, **top: Any) -> str:
    return json.dumps({"log": log or LOG, "tables": tables, **top})


def cursor(key: int, **more: Any) -> dict[str, Any]:
    return {"cursor": {"int": str(key)}, **more}


def test_one_tables_cursor_moving_alone_is_a_batch_of_its_chunks() -> None:
    before = offset({"app.a": cursor(100), "app.b": {"started": False}})
    assert chunks_of_one_table(
        before, offset({"app.a": cursor(200), "app.b": {"started": False}})
    ) == TableId("app", "a")
    # its first chunk, its last chunk, a table whose columns changed long before
    assert chunks_of_one_table(
        offset({"app.a": {"started": False}}), offset({"app.a": cursor(5)})
    ) == TableId("app", "a")
    assert chunks_of_one_table(
        offset({"app.a": cursor(5)}), offset({"app.a": {"done": True}})
    ) == TableId("app", "a")
    assert chunks_of_one_table(
        offset({"app.a": cursor(5, schema=SCHEMA)}), offset({"app.a": cursor(9, schema=SCHEMA)})
    ) == TableId("app", "a")


def test_a_done_tables_span_of_chunks_going_away_reads_none_of_its_rows() -> None:
    span = {"from": None, "to": None}
    before = offset({"app.a": cursor(100), "app.b": {"done": True, "chunks": span}})
    after = offset({"app.a": cursor(200), "app.b": {"done": True}})
    assert chunks_of_one_table(before, after) == TableId("app", "a")


def test_anything_else_in_the_batch_keeps_the_cache() -> None:
    a = {"app.a": cursor(100), "app.b": cursor(7)}
    assert chunks_of_one_table(None, offset(a)) is None  # the first batch, start unknown
    assert chunks_of_one_table(offset(a), offset(a)) is None  # nothing moved
    # the log moved while keys were emitted: changes of keys below the cursors
    assert (
        chunks_of_one_table(offset(a), offset({**a, "app.a": cursor(200)}, {**LOG, "pos": 3000000}))
        is None
    )
    # two tables' chunks: each target's write would read the source again
    assert (
        chunks_of_one_table(offset(a), offset({"app.a": cursor(200), "app.b": cursor(9)})) is None
    )
    # a re-read (on demand, or after a schema change) emits updates, not snapshot inserts
    again = {"signal": "fix", "cursor": {"int": "3"}}
    assert (
        chunks_of_one_table(offset(a), offset({**a, "app.b": {"done": True, "again": again}}))
        is None
    )
    assert (
        chunks_of_one_table(
            offset({**a, "app.a": cursor(100, again=again)}),
            offset({**a, "app.a": cursor(200, again=again)}),
        )
        is None
    )
    # the table's columns changed in the batch; a table created while running; a pause
    assert (
        chunks_of_one_table(offset(a), offset({**a, "app.a": cursor(200, schema=SCHEMA)})) is None
    )
    assert chunks_of_one_table(offset(a), offset({**a, "app.c": {"started": False}})) is None
    assert chunks_of_one_table(offset(a), offset({**a, "app.a": cursor(200)}, paused=True)) is None
    # a done table whose entry changes (a drop or truncate mark) is no snapshot
    done = {"app.a": {"done": True}}
    mark = {"done": True, "schema": {"truncated": {"file": "b", "pos": 4}}}
    assert chunks_of_one_table(offset(done), offset({"app.a": mark})) is None


def test_a_log_range_holds_no_change_while_no_key_was_emitted() -> None:
    fresh = {"app.a": {"started": False}, "app.b": {"started": False}}
    moved = {**LOG, "pos": 3000000}
    # the first batch of a snapshot from scratch: every table started not started
    first = offset({"app.a": cursor(100), "app.b": {"started": False}}, moved)
    assert chunks_of_one_table(None, first, from_scratch=True) == TableId("app", "a")
    assert chunks_of_one_table(None, first, from_scratch=False) is None
    both = offset({"app.a": {"done": True}, "app.b": cursor(3)}, moved)
    assert chunks_of_one_table(None, both, from_scratch=True) is None
    # the initial offset holds each table's columns (MySQL): the first batch may too
    columns = {"table": {"table": "app.a"}}
    first_columns = offset({"app.a": cursor(100, schema=columns), "app.b": {"started": False}})
    assert chunks_of_one_table(None, first_columns, from_scratch=True) == TableId("app", "a")
    # a DROP in the first batch marks its table done: no snapshot rows of it
    dropped = {"done": True, "schema": {**columns, "table_dropped": {"file": "b", "pos": 9}}}
    assert chunks_of_one_table(None, offset({**fresh, "app.b": dropped}), True) is None
    changed = {"started": False, "schema": SCHEMA}  # a column change in the first batch
    assert chunks_of_one_table(None, offset({"app.a": cursor(9), "app.b": changed}), True) is None
    again = {"done": True, "again": {"signal": "s"}}
    assert chunks_of_one_table(None, offset({**fresh, "app.a": again}), True) is None
    # a later batch: nothing emitted at its start, so the log moving adds no change
    assert chunks_of_one_table(offset(fresh), first) == TableId("app", "a")
    assert chunks_of_one_table(offset(fresh), offset(fresh, moved)) is None  # no chunk
    assert (
        chunks_of_one_table(
            offset(fresh), offset({**fresh, "app.a": cursor(5)}, moved, paused=True)
        )
        is None
    )

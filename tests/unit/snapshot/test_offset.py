"""The offset's one reader (snapshot/offset.py): its JSON decoded and written back unchanged,
and the table events a batch carries, told from its end offset and the previous batch's."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import (
    AlterColumnsEvent,
    ColumnMoves,
    CreateTableEvent,
    DropTableEvent,
    LostLogEvent,
    TableEvent,
    TruncateTableEvent,
)
from sparkcdc.snapshot.offset import LogAt, LogJson, SourceOffset

T, U = TableId("app", "t"), TableId("app", "u")
LOG = {"file": "b.000001", "pos": 4}


def offset(**tables: dict[str, Any] | None) -> str:
    """An offset whose tables are done, each with the ``schema`` entry given (None: none)."""
    return json.dumps(
        {
            "log": LOG,
            "tables": {
                f"app.{name}": ({"done": True} | ({"schema": s} if s is not None else {}))
                for name, s in tables.items()
            },
        }
    )


def columns(*names: str) -> dict[str, Any]:
    return {"table": "app.t", "columns": [[n] for n in names]}


def truncated_at(pos: int, statement: str = "TRUNCATE t") -> dict[str, Any]:
    return {"table": columns("a"), "change": statement, "truncated": {**LOG, "pos": pos}}


def dropped_at(pos: int, statement: str = "DROP TABLE t") -> dict[str, Any]:
    return {"table": columns("a"), "change": statement, "table_dropped": {**LOG, "pos": pos}}


def lost(signal: str) -> dict[str, Any]:
    return {"table": columns("a"), "change": f"lost ({signal})", "log_lost": {"signal": signal}}


def events(previous: str | None, now: str, known: Any = (T, U)) -> list[TableEvent]:
    before = None if previous is None else SourceOffset.parse(previous)
    return SourceOffset.parse(now).table_events(before, known)


def marked(previous: str | None, now: str, kind: type[TableEvent]) -> dict[TableId, str]:
    return {e.table: e.statement for e in events(previous, now) if type(e) is kind}


def test_an_offset_reads_back_to_its_own_json() -> None:
    text = json.dumps(
        {
            "log": {"file": "binlog.000003", "pos": 1234, "gtid": "0-1-55"},
            "tables": {
                "shop.orders": {"cursor": {"int": "80960"}, "chunks": {"from": None, "to": None}},
                "shop.a\\.b": {"started": False, "schema": truncated_at(9)},
                "shop.done": {
                    "done": True,
                    "again": {"signal": "s", "from": {"int": "3"}, "cursor": {"int": "5"}},
                },
            },
            "bounded": False,
            "signals": {"file": 12},
            "paused": True,
            "origin": "0-1",
        }
    )
    parsed = SourceOffset.parse(text)
    assert parsed.to_json() == json.loads(text)
    assert parsed.log == LogJson({"file": "binlog.000003", "pos": 1234, "gtid": "0-1-55"})
    assert parsed.origin == "0-1"
    at = parsed.log_at()
    assert at == LogAt(parsed.log.to_json(), "0-1")
    assert LogAt.of(json.loads(text)) == at and LogAt.of(at) is at
    assert LogAt.of({"log": {"n": 1}}) == LogAt({"n": 1}, None)
    assert parsed.only({TableId("shop", "a.b")}).to_json()["tables"] == {
        "shop.a\\.b": {"started": False, "schema": truncated_at(9)}
    }
    schema = parsed.schema_of(TableId("shop", "a.b"))
    assert schema is not None and schema.truncated == {**LOG, "pos": 9} and schema.marked
    assert parsed.schema_of(TableId("shop", "orders")) is None


def test_a_truncate_is_new_in_the_batch_whose_end_first_records_it() -> None:
    assert marked(None, offset(t=None, u=None), TruncateTableEvent) == {}
    assert marked(None, offset(t=truncated_at(10)), TruncateTableEvent) == {T: "TRUNCATE t"}
    before = offset(t=truncated_at(10), u=None)
    assert marked(before, before, TruncateTableEvent) == {}  # kept later: not new again
    after = offset(t=truncated_at(20), u=truncated_at(30, "x"))
    assert marked(before, after, TruncateTableEvent) == {T: "TRUNCATE t", U: "x"}
    # a later column change replaces the entry: no truncate
    altered = {"table": columns("a", "c"), "change": "ALTER TABLE t ADD c INT"}
    assert marked(before, offset(t=altered), TruncateTableEvent) == {}


@given(st.lists(st.one_of(st.none(), st.integers(0, 5)), min_size=1, max_size=12))
def test_each_truncate_is_found_in_exactly_one_batch(history: list[int | None]) -> None:
    """A table's entry over consecutive batches: None (no schema entry, or a column
    change) or the position of its last truncate, which only grows. Each distinct
    truncate is new in exactly one batch: the first whose end records it."""
    positions: list[int | None] = []
    last = 0
    for step in history:
        if step is None:
            positions.append(None)
        else:
            last += step  # 0: the same truncate as before (no newer one)
            positions.append(last if last else None)
    offsets = [offset(t=truncated_at(p) if p is not None else None) for p in positions]
    found = [
        bool(marked(offsets[i - 1] if i else None, o, TruncateTableEvent))
        for i, o in enumerate(offsets)
    ]
    expected = [
        p is not None and (i == 0 or positions[i - 1] != p) for i, p in enumerate(positions)
    ]
    assert found == expected


def test_a_drop_is_new_in_the_batch_whose_end_first_marks_it() -> None:
    assert marked(None, offset(t=None, u=None), DropTableEvent) == {}
    assert marked(None, offset(t=dropped_at(10)), DropTableEvent) == {T: "DROP TABLE t"}
    before = offset(t=dropped_at(10), u=None)
    assert marked(before, before, DropTableEvent) == {}  # a replay of the batch after it
    assert marked(before, offset(u=None), DropTableEvent) == {}  # forgotten by the next batch
    both = offset(t=dropped_at(20, "DROP TABLE t, u"), u=dropped_at(20, "DROP TABLE t, u"))
    assert marked(offset(t=None, u=None), both, DropTableEvent) == {
        T: "DROP TABLE t, u",
        U: "DROP TABLE t, u",
    }


def test_a_recovery_is_new_in_the_batch_whose_end_first_marks_it() -> None:
    before = offset(t=None, u=None)
    assert marked(before, offset(t=lost("s1"), u=None), LostLogEvent) == {T: "lost (s1)"}
    both = offset(t=lost("s1"), u=lost("s1"))
    assert marked(both, both, LostLogEvent) == {}  # kept in later offsets: not new again
    assert marked(both, offset(t=lost("s2"), u=lost("s1")), LostLogEvent) == {T: "lost (s2)"}


def test_tables_the_consumer_does_not_know_are_created_with_their_columns() -> None:
    now = offset(t={"table": columns("a")}, u=None)
    found = events(None, now, known={T})
    assert found[0] == CreateTableEvent(U, "", {})  # no columns: the consumer refuses it
    assert found[1:] == [AlterColumnsEvent(T, "", columns("a"))]
    assert events(None, now, known={U}) == [CreateTableEvent(T, "", columns("a"))]


def test_column_states_are_those_whose_entry_changed_since_the_previous_offset() -> None:
    start = {"table": columns("a")}
    renamed: dict[str, Any] = {
        "table": columns("b"),
        "change": "ALTER TABLE t RENAME a TO b",
        "renamed": {"a": "b"},
    }
    assert events(offset(t=start), offset(t=start)) == []
    assert events(offset(t=start), offset(t=renamed)) == [
        AlterColumnsEvent(T, renamed["change"], columns("b"), ColumnMoves({"a": "b"}))
    ]
    # the first batch (or an unknown start): every column state, for the consumer to compare
    assert events(None, offset(t=start)) == [AlterColumnsEvent(T, "", columns("a"))]
    # events come in the order a consumer applies them: columns first, then the marks
    order = events(offset(t=start, u=None), offset(t=truncated_at(3), u=dropped_at(3)))
    kinds = [AlterColumnsEvent, AlterColumnsEvent, TruncateTableEvent, DropTableEvent]
    assert [type(e) for e in order] == kinds

"""Which truncates are new in a batch (from its end offset and the previous batch's), and
what each ``schema.change.behavior`` does with one (pipeline/truncates.py). No Spark: the
sinks' own truncates run in tests/integration/test_pipeline_random_ddl.py."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.targets import Target, TargetSource
from sparkcdc.pipeline.truncates import follow_truncates, new_truncates
from sparkcdc.sinks.base import MicroBatch, Sink, SinkTable

T, U = TableId("app", "t"), TableId("app", "u")


def offset(**tables: dict[str, Any] | None) -> str:
    return json.dumps(
        {
            "log": {"file": "b.000001", "pos": 4},
            "tables": {
                f"app.{name}": ({"done": True} | ({"schema": s} if s is not None else {}))
                for name, s in tables.items()
            },
        }
    )


def truncated_at(pos: int, statement: str = "TRUNCATE t") -> dict[str, Any]:
    return {"table": {}, "change": statement, "truncated": {"file": "b.000001", "pos": pos}}


def test_a_truncate_is_new_in_the_batch_whose_end_first_records_it() -> None:
    assert new_truncates(None, offset(t=None, u=None)) == {}
    assert new_truncates(None, offset(t=truncated_at(10))) == {T: "TRUNCATE t"}
    before = offset(t=truncated_at(10), u=None)
    assert new_truncates(before, before) == {}  # kept in later offsets: not new again
    assert new_truncates(before, offset(t=truncated_at(20), u=truncated_at(30, "x"))) == {
        T: "TRUNCATE t",
        U: "x",
    }
    # a later column change replaces the entry: no truncate
    altered = {"table": {}, "change": "ALTER TABLE t ADD c INT"}
    assert new_truncates(before, offset(t=altered)) == {}


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
    found = [bool(new_truncates(offsets[i - 1] if i else None, o)) for i, o in enumerate(offsets)]
    expected = [
        p is not None and (i == 0 or positions[i - 1] != p) for i, p in enumerate(positions)
    ]
    assert found == expected


class EmptyingSink(Sink):
    """A sink that records which targets it emptied, or refuses like Kafka."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.emptied: list[TableId] = []

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        del spark, tables

    def write(self, batch: MicroBatch) -> None:
        del batch

    def snapshot(self, spark: Any, table: SinkTable) -> Any:
        raise NotImplementedError

    def truncate(self, spark: Any, table: SinkTable, batch: MicroBatch) -> None:
        if self.refuse:
            super().truncate(spark, table, batch)
        self.emptied.append(table.source)


def target(*tables: TableId) -> Target:
    sources = tuple(
        TargetSource(SinkTable(t, None, ("id",)), None, None, None, ("id",)) for t in tables
    )
    return Target(SinkTable(tables[0], None, ("id",)), sources)


def follow(behavior: str, targets: list[Target], sink: Sink, **kwargs: Any) -> list[TableId]:
    applied: list[TableId] = []
    batch: Any = None  # passed through to the sink only
    follow_truncates(
        None, {T: "TRUNCATE t"}, targets, sink, batch, behavior, applied.append, **kwargs
    )
    return applied


def test_evolve_empties_the_target_other_behaviours_leave_it_exception_stops() -> None:
    for behavior in ("evolve", "try_evolve"):
        sink = EmptyingSink()
        assert follow(behavior, [target(T), target(U)], sink) == [T]
        assert sink.emptied == [T]
    for behavior in ("lenient", "ignore"):
        sink = EmptyingSink()
        assert follow(behavior, [target(T)], sink) == [] and sink.emptied == []
    with pytest.raises(SchemaError, match=r"TRUNCATE of app\.t \(TRUNCATE t\).*exception"):
        follow("exception", [target(T)], EmptyingSink())
    excluded = frozenset({"truncate.table"})
    for behavior in ("exception", "evolve"):
        sink = EmptyingSink()
        assert follow(behavior, [target(T)], sink, excluded=excluded) == []
        assert sink.emptied == []


def test_a_target_that_cannot_be_emptied_stops_evolve_and_is_left_by_try_evolve() -> None:
    for targets, sink, reason in (
        ([target(T)], EmptyingSink(refuse=True), "cannot empty its targets"),
        ([target(U, T)], EmptyingSink(), r"also holds the rows of app\.u"),  # a route
    ):
        with pytest.raises(SchemaError, match=f"could not apply it .*{reason}.*'try_evolve'"):
            follow("evolve", targets, sink)
        assert follow("try_evolve", targets, sink) == []
        assert isinstance(sink, EmptyingSink) and sink.emptied == []

"""A batch's per-table DataFrames are made only for the tables a sink asks for."""

from __future__ import annotations

import pytest

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.lazy_tables import LazyTables

TABLES = [TableId("db", f"t{i}") for i in range(1000)]


def test_only_the_tables_asked_for_are_made_once_each() -> None:
    calls: list[TableId] = []

    def make(table: TableId) -> str:
        calls.append(table)
        return f"frame of {table}"

    lazy = LazyTables(TABLES, make)
    assert list(lazy) == TABLES and len(lazy) == 1000 and TABLES[7] in lazy
    assert calls == []  # iterating, sizing and membership make nothing
    changed = [t for t in lazy if t.table in ("t3", "t999")]
    assert [lazy[t] for t in changed] == ["frame of db.t3", "frame of db.t999"]
    assert lazy[TABLES[3]] == "frame of db.t3"
    assert calls == changed and lazy.made == frozenset(changed)
    with pytest.raises(KeyError):
        lazy[TableId("db", "other")]
    assert lazy.get(TableId("db", "other")) is None

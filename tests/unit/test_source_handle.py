"""The read-only source handle (snapshot/handle.py) the pipeline, the command line and
verify ask, over the in-memory fake database: questions only, and what a dialect
without an ability answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from sparkcdc.core.rows import RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.handle import SourceHandle
from tests.support.fake_dialect import Count, FakeDatabase, FakeTable, PlainDatabase

A = TableId("db", "a")
ROWS = {k: (k, 0) for k in range(10)}
LOG = [RowChange(A, None, (100 + i, 1), 0, 0) for i in range(5)]


class Counting(FakeDatabase):
    """Counts discoveries and inspections (a real one validates the server each time)."""

    found = 0

    def discover(self) -> list[FakeTable]:
        self.found += 1
        return super().discover()


def offset(n: int, origin: str | None = None) -> Mapping[str, Any]:
    data: dict[str, Any] = {"log": {"n": n}, "tables": {}}
    if origin is not None:
        data["origin"] = origin
    return data


def test_tables_and_columns_are_what_the_source_emits() -> None:
    handle = SourceHandle(FakeDatabase(LOG, {A: ROWS}, now=5))
    (table,) = handle.discover()
    assert table.table_id == A and table.primary_key == ("k",)
    assert [f.name for f in table.fields] == ["k", "v"] and table.fields[0].type == pa.int64()
    assert handle.columns({"table": "db.a"}) == table  # from an offset's schema entry


def test_row_estimates_use_the_last_discovery_and_inspect_only_once() -> None:
    db = Counting(LOG, {A: ROWS}, now=5)
    handle = SourceHandle(db)
    assert handle.estimated_rows([A, TableId("db", "gone")]) == {A: 15, TableId("db", "gone"): None}
    assert handle.estimated_rows([A]) == {A: 15} and db.found == 1
    handle.discover()
    handle.estimated_rows([A])
    assert db.found == 2


def test_positions_lag_and_a_lost_log() -> None:
    db = FakeDatabase(LOG, {A: ROWS}, now=5, purged=2, origin="s1")
    handle = SourceHandle(db)
    assert handle.stored_position(offset(3)) == Count(3)
    assert handle.position(offset(3, "s1")) == Count(3) and handle.head() == Count(5)
    assert handle.lost(offset(3)) is None
    lost = handle.lost(offset(1))
    assert lost is not None and "purged" in str(lost)


def test_a_dialect_without_abilities_answers_unknown_not_wrong() -> None:
    handle = SourceHandle(PlainDatabase(LOG, {A: ROWS}, now=5, purged=2))
    assert handle.bytes_behind(Count(1), Count(5)) is None
    assert handle.bytes_behind(Count(5), Count(5)) == 0
    assert handle.first_change_time(Count(1)) is None and not handle.tells_change_times
    assert handle.lost(offset(1)) is None  # it cannot tell: reads fail instead

"""The batch planner's steps alone (snapshot/planner.py and the steps it calls: signals,
a lost log, the log range, schema changes, chunks), over the in-memory fake database;
the protocol tests drive the same pieces through whole streams."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import PositionLostError, SchemaError
from sparkcdc.core.rows import RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import PendingColumns
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.chunk_plans import ChunkPlans
from sparkcdc.snapshot.lost_log import LostLog
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.planner import BatchPlanner
from sparkcdc.snapshot.progress import ChunkSpan, TableProgress
from sparkcdc.snapshot.signalling import Signals
from tests.support.fake_dialect import (
    Count,
    FakeDatabase,
    FakeSettings,
    FakeTable,
    PlainDatabase,
)

A, B = TableId("db", "a"), TableId("db", "b")
ROWS = {k: (k, 0) for k in range(40)}  # 10 chunks of 4


def insert(table: TableId, key: int) -> RowChange:
    return RowChange(table, None, (key, 1), 0, 0)


ALTER = RowChange(A, None, None, 0, 0)


def pieces(db: PlainDatabase) -> tuple[BatchPlanner[Count, FakeTable], Signals[Count, FakeTable]]:
    catalog = TableCatalog(db)
    chunks = ChunkPlans(catalog)
    signals = Signals(catalog, chunks.refresh)
    return BatchPlanner(
        catalog, chunks, signals, LostLog(catalog, signals, chunks.refresh)
    ), signals


def start(*tables: tuple[TableId, TableProgress], at: int = 0) -> dict[str, Any]:
    entries = {t: p for t, p in tables}
    return SourceOffset(Count(at), entries).to_json()


SNAPSHOT = TableProgress()
DONE = TableProgress.finished()


def test_while_a_snapshot_runs_the_log_gets_half_the_read_limit() -> None:
    db = PlainDatabase([insert(A, 100 + i) for i in range(8)], {A: ROWS}, now=8)
    planner, _ = pieces(db)
    running = planner.plan(start((A, SNAPSHOT)), 4, None)
    assert running.log == Count(2)  # half of 4 rows for the log
    chunks = running.tables[A].chunks  # the other half: one chunk
    assert chunks == ChunkSpan(None, running.tables[A].cursor) and not running.tables[A].done
    done = planner.plan(start((A, DONE)), 4, None)
    assert done.log == Count(4) and done.tables[A].done


def test_the_available_now_cap_holds_once_no_snapshot_runs() -> None:
    db = PlainDatabase([insert(A, 100 + i) for i in range(8)], {A: ROWS}, now=8)
    planner, _ = pieces(db)
    assert planner.plan(start((A, SNAPSHOT)), None, Count(3)).log == Count(8)
    assert planner.plan(start((A, DONE)), None, Count(3)).log == Count(3)
    assert planner.head == Count(8)


def test_a_schema_change_ends_the_batch_before_it_and_is_a_batch_of_its_own() -> None:
    log = [insert(A, 100), insert(A, 101), ALTER, insert(A, 102)]
    db = FakeDatabase(log, {A: ROWS}, now=4)
    planner, _ = pieces(db)
    shaped = TableProgress(schema={"table": {"table": "db.a"}})
    before = planner.plan(start((A, shaped)), None, None)
    assert before.log == Count(2)  # ends at the ALTER's transaction
    assert not before.tables[A].started  # no chunk of the changed table before it
    change = planner.plan(SourceOffset(before.log, before.tables).to_json(), None, None)
    schema = change.tables[A].schema
    assert change.log == Count(3) and schema is not None and schema["change"] == "ALTER"
    after = planner.plan(SourceOffset(change.log, change.tables).to_json(), None, None)
    assert after.log == Count(4) and after.tables[A].started  # chunks again


def test_a_dialect_without_abilities_plans_through_the_log_without_schema_entries() -> None:
    db = PlainDatabase([insert(A, 100), ALTER, insert(A, 101)], {A: ROWS}, now=3)
    planner, _ = pieces(db)
    planned = planner.plan(start((A, SNAPSHOT)), None, None)
    assert planned.log == Count(3) and planned.tables[A].schema is None


def test_a_table_created_in_the_range_is_discovered_and_snapshotted_from_the_start() -> None:
    settings = FakeSettings(newly_added_tables=True, envelope=True)
    db = FakeDatabase([insert(A, 100), insert(B, 1), insert(B, 2)], {A: ROWS, B: {}}, settings)
    db.created = {B: 2}
    planner, _ = pieces(db)
    first = planner.catalog.parse(start((A, DONE)))  # B not there yet
    assert set(first.tables) == {A}
    db.now = 3
    planned = planner.plan(SourceOffset(first.log, first.tables).to_json(), None, None)
    assert set(planned.tables) == {A, B} and planned.log == Count(3)
    assert planned.tables[B].done  # its (empty) snapshot read in this batch


class Pending(FakeDatabase, PendingColumns[FakeTable]):
    """Table A's columns changed where the log does not show it yet."""

    def columns_pending(self, tables: Mapping[TableId, FakeTable]) -> set[TableId]:
        return {A} & set(tables)


def test_tables_whose_columns_are_pending_read_no_chunk_and_keep_their_span() -> None:
    db = Pending([], {A: ROWS, B: ROWS})
    planner, _ = pieces(db)
    span = ChunkSpan(0, 4)
    waiting = TableProgress(started=True, cursor=4, chunks=span)
    planned = planner.plan(start((A, waiting), (B, SNAPSHOT)), 8, None)
    assert planned.tables[A] == waiting  # no chunks; the span stays for the change
    assert planned.tables[B].cursor == 8


def test_a_restart_from_a_lost_log_stops_with_the_way_out() -> None:
    db = FakeDatabase([insert(A, 100), insert(A, 101)], {A: ROWS}, now=2, purged=1)
    planner, _ = pieces(db)
    with pytest.raises(PositionLostError, match="purged"):
        planner.plan(start((A, DONE)), None, None)
    assert planner.plan(start((A, DONE), at=1), None, None).log == Count(2)


def test_signals_are_consumed_by_the_offset_that_moves_past_them(tmp_path: Path) -> None:
    signals_file = tmp_path / "signals"
    signal = {"id": "s1", "type": "execute-snapshot", "data": {"data-collections": ["db.a"]}}
    signals_file.write_text(json.dumps(signal) + "\n")
    settings = FakeSettings(signal_file=str(signals_file))
    planner, signals = pieces(FakeDatabase([], {A: ROWS}, settings))
    offset = planner.catalog.parse(start((A, DONE)))
    applied, recovery = signals.apply(offset)
    assert recovery is None and applied.tables[A].again is not None
    assert applied.signals  # the channel's position read up to
    again, _ = signals.apply(applied)  # from the moved offset: nothing new
    assert again.tables == applied.tables
    replayed, _ = signals.apply(offset)  # from the old one (a replay): the same again
    assert replayed.tables[A].again == applied.tables[A].again


class KeylessDatabase(FakeDatabase):
    """The fake database whose tables have no primary key (their rows a multiset)."""

    def discover(self) -> list[FakeTable]:
        return [dataclasses.replace(t, primary_key=(), key_indexes=()) for t in super().discover()]

    def table_from_json(self, data: Mapping[str, Any]) -> FakeTable:
        return dataclasses.replace(super().table_from_json(data), primary_key=(), key_indexes=())


def test_a_keyless_table_is_never_read_again_after_a_column_change() -> None:
    """Chunks read across a column change are read again as upserts: for a keyless table
    each would be one more copy of its row, so the change fails the stream instead."""
    log = [insert(A, 100), insert(A, 101), ALTER, insert(A, 102)]
    keyed, keyless = FakeDatabase(log, {A: ROWS}, now=2), KeylessDatabase(log, {A: ROWS}, now=2)
    for db in (keyed, keyless):
        planner, _ = pieces(db)
        first = planner.plan(start((A, SNAPSHOT)), 8, None)
        assert first.tables[A].chunks is not None  # chunks read in the batch before it
        db.now = 4
        follow = SourceOffset(first.log, first.tables).to_json()
        if db is keyed:
            change = planner.plan(follow, 8, None)
            assert change.tables[A].again is not None  # the keyed chunks read again
        else:
            with pytest.raises(SchemaError, match=r"no primary key.*copies of its rows"):
                planner.plan(follow, 8, None)


def test_a_signal_to_read_a_keyless_table_again_is_skipped_saying_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    signals_file = tmp_path / "signals"
    signal = {"id": "s1", "type": "execute-snapshot", "data": {"data-collections": ["db.a"]}}
    signals_file.write_text(json.dumps(signal) + "\n")
    settings = FakeSettings(signal_file=str(signals_file))
    planner, signals = pieces(KeylessDatabase([], {A: ROWS}, settings))
    offset = planner.catalog.parse(start((A, DONE)))
    applied, _ = signals.apply(offset)
    assert applied.tables[A].again is None
    assert "db.a has no primary key" in caplog.text and "new checkpoint" in caplog.text

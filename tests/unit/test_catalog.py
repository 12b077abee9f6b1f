"""The table catalog alone (snapshot/catalog.py): discovery, the checkpoint's table set
reconciled with the tables matched now, tables created and dropped while the stream runs,
and tables' columns as offsets hold them; over the in-memory fake database."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

import pytest

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.rows import RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import FollowsTableDrops
from sparkcdc.snapshot.catalog import START_ATTEMPTS, TableCatalog
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.options import table_patterns
from sparkcdc.snapshot.progress import TABLE_DROPPED, TableProgress
from tests.support.fake_dialect import (
    Count,
    FakeDatabase,
    FakeSettings,
    FakeTable,
    PlainDatabase,
)

A, B, C = TableId("db", "a"), TableId("db", "b"), TableId("db", "c")
ROWS = {A: {1: (1, 10)}, B: {1: (1, 20)}, C: {1: (1, 30)}}


def catalog(db: PlainDatabase) -> TableCatalog[Count, FakeTable]:
    return TableCatalog(db)


def offset_of(*tables: TableId, at: int = 0) -> dict[str, object]:
    entries = {t: TableProgress(started=True, cursor=1) for t in tables}
    return SourceOffset(Count(at), entries).to_json()


def test_discovery_runs_once_and_decides_the_schema_once() -> None:
    db = FakeDatabase([], {A: ROWS[A]})
    tables = catalog(db)
    assert list(tables.tables) == [A] and not tables.envelope
    db.initial = ROWS  # more tables later: the stream's schema stays one table's
    assert list(tables.tables) == [A] and not tables.envelope


@pytest.mark.parametrize(
    ("tables", "watch", "envelope"),
    [
        ("db.a", True, False),  # a literal name: no created table can match it
        ("db.[a-z]", True, True),  # a pattern watched for created tables may grow
        ("db.[a-z]", False, False),  # not watched: typed until its next start
    ],
)
def test_a_one_table_pattern_watched_for_created_tables_is_in_the_envelope(
    tables: str, watch: bool, envelope: bool
) -> None:
    settings = FakeSettings(newly_added_tables=watch, tables=table_patterns(tables))
    one = catalog(FakeDatabase([], {A: ROWS[A]}, settings))
    assert list(one.tables) == [A]
    assert one.envelope is envelope and one.watch_created is (watch and envelope)


def test_a_new_table_joins_with_the_option_and_is_left_out_without_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    checkpoint = offset_of(A)
    with_option = FakeDatabase([], ROWS, FakeSettings(newly_added_tables=True))
    parsed = catalog(with_option).parse(checkpoint)
    assert parsed.tables[A] == TableProgress(started=True, cursor=1)
    assert not parsed.tables[B].started and not parsed.tables[C].started
    with caplog.at_level(logging.WARNING):
        without = catalog(FakeDatabase([], ROWS)).parse(checkpoint)
    assert set(without.tables) == {A}
    assert "db.b, db.c match the table options" in caplog.text


def test_a_table_no_longer_matched_fails_without_the_option_and_leaves_with_it() -> None:
    checkpoint = offset_of(A, B)
    with pytest.raises(SchemaError, match=r"captures db\.b.*scan\.newly-added-table"):
        catalog(FakeDatabase([], ROWS, hidden=frozenset({B, C}))).parse(checkpoint)
    settings = FakeSettings(newly_added_tables=True)
    parsed = catalog(FakeDatabase([], ROWS, settings, hidden=frozenset({B, C}))).parse(checkpoint)
    assert set(parsed.tables) == {A}


def test_offsets_carry_each_tables_columns_for_dialects_that_follow_changes() -> None:
    follows = catalog(FakeDatabase([], {A: ROWS[A]}))
    assert follows.shaped(TableProgress(), A).schema == {"table": {"table": "db.a"}}
    plain = catalog(PlainDatabase([], {A: ROWS[A]}))
    assert plain.shaped(TableProgress(), A).schema is None


class Moving(FakeDatabase):
    """Each look at the log's end finds one more ALTER of the table written."""

    def current_position(self) -> Count:
        self.now = min(self.now + 1, len(self.changes))
        return Count(self.now)


def test_the_start_discovers_again_until_no_change_lies_between_two_positions() -> None:
    alter = RowChange(A, None, None, 0, 0)
    moving = Moving([alter] * (START_ATTEMPTS + 1), {A: ROWS[A]})
    with pytest.raises(SchemaError, match=f"changed {START_ATTEMPTS} times"):
        catalog(moving).columns_at_position()
    settled = Moving([alter, alter], {A: ROWS[A]})  # the second look finds no more
    assert catalog(settled).columns_at_position() == Count(2)


def test_a_dropped_table_is_forgotten_and_one_of_its_name_later_is_new() -> None:
    db = FakeDatabase([], ROWS, FakeSettings(newly_added_tables=True))
    tables = catalog(db)
    forgotten: list[TableId] = []
    tables.on_forget.append(forgotten.append)
    start = tables.parse(offset_of(A, B, C))
    dropped = dataclasses.replace(
        TableProgress.finished(), schema={"table": {"table": "db.b"}, TABLE_DROPPED: {"n": 0}}
    )
    tables.forget(B)
    assert forgotten == [B] and B not in tables.tables
    after = tables.forget_dropped(dataclasses.replace(start, tables={**start.tables, B: dropped}))
    assert set(after.tables) == {A, C}  # not discovered again: the log shows CREATE TABLE


class DroppingDatabase(FakeDatabase, FollowsTableDrops[Count, FakeTable]):
    """A fake that reports drops: a table the options match is kept until its drop."""

    def matches(self, table_id: TableId) -> bool:
        return table_id != C


def test_a_table_gone_from_the_server_is_kept_until_its_drop_when_still_matched() -> None:
    db = DroppingDatabase([], ROWS, hidden=frozenset({B, C}))
    tables = catalog(db)
    shaped = {
        t: dataclasses.replace(p, schema={"table": {"table": t.key}})
        for t, p in ((t, TableProgress(started=True, cursor=1)) for t in (A, B))
    }
    data = SourceOffset(Count(0), shaped).to_json()
    parsed = tables.parse(data)
    assert set(parsed.tables) == {A, B} and tables.vanished(B) and not tables.vanished(A)
    assert tables.tables[B] == FakeTable(B)  # its columns from the offset


def test_a_table_discovery_left_out_fails_the_restart_instead_of_waiting_for_a_drop() -> None:
    """A captured table that exists but was left out (it lost its primary key) would wait
    for a drop that never comes, losing its changes: the restart names it and why."""

    class LeftOut(DroppingDatabase):
        def left_out(self, table_id: TableId) -> str | None:
            return "it has no primary key" if table_id == B else None

    db = LeftOut([], ROWS, hidden=frozenset({B}))
    shaped = {
        t: dataclasses.replace(p, schema={"table": {"table": t.key}})
        for t, p in ((t, TableProgress(started=True, cursor=1)) for t in (A, B))
    }
    data = SourceOffset(Count(0), shaped).to_json()
    with pytest.raises(SchemaError, match=f"table {B} is captured by the checkpoint, but it has"):
        catalog(db).parse(data)


def test_a_one_chunk_table_grown_past_the_bound_stays_captured_at_a_restart() -> None:
    """A keyless table read as one chunk that discovery now leaves out for its size (the
    bound decides only when a table joins): the checkpoint keeps it captured, as the
    server has it now, streaming; one the checkpoint chunks by a column is not kept so."""

    class Grown(DroppingDatabase):
        def left_out(self, table_id: TableId) -> str | None:
            return "it holds more than 4 rows" if table_id == B else None

        def still_captured(self, table_id: TableId, checkpointed: FakeTable) -> FakeTable | None:
            return FakeTable(B, one_chunk=True) if checkpointed.one_chunk else None

    db = Grown([], ROWS, hidden=frozenset({B}))

    def checkpoint(one_chunk: bool) -> dict[str, object]:
        schema = {"table": {"table": B.key, **({"one_chunk": True} if one_chunk else {})}}
        done = dataclasses.replace(TableProgress.finished(), schema=schema)
        a = dataclasses.replace(TableProgress.finished(), schema={"table": {"table": A.key}})
        return SourceOffset(Count(0), {A: a, B: done}).to_json()

    tables = catalog(db)
    parsed = tables.parse(checkpoint(True))
    assert set(parsed.tables) == {A, B} and parsed.tables[B].done
    assert tables.tables[B] == FakeTable(B, one_chunk=True) and not tables.vanished(B)
    with pytest.raises(SchemaError, match=f"table {B} is captured by the checkpoint"):
        catalog(db).parse(checkpoint(False))


def test_a_table_the_checkpoint_chunks_by_a_key_is_not_read_as_one_chunk_at_a_restart() -> None:
    """It lost its primary key while the stream was stopped and is small: its entry's
    cursor is a value of its old key, which one chunk has none of, so the restart fails
    naming the option; one the checkpoint reads as one chunk already goes on."""
    db = FakeDatabase([], ROWS, one_chunk=frozenset({B}))
    started = TableProgress(started=True, cursor=1)

    def checkpoint(one_chunk: bool) -> dict[str, object]:
        schema = {"table": {"table": B.key, **({"one_chunk": True} if one_chunk else {})}}
        entries = {A: started, B: dataclasses.replace(TableProgress(), schema=schema)}
        return SourceOffset(Count(0), entries).to_json()

    with pytest.raises(SchemaError, match=r"scan\.incremental\.snapshot\.chunk\.key-column") as e:
        catalog(db).parse(checkpoint(False))
    assert f"table {B} is captured by the checkpoint, but it has no primary key" in str(e.value)
    assert set(catalog(db).parse(checkpoint(True)).tables) == {A, B}  # C: not newly added


def test_a_table_the_checkpoint_reads_as_one_chunk_is_not_chunked_by_a_key_at_a_restart() -> None:
    """The checkpoint reads B as one chunk, not read yet; a chunk key column named for it
    since (or a primary key added) would have the planner plan key ranges where the
    planned batch's readers read one chunk: the restart fails naming the option. Once
    its one chunk is read (done), or when the checkpoint chunks it by a key too, it goes
    on."""
    db = FakeDatabase([], ROWS)  # B has a chunk key now

    def checkpoint(one_chunk: bool, progress: TableProgress) -> dict[str, object]:
        schema = {"table": {"table": B.key, **({"one_chunk": True} if one_chunk else {})}}
        entries = {A: TableProgress(started=True, cursor=1)}
        entries[B] = dataclasses.replace(progress, schema=schema)
        return SourceOffset(Count(0), entries).to_json()

    with pytest.raises(SchemaError, match=r"scan\.incremental\.snapshot\.chunk\.key-column") as e:
        catalog(db).parse(checkpoint(True, TableProgress()))
    assert f"table {B} is read as one chunk by the checkpoint" in str(e.value)
    assert "start a new checkpoint" in str(e.value)
    assert B in catalog(db).parse(checkpoint(True, TableProgress.finished())).tables
    assert B in catalog(db).parse(checkpoint(False, TableProgress())).tables


def test_tables_at_an_offset_have_the_columns_its_entries_hold() -> None:
    class Columns(FakeDatabase):
        def table_from_json(self, data: Mapping[str, object]) -> FakeTable:
            return FakeTable(TableId.from_key(str(data["table"])), column_names=("k", "old"))

    tables = catalog(Columns([], {A: ROWS[A]}))
    entry = TableProgress(started=True, cursor=1, schema={"table": {"table": "db.a"}})
    at = tables.tables_at(SourceOffset(Count(0), {A: entry}))
    assert at[A].column_names == ("k", "old") and tables.tables[A].column_names == ("k", "v")

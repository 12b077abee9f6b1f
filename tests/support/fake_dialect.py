"""An in-memory database with a change log, as a snapshot-framework dialect.

The protocol test drives the real driver (snapshot/driver.py) over it, so what is checked
is the framework itself, not a copy of its algorithm. Positions are change counts: position
``p`` is the state after the first ``p`` changes. The test moves ``now`` (writes arrive) and
chooses each chunk read's snapshot position ``S`` through ``snapshot_at``.

A change with neither a before nor an after image is a change of its table's columns (an
ALTER TABLE; the rows keep their values): the log scan reports it, and a chunk read whose
window holds one raises ChunkCrossedChange, as a read after a real ALTER does.

:class:`PlainDatabase` answers the required hooks only (the smallest complete dialect);
:class:`FakeDatabase` adds the optional abilities (snapshot/abilities.py) the tests use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sparkcdc.core.errors import ChunkCrossedChange, lost_log
from sparkcdc.core.rows import ChangeBlock, Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.abilities import (
    DetectsLostLog,
    FollowsSchemaChanges,
    LimitedReaders,
    NamesServers,
)
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats
from sparkcdc.snapshot.dialect import Dialect
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.normalize import apply_overrides, backward_overrides, forward_overrides
from sparkcdc.snapshot.options import TablePatterns, table_patterns
from sparkcdc.snapshot.schema_change import SchemaChange


@dataclass(frozen=True, order=True)
class Count:
    """After ``n`` changes. Change ``i`` has version ``2i + 1``, position ``n`` version ``2n``:
    a position sorts above the changes before it and below the ones after."""

    n: int

    @property
    def version(self) -> int:
        return 2 * self.n

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n}


@dataclass(frozen=True)
class FakeTable:
    table_id: TableId
    column_names: tuple[str, ...] = ("k", "v")
    primary_key: tuple[str, ...] = ("k",)
    key_indexes: tuple[int, ...] = (0,)
    chunk_key_index: int = 0
    one_chunk: bool = False


@dataclass(frozen=True)
class FakeSettings:
    chunk_size: int = 4
    rows_per_partition: int = 8
    rows_per_batch: int = 1 << 20
    fetch_size: int = 1024
    factor_lower: float = 0.05
    factor_upper: float = 1000.0
    metadata: tuple[str, ...] = ()
    max_rows_per_trigger: int | None = None
    startup_mode: str = "initial"
    newly_added_tables: bool = False
    envelope: bool = False
    signal_file: str | None = None
    pause_file: str | None = None
    truncate_handling: str = "fail"
    tables: TablePatterns = field(default_factory=lambda: table_patterns("fake.t"))


def key_of(row: Row) -> Any:
    return row[0]


@dataclass
class PlainDatabase(Dialect[Count, FakeTable]):
    """The smallest complete dialect: the required hooks only, no ability
    (snapshot/abilities.py). ``changes`` is the whole log (RowChange per change, any
    tables); ``now`` is how much of it has been written; ``snapshot_at(target, now)`` picks
    a chunk read's position. The fields for abilities are used by :class:`FakeDatabase`."""

    changes: Sequence[RowChange]
    initial: Mapping[TableId, Mapping[Any, Row]]
    config: FakeSettings = field(default_factory=FakeSettings)
    now: int = 0
    snapshot_at: Callable[[int, int], int] = lambda target, now: now
    log_piece: int = 3
    #: Tables that exist but do not match the (imagined) table options: not discovered.
    hidden: frozenset[TableId] = frozenset()
    #: Tables created at a log index: not discovered before it; the log scan reports
    #: their creation (``SchemaChange.created``) when asked to watch for it.
    created: Mapping[TableId, int] = field(default_factory=dict)
    #: The server the log is read from (None: servers are not told apart).
    origin: str | None = None
    #: Readers of one batch the database tells apart (MySQL's server ids); None: any.
    readers: int | None = None
    #: The log before this change index is gone (a purged binlog): reads from a position
    #: before it fail.
    purged: int = 0
    #: Tables read as one chunk (``SourceTable.one_chunk``): their key is never asked
    #: about (no statistics, no chunk ends).
    one_chunk: frozenset[TableId] = frozenset()
    format_name = "fake-cdc"

    @property
    def settings(self) -> FakeSettings:
        return self.config

    # -- the database's state ------------------------------------------------------------
    def state(self, table: TableId, at: int) -> dict[Any, Row]:
        rows = dict(self.initial[table])
        for change in self.changes[:at]:
            if change.table != table:
                continue
            if change.before is not None:
                del rows[key_of(change.before)]
            if change.after is not None:
                rows[key_of(change.after)] = change.after
        return rows

    # -- the dialect ------------------------------------------------------------------------
    def discover(self) -> list[FakeTable]:
        return [
            FakeTable(t, one_chunk=t in self.one_chunk)
            for t in sorted(self.initial)
            if t not in self.hidden and self.created.get(t, 0) <= self.now
        ]

    def key_order(self, table: FakeTable) -> KeyOrder:
        return KeyOrder()

    def arrow_fields(self, table: FakeTable) -> list[pa.Field]:
        return [pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64())]

    def position_from_json(self, data: Mapping[str, Any]) -> Count:
        return Count(int(data["n"]))

    def current_position(self) -> Count:
        return Count(self.now)

    def startup_position(self, mode: str) -> Count:
        return Count(0 if mode == "earliest-offset" else self.now)

    def key_stats(self, table: FakeTable) -> KeyStats:
        assert not table.one_chunk, f"key statistics of {table.table_id}, read as one chunk"
        keys = sorted(self.state(table.table_id, self.now))
        return KeyStats(keys[0] if keys else None, keys[-1] if keys else None, len(keys))

    def next_chunk_end(self, table: FakeTable, lo: Key, size: int) -> Key:
        assert not table.one_chunk, f"a chunk end of {table.table_id}, read as one chunk"
        keys = sorted(self.state(table.table_id, self.now))
        above = [k for k in keys if lo is None or k >= lo]
        return above[size] if len(above) > size else None

    def limit_log(
        self, start: Count, end: Count, max_rows: int | None, tables: Sequence[TableId]
    ) -> tuple[Count, int]:
        """Every change is its own transaction: stop before the row budget runs out."""
        if max_rows is None:
            return end, 0
        used, n = 0, start.n
        while n < end.n:
            rows = 1 if self.changes[n].table in tables else 0
            if used + rows > max_rows and n > start.n:
                break
            used += rows
            n += 1
        return Count(n), used

    def split_log(self, start: Count, end: Count) -> list[Count]:
        cuts = list(range(start.n, end.n, self.log_piece))
        return [Count(c) for c in cuts] + [end] if cuts else [start, end]

    def read_chunks(
        self, table: FakeTable, chunks: Sequence[Chunk], target: Count, reader: int
    ) -> Iterator[ChunkRows]:
        """Rows as of a snapshot position S, normalised to ``target`` by the log window."""
        s = self.snapshot_at(target.n, self.now)
        order, t = KeyOrder(), table.table_id
        assert not table.one_chunk or list(chunks) == [Chunk()], f"{t} is read as one chunk"
        window = [c for c in self.changes[min(s, target.n) : max(s, target.n)] if c.table == t]
        if any(_is_alter(c) for c in window):
            raise ChunkCrossedChange(f"the window {s}..{target.n} holds an ALTER of {t}")
        overrides = (
            forward_overrides(window, key_of)
            if s <= target.n
            else backward_overrides(window, key_of)
        )
        snapshot = self.state(t, s)
        for chunk in chunks:

            def in_chunk(row: Row, chunk: Chunk = chunk) -> bool:
                return order.in_chunk(row[0], chunk)

            rows = sorted(r for r in snapshot.values() if in_chunk(r))
            yield ChunkRows(list(apply_overrides(rows, overrides, key_of, in_chunk)))

    def read_log(
        self,
        tables: Mapping[TableId, FakeTable],
        start: Count,
        end: Count,
        reader: int,
        arrow_columns: Mapping[TableId, Sequence[pa.DataType]],
    ) -> FakeLog:
        self.check_purged(start)
        return FakeLog(
            [
                _block(c, 2 * i + 1)
                for i, c in enumerate(self.changes[: end.n])
                if i >= start.n and c.table in tables and not _is_alter(c)
            ]
        )

    def check_purged(self, position: Count) -> None:
        assert 0 <= position.n <= self.now
        if position.n < self.purged:
            raise lost_log(f"the log before change {self.purged} was purged")


@dataclass
class FakeDatabase(
    PlainDatabase,
    FollowsSchemaChanges[Count, FakeTable],
    DetectsLostLog[Count],
    NamesServers[Count],
    LimitedReaders,
):
    """The plain database with the abilities a test can exercise: ALTERs and created
    tables in the log, a purged log, servers told apart, a limited number of readers."""

    def schema_change(
        self,
        start: Count,
        end: Count,
        tables: Mapping[TableId, FakeTable],
        watch_created: bool = False,
    ) -> SchemaChange[Count, FakeTable] | None:
        for n in range(start.n, end.n):
            change = self.changes[n]
            if _is_alter(change) and change.table in tables:
                altered = tables[change.table]
                return SchemaChange(altered.table_id, Count(n), Count(n + 1), "ALTER", altered)
        if not watch_created:
            return None
        made = [(n, t) for t, n in self.created.items() if start.n < n <= end.n and t not in tables]
        if not made:
            return None
        n, table = min(made)
        return SchemaChange(table, Count(n - 1), Count(n), "CREATE TABLE", None, created=True)

    def table_to_json(self, table: FakeTable) -> dict[str, Any]:
        return {"table": table.table_id.key, **({"one_chunk": True} if table.one_chunk else {})}

    def table_from_json(self, data: Mapping[str, Any]) -> FakeTable:
        return FakeTable(TableId.from_key(data["table"]), one_chunk=bool(data.get("one_chunk")))

    def ensure_available(self, position: Count) -> None:
        self.check_purged(position)

    def log_origin(self) -> str | None:
        return self.origin

    def max_readers(self) -> int | None:
        return self.readers


@dataclass
class FakeLog:
    blocks: list[ChangeBlock]

    def __iter__(self) -> Iterator[ChangeBlock]:
        return iter(self.blocks)

    def take(self, table: TableId) -> list[pa.Array]:
        raise AssertionError("the fake log writes no Arrow columns")


def _is_alter(change: RowChange) -> bool:
    return change.before is None and change.after is None


def _block(change: RowChange, version: int) -> ChangeBlock:
    if change.before is None:
        assert change.after is not None
        return ChangeBlock(change.table, "insert", [change.after], version, 0)
    if change.after is None:
        return ChangeBlock(change.table, "delete", [change.before], version, 0)
    return ChangeBlock(change.table, "update", [change.before, change.after], version, 0)

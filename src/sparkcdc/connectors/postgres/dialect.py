"""The PostgreSQL dialect of the snapshot framework (snapshot/dialect.py).

Positions are WAL addresses with the stream's change count (wal/position.py); the log is
pgoutput through the stream's replication slot (wal/slot.py); chunks are read in MVCC
snapshots and normalised by transaction visibility (snapshot/reader.py).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.changed_table import column_change_event
from sparkcdc.connectors.postgres.server.connection import connect, query, retries
from sparkcdc.connectors.postgres.server.created_tables import CreatedTables
from sparkcdc.connectors.postgres.server.discovery import PgTable, discover_tables
from sparkcdc.connectors.postgres.server.gone_tables import GoneTable, gone_tables
from sparkcdc.connectors.postgres.server.table_json import table_from_json, table_to_json
from sparkcdc.connectors.postgres.server.types import arrow_type
from sparkcdc.connectors.postgres.server.validation import validate_server, validate_tables
from sparkcdc.connectors.postgres.snapshot.chunk_ends import key_stats, next_chunk_end
from sparkcdc.connectors.postgres.snapshot.keys import chunk_key_order
from sparkcdc.connectors.postgres.snapshot.reader import read_chunks
from sparkcdc.connectors.postgres.snapshot.visibility import PgSnapshot
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.reader import read_blocks_with_retries
from sparkcdc.connectors.postgres.wal.scan import (
    Transaction,
    batch_end,
    first_described_change,
    first_truncate,
    scan_transactions,
)
from sparkcdc.connectors.postgres.wal.slot import (
    advance,
    ensure_publication,
    ensure_readable,
    ensure_slot,
    slot_state,
)
from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.rows import ChangeBlock
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.abilities import (
    DetectsLostLog,
    FollowsTableDrops,
    MeasuresLog,
    PendingColumns,
    ReleasesLog,
    SnapshotsAtPosition,
    UnloggedDdl,
)
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats
from sparkcdc.snapshot.dialect import Dialect
from sparkcdc.snapshot.keyless import KeepsGrownOneChunk, KeylessHelp
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.retry import Retries, lost_mid_read
from sparkcdc.snapshot.schema_change import SchemaChange

log = logging.getLogger(__name__)


#: The live columns of tables (``%s``: their OIDs): numbers, names, types as the WAL has them.
_LIVE_COLUMNS = """
SELECT attrelid, attnum, attname, atttypid, atttypmod FROM pg_attribute
WHERE attrelid = ANY(%s::oid[]) AND attnum > 0 AND NOT attisdropped
ORDER BY attrelid, attnum
"""


def _oids(tables: Mapping[TableId, PgTable], chosen: Iterable[TableId]) -> set[int]:
    return {tables[t].oid for t in chosen}


def _gone_statement(gone: Mapping[TableId, GoneTable]) -> str:
    """What the catalog says happened to ``gone`` (the WAL has no DDL): the drops, then
    each rename away (``DROP TABLE s.a, s.b; ALTER TABLE s.c RENAME TO d``)."""
    dropped = [str(t) for t, g in gone.items() if g.renamed_to is None]
    parts = [f"DROP TABLE {', '.join(dropped)}"] if dropped else []
    for table_id, table in gone.items():
        now = table.renamed_to
        if now is None:
            continue
        if now.database == table_id.database:
            parts.append(f"ALTER TABLE {table_id} RENAME TO {now.table}")
        else:
            moved = f"ALTER TABLE {table_id} SET SCHEMA {now.database}"
            parts.append(moved if now.table == table_id.table else f"{moved} (now {now})")
    return "; ".join(parts)


class PostgresDialect(
    Dialect[LsnPosition, PgTable],
    KeepsGrownOneChunk[PgTable],
    FollowsTableDrops[LsnPosition, PgTable],
    UnloggedDdl,
    PendingColumns[PgTable],
    ReleasesLog[LsnPosition],
    DetectsLostLog[LsnPosition],
    MeasuresLog[LsnPosition],
    SnapshotsAtPosition[LsnPosition],
):
    format_name = "postgres-cdc"

    def __init__(self, config: PostgresSourceConfig) -> None:
        self.config = config
        self._conn: Any = None
        #: Tables discovery left out for having no primary key (``snapshot/keyless.py``),
        #: and of them those too large to read as one chunk, described (``still_captured``).
        self._keyless: dict[TableId, KeylessHelp] = {}
        self.over_bound: dict[TableId, PgTable] = {}
        self._moved_at = time.monotonic()
        self._commits: list[LsnPosition] = []
        #: The last planning scan (its start, its end LSN, what it found), which
        #: :meth:`schema_change` looks through right after :meth:`limit_log`.
        self._scanned: tuple[LsnPosition, int, list[Transaction]] | None = None
        #: Tables whose chunks wait for their change in the WAL (warned about once).
        self._pending: set[TableId] = set()
        #: Captured tables (by OID) found gone from the catalog, with the earliest WAL
        #: position found to bound their changes, and their name now: their drop is a
        #: batch of its own once the stream has read up to there (server/gone_tables.py).
        self._gone_at: dict[int, GoneTable] = {}
        #: Tables created while the stream runs (``scan.newly-added-table.enabled``).
        self._created = CreatedTables(config)
        #: The OIDs of the tables the last discovery returned (none yet: the start's).
        self._discovered: set[int] = set()

    @property
    def settings(self) -> PostgresSourceConfig:
        return self.config

    @property
    def retries(self) -> Retries:
        return retries(self.config)

    @property
    def conn(self) -> Any:
        """The driver's connection (autocommit), reconnected if it dropped. An idle
        connection the server closed (a restart) looks healthy until it is used, so it is
        asked first (one round trip, as MySQL's ping): planning then reconnects (with the
        connection retries) instead of failing the query on its first statement."""
        if self._conn is not None:
            healthy = not (self._conn.closed or self._conn.broken)
            if healthy:
                try:
                    self._conn.execute("SELECT 1")
                except Exception:  # dropped: reconnect below
                    log.info("the planning connection to PostgreSQL dropped; reconnecting")
                    healthy = False
            if not healthy:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None
        if self._conn is None:
            self._conn = connect(self.config)
        return self._conn

    # -- discovery and types ------------------------------------------------------------
    def discover(self) -> list[PgTable]:
        conn, config = self.conn, self.config
        validate_server(conn, config)
        tables = discover_tables(conn, config, self._keyless, self.over_bound)
        if self._discovered:  # again while the stream runs: created tables not ready wait
            tables = self._created.keep_ready(conn, tables, self._discovered)
        validate_tables(conn, tables, self.config.upsert)
        self._discovered = {t.oid for t in tables}
        existed = slot_state(conn, config) is not None
        if ensure_publication(conn, config, tables) and existed:
            log.warning(
                "publication %s was created after replication slot %s: WAL the slot kept "
                "from before cannot be decoded with it; a checkpoint that needs that WAL "
                "fails at restart",
                config.publication_name,
                config.slot_name,
            )
        ensure_slot(conn, config)
        for table in tables:
            chunk_key_order(table)  # fails up front for keys we cannot order
        return tables

    def inspect(self) -> list[PgTable]:
        """Discovery's checks without making its publication and slot (a slot made by a
        check and never read would keep the server's WAL for ever): an existing slot or
        publication must fit, a missing one must be one the user could make."""
        validate_server(self.conn, self.config)
        tables = discover_tables(self.conn, self.config, self._keyless, self.over_bound)
        validate_tables(self.conn, tables, self.config.upsert)
        ensure_publication(self.conn, self.config, tables, create=False)
        slot_state(self.conn, self.config)
        for table in tables:
            chunk_key_order(table)
        return tables

    def matches(self, table_id: TableId) -> bool:
        return self.config.matches(table_id.database, table_id.table)

    def left_out(self, table_id: TableId) -> str | None:
        says = self._keyless.get(table_id)
        return None if says is None else says.left_out

    @property
    def drops_waiting(self) -> bool:
        return bool(self._gone_at)

    def key_order(self, table: PgTable) -> KeyOrder:
        return chunk_key_order(table)

    def arrow_fields(self, table: PgTable) -> list[pa.Field]:
        """The table's columns; under ``changelog-mode: upsert`` every column outside the
        primary key may be NULL (a delete carries the key only)."""
        mode, upsert = self.config.decimal_mode, self.config.upsert
        return [
            pa.field(
                c.name,
                arrow_type(c, mode),
                nullable=c.nullable or (upsert and c.name not in table.primary_key),
            )
            for c in table.columns
        ]

    def comments(self, table: PgTable) -> Comments:
        """COMMENT ON the table and its columns as read at discovery or at the table's
        last column change (``include-comments.enabled``)."""
        if not self.config.include_comments or table.comments is None:
            return NO_COMMENTS
        return table.comments

    def table_metadata(self, table: PgTable) -> Mapping[str, Any]:
        return {
            "database_name": self.config.database,
            "schema_name": table.table_id.database,
            "table_name": table.table_id.table,
        }

    # -- positions ----------------------------------------------------------------------
    def position_from_json(self, data: Mapping[str, Any]) -> LsnPosition:
        return LsnPosition.from_json(dict(data))

    def current_position(self) -> LsnPosition:
        """The flushed end of the WAL, or the slot's start if later (a slot just created
        starts at a record not flushed yet); its change count is set when a batch is
        planned (``limit_log``)."""
        ((now,),) = query(
            self.conn,
            "SELECT greatest(pg_catalog.pg_current_wal_flush_lsn(), "
            "(SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = %s))::text",
            (self.config.slot_name,),
        )
        return LsnPosition(lsn_from_text(now))

    def log_bytes(self, start: LsnPosition, end: LsnPosition) -> int:
        return max(0, end.lsn - start.lsn)

    def startup_position(self, mode: str) -> LsnPosition:
        if mode == "committed-offset":
            state = slot_state(self.conn, self.config)
            assert state is not None  # discover() made it
            return LsnPosition(state.confirmed)
        return self.current_position()

    def ensure_available(self, position: LsnPosition) -> None:
        ensure_readable(self.conn, self.config, position)

    def snapshot_target(self) -> LsnPosition | None:
        return self.config.snapshot_position

    # -- planning -------------------------------------------------------------------------
    def key_stats(self, table: PgTable) -> KeyStats:
        return key_stats(self.conn, table, self.config.decimal_mode)

    def next_chunk_end(self, table: PgTable, lo: Key, size: int) -> Key:
        return next_chunk_end(
            self.conn, table, self.key_order(table), lo, size, self.config.decimal_mode
        )

    def limit_log(
        self,
        start: LsnPosition,
        end: LsnPosition,
        max_rows: int | None,
        tables: Sequence[TableId],
    ) -> tuple[LsnPosition, int]:
        """The batch's end from a scan of the slot (wal/scan.py). With no captured change
        in the range the position stays, so an idle stream runs no batches, until
        ``heartbeat.interval`` has passed: then it moves on, and the slot can release the
        WAL behind it."""
        transactions = scan_transactions(self.conn, self.config, start, end.lsn)
        self._scanned = (start, end.lsn, transactions)
        ((snapshot,),) = query(self.conn, "SELECT pg_catalog.pg_current_snapshot()::text")
        position, rows, truncates = batch_end(
            start, end.lsn, transactions, PgSnapshot.parse(snapshot), max_rows
        )
        # a dropped table's batch waits for the position to pass its drop, which the
        # WAL does not show: move on without captured changes too
        idle = rows == 0 and truncates == 0 and not self._gone_at
        if idle and time.monotonic() - self._moved_at < self.config.heartbeat_interval:
            return start, 0
        if position > start:
            self._moved_at = time.monotonic()
        return position, rows

    def schema_change(
        self,
        start: LsnPosition,
        end: LsnPosition,
        tables: Mapping[TableId, PgTable],
        watch_created: bool = False,
    ) -> SchemaChange[LsnPosition, PgTable] | None:
        """The drop of captured tables no longer in the catalog under their names, once
        ``start`` is past it (:meth:`_dropped`); else the first TRUNCATE of a captured
        table in ``[start, end)`` (pgoutput's Truncate messages, found by the planning
        scan), or the first change of its columns (a Relation message that describes it
        otherwise, before the first row change after an ALTER TABLE:
        wal/column_change.py), whichever comes first. With ``watch_created``, a created
        table ready to capture comes first (server/created_tables.py): the WAL has no
        CREATE TABLE, so the catalog is asked at every planning."""
        dropped = self._dropped(start, tables)
        if dropped is not None:
            return dropped
        if watch_created:
            created = self._created.ready(self.conn, tables.values())
            if created:  # taken from the batch's start (snapshot/catalog.py discover_again)
                statement = f"CREATE TABLE {created[0]} (found in the catalog)"
                return SchemaChange(created[0], start, start, statement, None, created=True)
        scanned = self._scanned
        if scanned is None or scanned[0] != start or scanned[1] < end.lsn:
            scanned = (start, end.lsn, scan_transactions(self.conn, self.config, start, end.lsn))
        by_oid = {t.oid: t for t in tables.values()}
        found = first_truncate(start, end, scanned[2], set(by_oid))
        described = first_described_change(start, end, scanned[2], by_oid)
        # the same transaction: the new columns first (pgoutput describes a table before
        # truncating it too), so the truncate's batch has the table as it is then
        if described is not None and (found is None or described[0] <= found[0]):
            return column_change_event(self.conn, by_oid, *described)
        if found is None:
            return None
        before, after, tx = found
        names = [str(by_oid[oid].table_id) for oid in tx.truncated if oid in by_oid]
        table = next(by_oid[oid] for oid in tx.truncated if oid in by_oid)
        statement = f"TRUNCATE {', '.join(names)} (transaction {tx.xid})"
        problem = ""
        if len(names) > 1:
            problem = f"it truncates several captured tables ({', '.join(names)}) at once"
        elif tx.changes:
            problem = (
                f"its transaction also has {tx.changes} row change(s), which a batch of "
                "the truncate alone would lose"
            )
        return SchemaChange(
            table.table_id,
            before,
            after,
            statement,
            None if problem else table,
            problem,
            truncated=True,
        )

    def _gone(self, tables: Mapping[TableId, PgTable]) -> dict[TableId, GoneTable]:
        """Of ``tables``, those gone from the catalog (dropped, renamed away), with the
        WAL position past which none of their changes is left (server/gone_tables.py)."""
        gone = gone_tables(self.conn, tables.values())
        found = {}
        for table in tables.values():
            now = gone.get(table.oid)
            if now is None:
                continue
            seen = self._gone_at.get(table.oid)
            if seen is not None:  # the earliest bound (each is one), the name it has now
                now = GoneTable(min(seen.bound, now.bound), now.renamed_to)
            found[table.table_id] = self._gone_at[table.oid] = now
        return found

    def _dropped(
        self, start: LsnPosition, tables: Mapping[TableId, PgTable]
    ) -> SchemaChange[LsnPosition, PgTable] | None:
        """The drop of the captured tables that are gone from the catalog, as a batch of
        its own at ``start`` once ``start`` is past every change they had; None before
        (their chunks wait meanwhile, see :meth:`columns_pending`)."""
        gone = self._gone(tables)
        self._gone_at = {o: g for o, g in self._gone_at.items() if o in _oids(tables, gone)}
        ready = tuple(sorted(t for t, g in gone.items() if start.lsn >= g.bound))
        if not ready:
            return None
        for table_id in ready:
            self._gone_at.pop(tables[table_id].oid, None)
        return SchemaChange(
            ready[0],
            start,
            start,
            _gone_statement({t: gone[t] for t in ready}),
            tables[ready[0]],
            dropped_tables=ready,
            dropped_statements={t: _gone_statement({t: gone[t]}) for t in ready},
        )

    def columns_pending(self, tables: Mapping[TableId, PgTable]) -> set[TableId]:
        """Tables whose columns the catalog has otherwise than the batch reads them with
        (other than columns added at the end, which a chunk can leave out): pgoutput
        describes such a change only before the table's next row change, where the stream
        follows it; until then a chunk read would have the new shape."""
        by_oid = {t.oid: t for t in tables.values()}
        now: dict[int, list[tuple[int, str, tuple[int, int]]]] = {oid: [] for oid in by_oid}
        for oid, number, name, kind, mod in query(self.conn, _LIVE_COLUMNS, (list(by_oid),)):
            now[int(oid)].append((int(number), str(name), (int(kind), int(mod))))
        gone = set(self._gone(tables))  # dropped: they wait for their drop's batch
        pending = set(gone)
        for oid, table in by_oid.items():
            columns = now[oid][: len(table.columns)]
            if not columns:
                continue
            numbers = table.attnums or tuple(n for n, _, _ in columns)
            types = table.column_types or tuple(t for _, _, t in columns)
            if columns != list(zip(numbers, table.column_names, types, strict=True)):
                pending.add(table.table_id)
        for table_id in sorted(pending - self._pending):
            log.warning(
                "the columns of %s changed; PostgreSQL's WAL describes such a change only "
                "with the table's next row change, where the stream follows it: its "
                "snapshot chunks wait until then",
                table_id,
            )
        self._pending = (self._pending - set(tables)) | pending
        return pending

    def table_to_json(self, table: PgTable) -> dict[str, Any]:
        return table_to_json(table)

    def table_from_json(self, data: Mapping[str, Any]) -> PgTable:
        return table_from_json(data)

    def split_log(self, start: LsnPosition, end: LsnPosition) -> list[LsnPosition]:
        """One log partition per batch: each reader decodes from the slot's restart point,
        so pieces would repeat the server's decoding work."""
        return [start, end]

    # -- reads --------------------------------------------------------------------------
    def read_chunks(
        self, table: PgTable, chunks: Sequence[Chunk], target: LsnPosition, reader: int
    ) -> Iterator[ChunkRows]:
        rows = read_chunks(self.config, table, chunks, target)
        return lost_mid_read(retries(self.config), f"reading chunks of {table.table_id}", rows)

    def read_log(
        self,
        tables: Mapping[TableId, PgTable],
        start: LsnPosition,
        end: LsnPosition,
        reader: int,
        arrow_columns: Mapping[TableId, Sequence[pa.DataType]],
    ) -> WalStream:
        return WalStream(self.config, tables, start, end)

    # -- the slot -------------------------------------------------------------------------
    def committed(self, position: LsnPosition) -> None:
        """Advance the slot to the position committed ``lsn-commit.checkpoints-num-delay``
        batches ago (the WAL before it is then released by the server)."""
        if self._commits and position <= self._commits[-1]:
            return
        self._commits.append(position)
        delay = self.config.lsn_commit_delay
        if len(self._commits) <= delay:
            return
        release = self._commits[-1 - delay]
        del self._commits[: len(self._commits) - 1 - delay]
        advance(self.conn, self.config, release.lsn)
        ((behind,),) = query(
            self.conn,
            "SELECT pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), %s::pg_lsn)",
            (release.text,),
        )
        log.info(
            "replication slot %s confirmed up to %s; the server's WAL is %s bytes further",
            self.config.slot_name,
            release.text,
            behind,
        )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}  # executors open their own connections

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"PostgresDialect({self.config!r})"


class WalStream:
    """A bounded WAL read (no Arrow column sinks: images come as tuples)."""

    def __init__(
        self,
        config: PostgresSourceConfig,
        tables: Mapping[TableId, PgTable],
        start: LsnPosition,
        end: LsnPosition,
    ) -> None:
        self.config, self.tables, self.start, self.end = config, tables, start, end

    def __iter__(self) -> Iterator[ChangeBlock]:
        return read_blocks_with_retries(self.config, self.tables, self.start, self.end)

    def take(self, table: TableId) -> list[pa.Array]:
        raise ValueError(f"the WAL reader writes no Arrow columns ({table})")

"""The MySQL/MariaDB CDC source, engine-neutral: offsets, batch planning and partition reads.

The Spark binding (spark/mysql_source.py) only forwards to this class. An offset is

    {"log": {"file", "pos", "gtid"}, "tables": {"db.table": progress}, "bounded": bool}

with one small progress entry per table (see snapshot/progress.py), never chunk lists. A
batch from offset A to offset B emits (1) the log changes in (A.log, B.log] for keys that A
had already emitted, and (2) the chunks between A's and B's cursors, read in parallel and
normalised to B.log. ``bounded`` (startup mode ``snapshot``) freezes the log position.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog import read_blocks_with_retries
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.connection import connect
from sparkcdc.connectors.mysql.discovery import CapturedTable, discover_tables
from sparkcdc.connectors.mysql.keys import chunk_key_order
from sparkcdc.connectors.mysql.locate import position_for_gtid, position_for_timestamp
from sparkcdc.connectors.mysql.log_limit import MAX_LOG_PIECES, advance_log, split_log
from sparkcdc.connectors.mysql.planner import ChunkPlanner
from sparkcdc.connectors.mysql.positions import (
    current_position,
    earliest_position,
    ensure_available,
    gtid_at,
)
from sparkcdc.connectors.mysql.rowdecode.arrow import ColumnSinks
from sparkcdc.connectors.mysql.snapshot_reader import batch_rows, read_chunks
from sparkcdc.connectors.mysql.types import arrow_type
from sparkcdc.connectors.mysql.validation import validate_server
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.position import BinlogPosition
from sparkcdc.core.rows import ChangeBlock, Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import (
    CHANGE_TYPE_VALUES,
    ChangelogBatchBuilder,
    Emitted,
    EnvelopeBatchBuilder,
    changelog_schema,
    envelope_schema,
)
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.emit import changes_to_emit
from sparkcdc.snapshot.progress import TableProgress

Offset = dict[str, Any]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkRead:
    """A partition of snapshot work: some chunks of one table, normalised to ``target``."""

    table: CapturedTable
    chunks: tuple[Chunk, ...]
    target: BinlogPosition
    server_id: int
    envelope: bool


@dataclass(frozen=True)
class LogRead:
    """A partition of log work: changes in ``(start, end]`` for keys emitted as of start."""

    start: BinlogPosition
    end: BinlogPosition
    tables: Mapping[TableId, CapturedTable]
    progress: Mapping[TableId, TableProgress]
    server_id: int
    envelope: bool


PartitionSpec = ChunkRead | LogRead
BatchBuilder = ChangelogBatchBuilder | EnvelopeBatchBuilder


def _table_schema(table: CapturedTable, metadata: tuple[str, ...]) -> pa.Schema:
    fields = [pa.field(c.name, arrow_type(c), nullable=c.nullable) for c in table.columns]
    return changelog_schema(fields, metadata)


class MySqlCdcSource:
    """One captured table (several tables arrive with the envelope format)."""

    def __init__(self, config: MySqlSourceConfig) -> None:
        self.config = config
        self._conn: Any = None
        self._tables: dict[TableId, CapturedTable] | None = None
        self._planners: dict[TableId, ChunkPlanner] = {}
        self._plans: dict[tuple[TableId, str, str], list[Chunk]] = {}
        self.flavor = "mariadb"
        self._checked_start = False
        self._warned_new = False

    @property
    def _scan_id(self) -> int:
        """Server id for the driver's own short binlog scans (the last of the range)."""
        return self.config.server_ids[1]

    # -- driver side -------------------------------------------------------------------
    @property
    def conn(self) -> Any:
        if self._conn is not None:
            try:
                self._conn.ping()
            except Exception:  # dropped since the last batch: reconnect below
                self._conn.close()
                self._conn = None
                self._planners.clear()
        if self._conn is None:
            self._conn = connect(self.config)
        return self._conn

    @property
    def tables(self) -> dict[TableId, CapturedTable]:
        """Captured tables, after validating the server (up front, with the fix in errors)."""
        if self._tables is None:
            self.flavor, _ = validate_server(self.conn, self.config.username)
            found = discover_tables(self.conn, self.config)
            for table in found:
                chunk_key_order(table, self.config)  # fails up front for keys we cannot order
            self._tables = {t.table_id: t for t in found}
        return self._tables

    @property
    def envelope(self) -> bool:
        """Several tables share one stream in the envelope schema; one table is typed."""
        return len(self.tables) > 1

    def arrow_schema(self) -> pa.Schema:
        if self.envelope:
            return envelope_schema(self.config.metadata)
        return _table_schema(next(iter(self.tables.values())), self.config.metadata)

    def current_position(self) -> BinlogPosition:
        return current_position(self.conn)

    def initial_offset(self) -> Offset:
        mode = self.config.startup_mode
        tables = self.tables
        if mode in ("initial", "snapshot"):
            progress = {t: TableProgress() for t in tables}
            return _offset(self.current_position(), progress, bounded=mode == "snapshot")
        done = {t: TableProgress.finished() for t in tables}
        if mode == "latest-offset":
            return _offset(self.current_position(), done)
        if mode == "earliest-offset":
            return _offset(earliest_position(self.conn), done)
        if mode == "timestamp":
            millis = self.config.timestamp_millis or 0
            return _offset(
                position_for_timestamp(self.conn, self.config, millis, self._scan_id), done
            )
        if self.config.specific_file is not None and self.config.specific_pos is not None:
            file, pos = self.config.specific_file, self.config.specific_pos
            position = BinlogPosition(file, pos, gtid_at(self.conn, file, pos))
        else:
            gtids = self.config.specific_gtid or ""
            position = position_for_gtid(self.conn, self.config, gtids, self.flavor, self._scan_id)
        ensure_available(self.conn, position)
        return _offset(position, done)

    def latest_offset(
        self, start: Offset, max_rows: int | None, cap: BinlogPosition | None = None
    ) -> Offset:
        """The end of the next batch: the log now (or ``cap``) and a bounded number of chunks.

        Every chunk of a batch is normalised to the batch's end position P by reading the
        log between P and its own read, so a batch must stay short: without
        ``maxRowsPerTrigger`` chunks are bounded by ``rows-per-batch`` (ARCHITECTURE: "a
        bounded number of new chunks"). For the same reason ``cap`` (availableNow's end)
        holds only once the snapshot is done: a snapshot normalised to the fixed cap would
        read ever longer windows as the run goes on. The run still ends: chunks run out,
        then the log stops at the cap.
        """
        position = _position(start)
        progress = self._checked_progress(start)
        if not self._checked_start:  # a restart from a checkpoint: is its binlog still there?
            ensure_available(self.conn, position)
            self._checked_start = True
        unfinished = any(not p.done for p in progress.values())
        budget = max_rows
        if not start.get("bounded"):
            if budget is None:
                budget = self.config.rows_per_batch
            now = self.current_position()
            if cap is not None and cap < now and not unfinished:
                now = cap
            if now > position and max_rows is not None:
                # while a snapshot runs the log gets half the batch, so neither starves
                share = max(1, max_rows // 2) if unfinished else max_rows
                names = [str(t) for t in progress]
                now, used = advance_log(self.conn, position, now, share, names)
                budget = max(max_rows - used, 1 if unfinished else 0)
            if now > position:
                position = now
        new_progress = dict(progress)
        for table_id in sorted(progress):
            if budget is not None and budget <= 0:
                break
            table_progress = progress[table_id]
            if table_progress.done:
                continue
            planner = self._planner(table_id)
            max_chunks = (
                1 << 30 if budget is None else max(1, math.ceil(budget / self.config.chunk_size))
            )
            chunks = planner.plan(table_progress, max_chunks)
            last = chunks[-1]
            after = (
                TableProgress.finished()
                if last.is_last
                else TableProgress(started=True, cursor=last.hi)
            )
            new_progress[table_id] = after
            self._plans[_plan_key(table_id, table_progress, after)] = chunks
            if budget is not None:
                budget -= len(chunks) * self.config.chunk_size
        return _offset(position, new_progress, bounded=bool(start.get("bounded")))

    def partitions(self, start: Offset, end: Offset) -> list[PartitionSpec]:
        start_pos, end_pos = _position(start), _position(end)
        before, after = self._checked_progress(start), self._checked_progress(end)
        specs: list[PartitionSpec] = []
        if end_pos > start_pos and any(p.started or p.done for p in before.values()):
            live = {t: self.tables[t] for t, p in before.items() if p.started or p.done}
            bounds = self._log_pieces(start_pos, end_pos)
            for i in range(len(bounds) - 1):
                lo, hi = bounds[i], bounds[i + 1]
                specs.append(
                    LogRead(lo, hi, live, before, self.config.server_id(len(specs)), self.envelope)
                )
        per_partition = max(1, self.config.rows_per_partition // self.config.chunk_size)
        for table_id in sorted(after):
            if before.get(table_id, TableProgress()) == after[table_id]:
                continue
            key = _plan_key(table_id, before[table_id], after[table_id])
            chunks = self._plans.pop(key, None)
            if chunks is None:  # planned in another process, or replayed after a restart
                chunks = self._planner(table_id).chunks_between(before[table_id], after[table_id])
            table = self.tables[table_id]
            for i in range(0, len(chunks), per_partition):
                specs.append(
                    ChunkRead(
                        table,
                        tuple(chunks[i : i + per_partition]),
                        end_pos,
                        self.config.server_id(len(specs)),
                        self.envelope,
                    )
                )
        low, high = self.config.server_ids
        if len(specs) > high - low + 1:
            log.warning(
                "a batch reads with %d concurrent binlog readers but 'server-id' %d-%d has "
                "only %d ids: readers sharing an id knock each other off the server; give a "
                "wider range",
                len(specs),
                low,
                high,
                high - low + 1,
            )
        return specs

    def _log_pieces(self, start: BinlogPosition, end: BinlogPosition) -> list[BinlogPosition]:
        """``[start, cut..., end]``: a large log range is decoded by several Spark tasks in
        parallel, cut at transaction boundaries (docs/binlog-decoder.md). Each piece needs
        its own server id, so there are never more pieces than ids."""
        low, high = self.config.server_ids
        return split_log(self.conn, start, end, max_pieces=min(MAX_LOG_PIECES, high - low + 1))

    def snapshot_partitions(self) -> list[PartitionSpec]:
        """All chunks of every table, normalised to the log position now (batch reads), or
        to ``scan.snapshot.position`` (an earlier one, still in the binlog)."""
        position = self.config.snapshot_position or self.current_position()
        start = _offset(position, {t: TableProgress() for t in self.tables})
        return self.partitions(start, self.latest_offset(start | {"bounded": True}, None))

    def _checked_progress(self, offset: Offset) -> dict[TableId, TableProgress]:
        """An offset's tables. A checkpointed table that is no longer captured fails with
        the fix; a table matched since the checkpoint was made is not captured (warned)."""
        progress = _progress(offset)
        gone = sorted(str(t) for t in set(progress) - set(self.tables))
        if gone:
            raise SchemaError(
                f"the checkpoint captures {', '.join(gone)}, which 'database-name'/'table-name' "
                "no longer match (dropped, renamed or options changed). Removing tables from a "
                "running capture is not supported yet: restore the table or the options, or "
                "start a new checkpoint"
            )
        new = sorted(str(t) for t in set(self.tables) - set(progress))
        if new and not self._warned_new:
            self._warned_new = True
            log.warning(
                "tables %s match 'database-name'/'table-name' but were not there when the "
                "checkpoint was made: they are not captured (adding tables to a running "
                "capture is not supported yet; start a new checkpoint to include them)",
                ", ".join(new),
            )
        return progress

    def _planner(self, table_id: TableId) -> ChunkPlanner:
        if table_id not in self._planners:
            self._planners[table_id] = ChunkPlanner(self.conn, self.tables[table_id], self.config)
        return self._planners[table_id]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._planners.clear()

    def __getstate__(self) -> dict[str, Any]:
        # travels to executors: connections and caches stay behind
        return {"config": self.config, "_tables": self._tables}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]
        self._tables = state["_tables"]

    # -- executor side -----------------------------------------------------------------
    def read(self, spec: PartitionSpec) -> Iterator[pa.RecordBatch]:
        if isinstance(spec, ChunkRead):
            yield from self._read_chunks(spec)
        else:
            yield from self._read_log(spec)

    def _builder(self, table: CapturedTable, envelope: bool) -> BatchBuilder:
        if envelope:
            return EnvelopeBatchBuilder(
                envelope_schema(self.config.metadata),
                table.table_id,
                table.column_names,
                [arrow_type(c) for c in table.columns],
                table.key_indexes,
            )
        schema = _table_schema(table, self.config.metadata)
        return ChangelogBatchBuilder(schema, len(table.columns), table.table_id)

    def _read_chunks(self, spec: ChunkRead) -> Iterator[pa.RecordBatch]:
        builder = self._builder(spec.table, spec.envelope)
        at = dt.datetime.now(dt.timezone.utc)
        chunks = read_chunks(self.config, spec.table, spec.chunks, spec.target, spec.server_id)
        for rows in chunks:
            yield builder.snapshot_batch(rows, spec.target.version, at)

    def _read_log(self, spec: LogRead) -> Iterator[pa.RecordBatch]:
        """One log partition's changes as Arrow batches of at least ``batch_rows`` rows
        (Spark pays per batch). This is the executor's hot path after decoding: a table
        whose snapshot is done takes whole rows events (``ChangeBlock``) straight into
        Arrow columns (``block_batch``), with no object or key test per row; for the typed
        changelog the decoder writes those columns itself (``ColumnSinks``, no tuples). A
        table whose snapshot is running goes change by change through the key predicate."""
        live = spec.tables
        builders = {t: self._builder(table, spec.envelope) for t, table in live.items()}
        emitted = {
            t: _emitted_predicate(table, spec.progress[t], self.config) for t, table in live.items()
        }
        done = {t for t in live if spec.progress[t].done}
        blocks: dict[TableId, list[ChangeBlock]] = {t: [] for t in live}
        counts = dict.fromkeys(live, 0)
        pending: dict[TableId, list[tuple[RowChange, Emitted]]] = {t: [] for t in live}
        size = batch_rows(self.config)
        # done tables of the typed changelog: the decoder writes Arrow buffers, no tuples
        typed = {
            t: b.data_types
            for t, b in builders.items()
            if t in done and isinstance(b, ChangelogBatchBuilder)
        }
        sinks = ColumnSinks(typed, CHANGE_TYPE_VALUES) if typed else None

        def batch(table: TableId) -> pa.RecordBatch:
            out, builder = blocks[table], builders[table]
            if sinks is not None and out[0].sunk is not None:
                assert isinstance(builder, ChangelogBatchBuilder)  # only these get sinks
                built = builder.block_batch(out, sinks.take(table))
            else:
                built = builder.block_batch(out)
            out.clear()
            counts[table] = 0
            return built

        stream = read_blocks_with_retries(
            self.config, live, spec.start, spec.end, spec.server_id, sinks=sinks
        )
        for block in stream:
            table = block.table
            if table in done:
                out = blocks[table]
                if out and (out[-1].sunk is None) != (block.sunk is None):
                    yield batch(table)  # a batch's images are all tuples or all in the sink
                out.append(block)
                counts[table] += block.image_count
                if counts[table] >= size:
                    yield batch(table)
                continue
            rows = pending[table]
            predicate = emitted[table]
            for change in block.changes():
                images = changes_to_emit(change, predicate)
                if images:
                    rows.append((change, images))
            if len(rows) >= size:
                yield builders[table].change_batch(rows)
                rows.clear()
        for t in live:
            if blocks[t]:
                yield batch(t)
            if pending[t]:
                yield builders[t].change_batch(pending[t])


def _emitted_predicate(
    table: CapturedTable, progress: TableProgress, config: MySqlSourceConfig
) -> Callable[[Row], bool]:
    """Whether a row's key had been emitted when the batch started (log events are
    emitted only for those keys)."""
    if progress.done or not progress.started:  # no key comparison needed
        return lambda row: progress.done
    order = chunk_key_order(table, config)
    k = table.chunk_key_index

    def emitted(row: Row) -> bool:
        return order.emitted(row[k], progress)

    return emitted


def _offset(
    position: BinlogPosition, progress: Mapping[TableId, TableProgress], bounded: bool = False
) -> Offset:
    return {
        "log": position.to_json(),
        "tables": {t.key: p.to_json() for t, p in sorted(progress.items())},
        "bounded": bounded,
    }


def _position(offset: Offset) -> BinlogPosition:
    return BinlogPosition.from_json(offset["log"])


def _progress(offset: Offset) -> dict[TableId, TableProgress]:
    return {TableId.from_key(t): TableProgress.from_json(p) for t, p in offset["tables"].items()}


def _plan_key(
    table_id: TableId, before: TableProgress, after: TableProgress
) -> tuple[TableId, str, str]:
    return (table_id, repr(before.to_json()), repr(after.to_json()))

"""The engine-neutral CDC source: offsets, batch planning and partition reads over a dialect.

A stream offset (snapshot/offset.py) holds the log position and one small progress entry
per table, never chunk lists. A batch from offset A to offset B emits (1) the log changes in
(A.log, B.log] for keys that A had already emitted, and (2) the chunks between A's and B's
cursors, read in parallel and normalised to B.log (docs/design.md). Everything that depends
on the database goes through :class:`~sparkcdc.snapshot.dialect.Dialect`; the Spark binding
(spark/source.py) only forwards Spark's calls here, with offsets as JSON dicts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import logging
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic

import pyarrow as pa

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.errors import (
    ChunkCrossedChange,
    PositionLostError,
    RestartForSchemaError,
    SchemaError,
)
from sparkcdc.core.rows import ChangeBlock, Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import (
    ChangelogBatchBuilder,
    Emitted,
    EnvelopeBatchBuilder,
    changelog_schema,
    envelope_schema,
)
from sparkcdc.snapshot.chunks import Chunk, Key
from sparkcdc.snapshot.dialect import Dialect, P, T
from sparkcdc.snapshot.emit import changes_to_emit
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.planner import ChunkPlanner
from sparkcdc.snapshot.progress import TABLE_DROPPED, ChunkSpan, Resnapshot, TableProgress
from sparkcdc.snapshot.recovery import recovered
from sparkcdc.snapshot.schema_change import SchemaChange
from sparkcdc.snapshot.signal import (
    PAUSE,
    RECOVER,
    RESUME,
    STOP,
    Signal,
    SignalChannel,
    SignalError,
    key_from_json,
)
from sparkcdc.snapshot.signal_file import FileSignals

Offset = dict[str, Any]
log = logging.getLogger(__name__)

#: Fewer, larger Arrow batches from log partitions: Spark pays per batch.
MIN_BATCH_ROWS = 16_384


@dataclass(frozen=True)
class ChunkRead(Generic[P, T]):
    """A partition of snapshot work: some chunks of one table, normalised to ``target``."""

    table: T
    chunks: tuple[Chunk, ...]
    target: P
    reader: int
    envelope: bool
    #: A re-read on demand (a signal): rows are upserts (``update_postimage`` without a
    #: pre-image), as the consumer may hold their keys already.
    again: bool = False
    #: The server the batch was planned on (``Dialect.log_origin``): ``target`` is a
    #: position of its log, so the executor must reach it too.
    origin: str | None = None


@dataclass(frozen=True)
class LogRead(Generic[P, T]):
    """A partition of log work: changes in ``(start, end]`` for keys emitted as of start."""

    start: P
    end: P
    tables: Mapping[TableId, T]
    progress: Mapping[TableId, TableProgress]
    reader: int
    envelope: bool
    #: The server whose log ``start`` and ``end`` are positions of (see ``ChunkRead``).
    origin: str | None = None


@dataclass(frozen=True)
class SmallReads(Generic[P, T]):
    """One partition for the chunks of several tables, read one after the other: many small
    tables would otherwise pay a Spark task each (~35 ms), more than reading them."""

    parts: tuple[ChunkRead[P, T], ...]
    reader: int


PartitionSpec = ChunkRead[Any, Any] | SmallReads[Any, Any] | LogRead[Any, Any]
BatchBuilder = ChangelogBatchBuilder | EnvelopeBatchBuilder


class IncrementalSource(Generic[P, T]):
    """Captured tables of one dialect: one table is a typed changelog, several share the
    envelope schema."""

    def __init__(self, dialect: Dialect[P, T]) -> None:
        self.dialect = dialect
        self.settings = dialect.settings
        self._tables: dict[TableId, T] | None = None
        self._envelope: bool | None = None
        self._planners: dict[TableId, ChunkPlanner] = {}
        self._plans: dict[tuple[TableId, str, str], list[Chunk]] = {}
        self._orders: dict[TableId, KeyOrder] = {}
        self._checked_start = False
        self._checked_replay = False
        #: A one-table stream's columns as its first planned offset had them: a later
        #: offset with other columns stops the query for a restart.
        self._stream_fields: list[pa.Field] | None = None
        self._warned_new = False
        self._shapes: dict[str, T] = {}  #: tables decoded from offsets' schemas, by JSON
        #: Tables whose DROP this process planned or passed: never captured again unless
        #: discovery finds one of the name anew (created again).
        self._dropped: set[TableId] = set()
        #: Captured tables a restart no longer found, kept with their columns from the
        #: offset until the log reaches their drop (``Dialect.follows_table_drops``).
        self._vanished: set[TableId] = set()
        self._channels: list[SignalChannel] | None = None
        self.head: P | None = None  #: the log's end when the last batch was planned

    # -- driver side -------------------------------------------------------------------
    @property
    def tables(self) -> dict[TableId, T]:
        """Captured tables, after validating the server (up front, with the fix in errors)."""
        if self._tables is None:
            self._tables = {t.table_id: t for t in self.dialect.discover()}
        return self._tables

    @property
    def envelope(self) -> bool:
        """Several tables share one stream in the envelope schema; one table is typed
        unless ``scan.envelope.enabled`` says otherwise. Decided once: the stream's schema
        stays when tables are dropped or created while it runs."""
        if self._envelope is None:
            self._envelope = len(self.tables) > 1 or self.settings.envelope
        return self._envelope

    def table_schema(self, table: T) -> pa.Schema:
        """The typed changelog schema of one table (its columns, change and metadata)."""
        return changelog_schema(self.dialect.arrow_fields(table), self.settings.metadata)

    def arrow_schema(self) -> pa.Schema:
        if self.envelope:
            return envelope_schema(self.settings.metadata)
        return self.table_schema(next(iter(self.tables.values())))

    def current_position(self) -> P:
        return self.dialect.current_position()

    def initial_offset(self) -> Offset:
        mode = self.settings.startup_mode
        if mode in ("initial", "snapshot"):
            position = self._columns_at_position()
            progress = {t: self._shaped(TableProgress(), t) for t in self.tables}
            return self._json(SourceOffset(position, progress, mode == "snapshot"))
        tables = self.tables
        done = {t: self._shaped(TableProgress.finished(), t) for t in tables}
        return self._json(SourceOffset(self.dialect.startup_position(mode), done))

    def _columns_at_position(self) -> P:
        """The log position now, with the tables discovered again so that their columns
        are the ones at that position: discovery and the position cannot be taken at one
        instant, so the log between the positions before and after discovery must hold no
        change of a captured table (else a change would be in the offset's columns but
        before its position, or after it and applied twice). Tried a few times; tables
        whose columns keep changing stop the start, saying so."""
        position = self.current_position()
        last = ""
        for _ in range(START_ATTEMPTS):
            before = position
            self._tables = None
            tables = self.tables
            position = self.current_position()
            if not self.dialect.follows_schema_changes or position <= before:
                return position
            change = self.dialect.schema_change(before, position, tables, False)
            if change is None:
                return position
            last = change.describe()
            log.info("%s changed while the stream started; discovering again", change.table_id)
        raise SchemaError(
            f"the captured tables' columns changed {START_ATTEMPTS} times while the stream "
            f"started (the last: {last}); start it again when they stay as they are"
        )

    def _shaped(self, progress: TableProgress, table_id: TableId) -> TableProgress:
        """``progress`` with the table's columns now, when the dialect follows schema
        changes: a restart then decodes its rows with the columns they had at the offset,
        whatever the table became since (docs/design.md, "Schema changes")."""
        if not self.dialect.follows_schema_changes:
            return progress
        schema = {"table": self.dialect.table_to_json(self.tables[table_id])}
        return dataclasses.replace(progress, schema=schema)

    def latest_offset(self, start: Offset, max_rows: int | None, cap: P | None = None) -> Offset:
        """The end of the next batch (:meth:`_plan`), planned again from ``start`` when the
        server drops the connection mid-way (``connect.max-retries``, the dialect's
        policy): a restart right after the connection's health check fails a query, not
        the stream. Retries spent, it stops with a SourceUnavailableError that says what
        to do. Planning only reads the database and starts from ``start``: doing it again
        is safe.

        While the ``pause.file`` exists it plans nothing (``start`` again: Spark starts no
        batch), so a stop can wait for the query to be idle instead of interrupting a
        batch's planning, which Spark has no call for."""
        pause = self.settings.pause_file
        if pause is not None and Path(pause).exists():
            return start
        return self.dialect.retries.run(
            "planning the next batch", lambda: self._plan(start, max_rows, cap), final=True
        )

    def _plan(self, start: Offset, max_rows: int | None, cap: P | None) -> Offset:
        """The end of the next batch: the log now (or ``cap``) and a bounded number of chunks.

        Every chunk of a batch is normalised to the batch's end position P by reading the
        log between P and its own read, so a batch must stay short: without
        ``maxRowsPerTrigger`` chunks are bounded by ``rows-per-batch``. For the same reason
        ``cap`` (availableNow's end) holds only once the snapshot is done: a snapshot
        normalised to the fixed cap would read ever longer windows as the run goes on. The
        run still ends: chunks run out, then the log stops at the cap.
        """
        signalled, recovery = self._signalled(self._offset(start))
        offset = self._forget_dropped(signalled)
        position = offset.log
        progress = dict(offset.tables)
        restarted = not self._checked_start
        if recovery is not None:
            return self._recovery_batch(offset, recovery, self._lost(position))
        if restarted:  # a restart from a checkpoint: is its log still there?
            self.dialect.ensure_available(position)
            self._checked_start = True
        self._check_stream_shape(offset, restarted)
        unfinished = offset.snapshotting
        budget = max_rows
        held: set[TableId] = set()
        if not offset.bounded:
            if budget is None:
                budget = self.settings.rows_per_batch
            now = self.head = self.current_position()
            if cap is not None and cap < now and not unfinished:
                now = cap
            if now > position:
                # while a snapshot runs the log gets half the batch, so neither starves
                share = None
                if max_rows is not None:
                    share = max(1, max_rows // 2) if unfinished else max_rows
                now, used = self.dialect.limit_log(position, now, share, sorted(progress))
                if max_rows is not None:
                    budget = max(max_rows - used, 1 if unfinished else 0)
            if now > position or self.dialect.drops_waiting:
                tables = self._tables_at(offset)
                change = self.dialect.schema_change(position, now, tables, self._watch_created)
                if change is not None and change.created:
                    if self._discover_again(change):
                        return self._plan(start, max_rows, cap)
                    now, change = change.after, None  # gone again: the batch passes it by
                if change is not None:
                    self._check_followable(change, progress, tables[change.table_id])
                    if change.boundary <= position:  # the change is next: a batch of its own
                        return self._schema_batch(offset, change)
                    now = change.boundary
                    # the batch before a change reads no chunk of the table: read now, after
                    # the change, its rows would have the new shape and be normalised
                    # across the change to the old one
                    held = {change.table_id, *change.dropped_tables}
            if now > position:
                position = now
        # the log is seen change-free up to its end now: every chunk read of an earlier
        # batch happened before now, so none crossed a change (see ChunkSpan)
        clear = offset.bounded or self.head is None or position >= self.head
        pending = self._columns_pending(offset, progress)
        held |= pending
        chunk_size = self.settings.chunk_size
        new_progress = dict(progress)
        planned: set[TableId] = set()
        for table_id in sorted(progress):
            if budget is not None and budget <= 0:
                break
            table_progress = progress[table_id]
            if not table_progress.reading or (table_progress.done and offset.paused):
                continue
            if table_id in held or table_id in self._vanished:  # vanished: reads nothing
                continue
            max_chunks = 1 << 30 if budget is None else max(1, math.ceil(budget / chunk_size))
            if _rereading(table_progress):  # a re-read on demand, or after a schema change
                chunks, after = self._plan_again(table_id, table_progress, max_chunks)
            else:
                chunks = self._planner(table_id).plan(table_progress, max_chunks)
                last = chunks[-1]
                after = (
                    TableProgress.finished()
                    if last.is_last
                    else TableProgress(started=True, cursor=last.hi)
                )
                after = dataclasses.replace(after, schema=table_progress.schema)
            span = ChunkSpan(chunks[0].lo, chunks[-1].hi)
            if not clear and table_progress.chunks is not None:
                span = _union(table_progress.chunks, span, self._order(self.tables[table_id]))
            after = dataclasses.replace(after, chunks=span)
            planned.add(table_id)
            new_progress[table_id] = after
            self._plans[_plan_key(table_id, table_progress, after)] = chunks
            if budget is not None:
                budget -= len(chunks) * chunk_size
        if clear:
            for table_id, table_progress in new_progress.items():
                if table_id in pending:  # a change the log shows later: chunks crossed it
                    continue
                if table_id not in planned and table_progress.chunks is not None:
                    new_progress[table_id] = dataclasses.replace(table_progress, chunks=None)
        return self._json(dataclasses.replace(offset, log=position, tables=new_progress))

    def _columns_pending(
        self, offset: SourceOffset[P], progress: Mapping[TableId, TableProgress]
    ) -> set[TableId]:
        """Tables whose chunks wait for a change the log does not show yet
        (:meth:`Dialect.columns_pending`)."""
        shapes = self._tables_at(offset)
        reading = {
            t: shapes[t]
            for t, p in progress.items()
            if t in shapes and (p.reading or p.chunks is not None)
        }
        return self.dialect.columns_pending(reading) if reading else set()

    def _plan_again(
        self, table_id: TableId, progress: TableProgress, max_chunks: int
    ) -> tuple[list[Chunk], TableProgress]:
        """The next chunks of a table's re-read, cut at its range's end."""
        again = progress.again
        assert again is not None
        planned = self._planner(table_id).plan(again.view, max_chunks)
        chunks, done = _cut(planned, again.hi, self._order(self.tables[table_id]))
        moved = dataclasses.replace(again, started=True, cursor=chunks[-1].hi, done=done)
        if done:
            log.info("re-read of %s (signal %s) done", table_id, again.signal)
        return chunks, dataclasses.replace(progress, again=moved)

    def _signalled(self, offset: SourceOffset[P]) -> tuple[SourceOffset[P], str | None]:
        """``offset`` with the signals written since it applied (``signal.file``), and
        without the re-reads its batch finished; and the name of a ``recover-lost-log``
        signal among them (:meth:`_recovery_batch`), if any. A signal is consumed by the
        batch whose end offset moves past its line: exactly once across restarts, and read
        again if the stream stops before Spark commits that batch."""
        tables = {
            t: dataclasses.replace(p, again=None) if p.again is not None and p.again.done else p
            for t, p in offset.tables.items()
        }
        paused, positions = offset.paused, dict(offset.signals)
        recovery = None
        for channel in self.channels:
            found, position = channel.read(positions.get(channel.name))
            if position != positions.get(channel.name):
                positions[channel.name] = position
            for one in found:
                if one.signal is None:
                    log.error("%s skipped: %s", one.where, one.problem)
                    continue
                if one.signal.type == RECOVER:
                    recovery = f"{one.signal.id}@{channel.name}:{one.mark}"
                    continue
                try:
                    paused = self._apply(one.signal, f"{channel.name}:{one.mark}", tables, paused)
                except SignalError as exc:
                    log.error("%s skipped: %s", one.where, exc)
        signalled = dataclasses.replace(offset, tables=tables, signals=positions, paused=paused)
        return signalled, recovery

    def _replay_readable(
        self,
        first: SourceOffset[P],
        last: SourceOffset[P],
        before: Mapping[TableId, TableProgress],
    ) -> bool:
        """Whether a batch planned before a restart (Spark replays it first, before it
        plans anything) can be read: its log from ``first`` on (chunks alone need the log
        around ``last``, where they are normalised to). When that log is lost, a
        ``recover-lost-log`` signal written after the batch was planned makes the batch
        read nothing: the batch after it is the recovery (:meth:`_recovery_batch`), which
        reads again every table the batch would have touched (``last``'s), so no row of
        it is missed. Without the signal the restart stops, saying what was lost and the
        way out."""
        reads_log = any(p.started or p.done for p in before.values())
        lost = self._lost(first.log if reads_log else last.log)
        if lost is None:
            return True
        for channel in self.channels:  # not consumed here: the recovery batch does that
            found, _ = channel.read(last.signals.get(channel.name))
            signal = next((f.signal for f in found if f.signal and f.signal.type == RECOVER), None)
            if signal is not None:
                log.warning(
                    "the batch planned before the restart (up to %s) reads nothing: %s. The "
                    "next batch takes signal %r (recover-lost-log)",
                    last.log,
                    lost.what or lost,
                    signal.id,
                )
                return False
        raise lost

    def _lost(self, position: P) -> PositionLostError | None:
        """Why the log from ``position`` can no longer be read, or None when it can."""
        try:
            self.dialect.ensure_available(position)
        except PositionLostError as exc:
            return exc
        return None

    def _recovery_batch(
        self, offset: SourceOffset[P], signal: str, lost: PositionLostError | None
    ) -> Offset:
        """The batch of a ``recover-lost-log`` signal (snapshot/recovery.py): no rows; the
        log goes on from its position now, with the tables discovered there, as a new
        stream starts; every table whose rows the stream had emitted starts its snapshot
        again, marked so the consumer empties its copy first (no row says what the lost
        log deleted, hence ``truncate.handling.mode: skip``, as for a TRUNCATE); a table
        the server no longer has is marked dropped.

        The signal is obeyed even where the log from ``offset`` is still there (``lost``
        None): a batch planned before a restart whose own log was lost read nothing
        (:meth:`_replay_readable`), and its end, this ``offset``, may be readable again.
        ``sparkcdc recover`` writes the signal only when the log is lost."""
        if getattr(self.settings, "truncate_handling", "fail") == "fail":
            raise SchemaError(
                f"signal {signal!r} (recover-lost-log): no row says which rows the lost log "
                "deleted, so the consumer must empty its copies of the tables read again "
                "(their entries in the batch's end offset say 'log_lost'). Set option "
                "'truncate.handling.mode' to 'skip' to take that on (a pipeline does it "
                "itself), or start from a new checkpoint"
            )
        before = self._tables_at(offset)
        position = self._columns_at_position()  # discovers the tables there
        what = f"recovery from {offset.log}, going on from {position}"
        mark = {"signal": signal, "at": position.to_json()}
        result = recovered(
            offset.tables, before, self.tables, self.dialect.table_to_json, mark, what
        )
        for table_id in result.gone:
            self._forget(table_id)
        for table_id in result.read_again:
            self._planners.pop(table_id, None)  # fresh key statistics
        self._checked_start = True
        log.warning(
            "signal %r: %s (%s). Read again, their copies emptied first: %s; not begun, "
            "nothing lost: %s; gone from the server: %s",
            signal,
            what,
            "its log is still on the server" if lost is None else lost.what or lost,
            ", ".join(str(t) for t in result.read_again) or "none",
            ", ".join(str(t) for t in result.untouched) or "none",
            ", ".join(str(t) for t in result.gone) or "none",
        )
        return self._json(dataclasses.replace(offset, log=position, tables=result.tables))

    @property
    def channels(self) -> list[SignalChannel]:
        """Where signals come from: ``signal.file``, and the channels the Spark binding
        adds (a Kafka topic: spark/kafka/signals.py)."""
        if self._channels is None:
            path = self.settings.signal_file
            self._channels = [FileSignals(Path(path))] if path else []
        return self._channels

    def _apply(
        self, signal: Signal, mark: str, tables: dict[TableId, TableProgress], paused: bool
    ) -> bool:
        """Apply one signal to ``tables`` (in place); returns whether re-reads are paused."""
        if signal.type in (PAUSE, RESUME):
            state = "paused" if signal.type == PAUSE else "go on"
            log.info("signal %r: re-reads %s", signal.id, state)
            return signal.type == PAUSE
        named = signal.tables(tables)
        if signal.type == STOP:
            for table_id in named:
                again = tables[table_id].again
                if again is not None and again.signal == SCHEMA_CHANGE_READ:
                    log.info(
                        "signal %r: %s is read again after a schema change, which no signal "
                        "stops (rows would be missing)",
                        signal.id,
                        table_id,
                    )
                elif again is not None:
                    tables[table_id] = dataclasses.replace(tables[table_id], again=None)
                    log.info("signal %r: re-read of %s stopped", signal.id, table_id)
            return paused
        changes = {}
        for table_id in named:
            if not tables[table_id].done:
                log.info("signal %r: %s is still in its first snapshot", signal.id, table_id)
                continue
            lo, hi = self._key_range(signal, table_id)
            running = tables[table_id].again
            if running is not None and running.signal == SCHEMA_CHANGE_READ and not running.done:
                # the range a schema change left to read again stays in the new re-read
                rest = running.view.cursor if running.started else running.lo
                order = self._order(self.tables[table_id])
                both = _union(ChunkSpan(lo, hi), ChunkSpan(rest, running.hi), order)
                lo, hi = both.lo, both.hi
            changes[table_id] = Resnapshot(f"{signal.id}@{mark}", lo, hi)
        for table_id, again in changes.items():  # the whole signal checked before any of it
            tables[table_id] = dataclasses.replace(tables[table_id], again=again)
            self._planners.pop(table_id, None)  # fresh key statistics for the re-read
            log.info("signal %r: re-reading %s%s", signal.id, table_id, _range_text(again))
        return paused

    def _key_range(self, signal: Signal, table_id: TableId) -> tuple[Key, Key]:
        """The signal's key range for the table as chunk-key values, checked."""
        bounds = signal.key_range(table_id)
        if bounds.lo is None and bounds.hi is None:
            return None, None
        table = self.tables[table_id]
        field = self.dialect.arrow_fields(table)[table.chunk_key_index]
        lo, hi = (key_from_json(v, field.type, field.name) for v in (bounds.lo, bounds.hi))
        order = self._order(table)
        if lo is not None and hi is not None and order.sort_key(lo) >= order.sort_key(hi):
            raise SignalError(f"signal {signal.id!r}: the key range of {table_id} is empty")
        return lo, hi

    def _read_again(self, table_id: TableId, current: TableProgress) -> TableProgress:
        """The table's progress in the batch of a change of its columns: the chunks read
        since the log was last seen change-free (``current.chunks``) may have been read
        after the change, when they cannot be read in their batch's shape, and then their
        partitions emitted nothing (ChunkCrossedChange). So their key range is read again
        in the new shape, as a re-read (upserts; a running re-read goes on from there),
        while the table's own cursor stays: every log change of the keys below it, deletes
        included, is still emitted."""
        span = current.chunks
        if span is None:
            return current
        current = dataclasses.replace(current, chunks=None)
        order = self._order(self.tables[table_id])
        log.info(
            "%s: reading chunk keys %r to %r again after its schema change",
            table_id,
            span.lo,
            span.hi,
        )
        again = current.again
        if again is not None and not again.done:
            wider = _union(ChunkSpan(again.lo, again.hi), span, order)
            new = Resnapshot(again.signal, span.lo, wider.hi)
        else:
            new = Resnapshot(SCHEMA_CHANGE_READ, span.lo, span.hi)
        return dataclasses.replace(current, again=new)

    @property
    def _watch_created(self) -> bool:
        """Whether tables created while the stream runs are captured at once: with
        ``scan.newly-added-table.enabled``, in the envelope (a typed stream's schema is one
        table's; it captures them from its next start)."""
        return self.settings.newly_added_tables and self.envelope

    def _discover_again(self, change: SchemaChange[P, T]) -> bool:
        """A table to capture was created (``change``): discover the tables again, and
        say whether it is captured now. The offset then takes it as a newly added table
        (:meth:`_reconcile`): a snapshot from the batch's start, so whatever it got since
        its creation is read once, normalised like any chunk, and its later log changes
        follow its cursor. A table dropped again since has nothing to capture.

        Discovery only adds here: a captured table it no longer finds was dropped or
        renamed further on in the log, where the scan stops at that statement (were it
        left out now, its changes up to there would be lost)."""
        known = self.tables
        self._discover_created()
        self._warned_new = True  # logged here, table by table
        added = sorted(set(self.tables) - set(known))
        log.info(
            "%s created at %s: capturing %s while the others continue",
            change.table_id,
            change.boundary,
            ", ".join(str(t) for t in added) or "nothing (it is gone again)",
        )
        return change.table_id in self.tables

    def _schema_batch(self, offset: SourceOffset[P], change: SchemaChange[P, T]) -> Offset:
        """The batch that is only ``change``: the position moves past it and the table's
        entry takes its new columns (the batch has no rows, see :meth:`partitions`)."""
        assert change.table is not None
        if change.dropped_tables:
            return self._drop_batch(offset, change)
        progress = dict(offset.tables)
        progress[change.table_id] = self._read_again(change.table_id, progress[change.table_id])
        if change.swapped:
            progress[change.table_id] = _read_all_again(progress[change.table_id])
            log.info("%s was swapped: its rows are read again", change.table_id)
        elif change.rewritten:
            progress[change.table_id] = _read_all_again(progress[change.table_id])
            log.info(
                "schema change of %s gave the rows there values the log does not carry "
                "(columns %s): its rows are read again",
                change.table_id,
                ", ".join(change.rewritten),
            )
        schema: dict[str, Any] = {
            "table": self.dialect.table_to_json(change.table),
            "change": change.statement,
            **change.moves.to_json(),
        }
        if change.truncated:  # no row says so: the position tells this truncate apart
            schema["truncated"] = change.after.to_json()
        progress[change.table_id] = dataclasses.replace(progress[change.table_id], schema=schema)
        log.info("schema change of %s: a batch of its own", change.describe())
        return self._json(dataclasses.replace(offset, log=change.after, tables=progress))

    def _drop_batch(self, offset: SourceOffset[P], change: SchemaChange[P, T]) -> Offset:
        """The batch of a DROP TABLE / DATABASE: each dropped table's entry says so
        (``"table_dropped"``, the position after the statement, next to its columns), for
        the consumer (no row says so); the next batch forgets them (:meth:`_forget_dropped`).
        Chunks of theirs read after the drop crossed it and emitted nothing; no re-read
        follows: the rows are gone."""
        progress = dict(offset.tables)
        shapes = self._tables_at(offset)
        marker = change.after.to_json()
        for table_id in change.dropped_tables:
            schema = {
                "table": self.dialect.table_to_json(shapes[table_id]),
                "change": change.statement_of(table_id),
                TABLE_DROPPED: marker,
            }
            progress[table_id] = dataclasses.replace(TableProgress.finished(), schema=schema)
            self._forget(table_id)
        log.info("%s: a batch of its own; no longer captured", change.describe())
        return self._json(dataclasses.replace(offset, log=change.after, tables=progress))

    def _forget_dropped(self, offset: SourceOffset[P]) -> SourceOffset[P]:
        """``offset`` without the tables its batch dropped. A table of the same name
        discovered since (a restart after it was created again) is a new table, taken as
        ``scan.newly-added-table.enabled`` says."""
        dropped = [t for t, p in offset.tables.items() if p.dropped]
        if not dropped:
            return offset
        for table_id in dropped:
            if table_id in self._vanished:  # kept from the offset to reach this drop
                self._forget(table_id)
        kept = {t: p for t, p in offset.tables.items() if not p.dropped}
        offset = dataclasses.replace(offset, tables=kept)
        if not self.dialect.logs_table_creates:
            self._discover_created()
        again = [t for t in dropped if t in self.tables and t not in self._dropped]
        return self._reconcile(offset, [], again) if again else offset

    def _discover_created(self) -> None:
        """Tables created since discovery, found by discovering again: for a log that
        shows no CREATE TABLE (PostgreSQL), a table created again under a dropped one's
        name, in place already when the drop is reported. The tables known keep their
        shapes."""
        known = self.tables
        self._tables = None
        found = self.tables
        self._tables = {**known, **{t: v for t, v in found.items() if t not in known}}
        self._dropped -= set(found)

    def _forget(self, table_id: TableId) -> None:
        """The table was dropped: no longer captured (discovery would not find it now)."""
        self.tables.pop(table_id, None)
        self._planners.pop(table_id, None)
        self._orders.pop(table_id, None)
        self._vanished.discard(table_id)
        self._dropped.add(table_id)

    def _kept_until_dropped(self, offset: SourceOffset[P], gone: list[TableId]) -> list[TableId]:
        """Of the captured tables discovery did not find, keep those the table options still
        match, with their columns from the offset: they were dropped (or renamed) after
        the offset's position, and their changes up to that statement are read, then the
        drop (or the rename away) is a batch of its own. Returns the others, gone because
        the options changed."""
        if not self.dialect.follows_table_drops:
            return gone
        others = []
        for table_id in gone:
            schema = offset.tables[table_id].schema
            if schema is None or not self.dialect.matches(table_id):
                others.append(table_id)
                continue
            self.tables[table_id] = self.dialect.table_from_json(schema["table"])
            self._vanished.add(table_id)
            log.info(
                "%s is no longer on the server: its changes up to its drop are read with its "
                "columns from the checkpoint",
                table_id,
            )
        return others

    def _check_followable(
        self, change: SchemaChange[P, T], progress: Mapping[TableId, TableProgress], old: T
    ) -> None:
        # a connector without the option finds no truncates to follow
        skip = getattr(self.settings, "truncate_handling", "fail") != "fail"
        if change.dropped_tables and not (skip and self.envelope):
            names = ", ".join(str(t) for t in change.dropped_tables)
            raise SchemaError(
                f"{_verb(change.statement)} of {names} ({change.describe()}): "
                + (
                    "no row events say which rows it removed, so the changelog would keep "
                    "them. Set option 'truncate.handling.mode' to 'skip' to go on past it "
                    "(the offset records the drop; a pipeline applies it as "
                    "'schema.change.behavior' says)"
                    if not skip
                    else "a one-table stream ends with its table. Capture it together with "
                    "other tables (or set 'scan.envelope.enabled') to go on past the drop"
                )
                + ", or start the stream again from a new checkpoint (a new snapshot)"
            )
        if change.truncated and not skip:
            raise SchemaError(
                f"TRUNCATE of {change.describe()}: no row events say which rows it removed, so "
                "the changelog would keep them. Set option 'truncate.handling.mode' to 'skip' "
                "to go on past it (a pipeline applies it as 'schema.change.behavior' says), "
                "or start the stream again from a new checkpoint (a new snapshot)"
            )
        if change.table is None:
            raise SchemaError(
                f"schema change of {change.describe()}: {change.problem}. It cannot be "
                "followed; start the stream again from a new checkpoint (a new snapshot)"
            )
        if not progress[change.table_id].done and self._moves_chunk_key(old, change):
            raise SchemaError(
                f"schema change of {change.describe()} while the table's snapshot runs "
                "changes its chunk key column, which the snapshot's cursor is a value of. "
                "Start the stream again from a new checkpoint (a new snapshot), or make such "
                "changes once the table's snapshot is done"
            )

    def _moves_chunk_key(self, old: T, change: SchemaChange[P, T]) -> bool:
        """Whether the change renames or retypes the table's chunk key column (``old``:
        the table before it)."""
        new = change.table
        assert new is not None

        def key(table: T) -> tuple[str, pa.DataType]:
            index = table.chunk_key_index
            return table.column_names[index], self.dialect.arrow_fields(table)[index].type

        return key(old) != key(new)

    def _check_stream_shape(self, offset: SourceOffset[P], restarted: bool) -> None:
        """A one-table stream's Spark schema was fixed when the query started: rows of
        other columns stop it, to be restarted with them (RestartForSchemaError). A query
        that starts with other columns than the offset's (the table changed again after
        the offset's position) cannot carry the rows in between at all."""
        if self.envelope:
            return
        ((table_id, table),) = self.tables.items()
        progress = offset.tables.get(table_id)
        if progress is None or progress.schema is None:
            return
        shaped = self._tables_at(offset)[table_id]
        fields = self.dialect.arrow_fields(shaped)
        if self._stream_fields is None:
            self._stream_fields = self.dialect.arrow_fields(table)
        if fields == self._stream_fields:
            return
        if restarted:
            if _names_and_types(fields) == _names_and_types(self._stream_fields):
                # nullability aside: pgoutput's description of a changed table lacks it,
                # so a restart cannot make the two agree; the query's columns from now on
                self._stream_fields = fields
                return
            change = progress.schema.get("change")
            raise SchemaError(
                f"the columns of {table_id} at {offset.log} ({', '.join(shaped.column_names)}"
                f"{f', after {change}' if change else ''}) are not its columns now "
                f"({', '.join(table.column_names)}): it changed again after that position, "
                "and a one-table stream cannot carry rows of two shapes. Capture it together "
                "with another table (several tables follow any number of changes) or start "
                "from a new checkpoint"
            )
        raise RestartForSchemaError(
            f"the columns of {table_id} changed ({progress.schema.get('change', '')}), "
            f"{', '.join(shaped.column_names)} from {offset.log} on: restart the query to "
            "continue with them (nothing is lost or repeated)"
        )

    def _tables_at(self, offset: SourceOffset[P]) -> dict[TableId, T]:
        """The captured tables with the columns their rows have at ``offset``."""
        tables = dict(self.tables)
        for table_id, progress in offset.tables.items():
            if progress.schema is None or table_id not in tables or progress.dropped:
                continue
            data = progress.schema["table"]
            key = repr(data)
            if key not in self._shapes:
                self._shapes[key] = self.dialect.table_from_json(data)
            tables[table_id] = self._shapes[key]
        return tables

    def partitions(self, start: Offset, end: Offset) -> list[PartitionSpec]:
        first, last = self._offset(start), self._offset(end)
        start_pos, end_pos = first.log, last.log
        after = last.tables
        # a table dropped at the start has nothing to read; one of its name discovered since
        # is a new table, created again (as :meth:`_forget_dropped` takes it)
        before = {
            t: self._shaped(TableProgress(), t) if p.dropped else p
            for t, p in first.tables.items()
            if not p.dropped or t in self.tables
        }
        specs: list[PartitionSpec] = []
        shapes = self._tables_at(first)
        changed = any(p.schema != before[t].schema for t, p in after.items() if t in before)
        if changed:  # a schema change's own batch: its range holds nothing else
            return specs
        if not self._checked_start and not self._checked_replay:
            self._checked_replay = True
            if not self._replay_readable(first, last, before):
                return specs
        # the positions are of the server connected now (carried over from another one
        # by ``_offset`` when the checkpoint was made elsewhere)
        origin = self.dialect.log_origin()
        if end_pos > start_pos and any(p.started or p.done for p in before.values()):
            live = {t: shapes[t] for t, p in before.items() if p.started or p.done}
            bounds = self.dialect.split_log(start_pos, end_pos)
            for lo, hi in itertools.pairwise(bounds):
                specs.append(LogRead(lo, hi, live, before, len(specs), self.envelope, origin))
        reads: list[tuple[T, list[Chunk], bool]] = []
        for table_id in sorted(after):
            if _reads(before.get(table_id, TableProgress())) == _reads(after[table_id]):
                continue
            key = _plan_key(table_id, before[table_id], after[table_id])
            chunks = self._plans.pop(key, None)
            # a re-read (on demand, or after a schema change): upserts
            again = _rereads(before[table_id], after[table_id])
            if chunks is None:  # planned in another process, or replayed after a restart
                chunks = self._chunks_between(table_id, before[table_id], after[table_id])
            reads.append((shapes[table_id], chunks, again))
        per_partition = max(1, self.settings.rows_per_partition // self.settings.chunk_size)
        limit = self.dialect.max_readers()
        if limit is not None:
            counts = [len(chunks) for _, chunks, _ in reads]
            per_partition = widened(per_partition, counts, max(1, limit - len(specs)))
        rests: list[tuple[T, tuple[Chunk, ...], bool]] = []
        for table, chunks, again in reads:
            for i in range(0, len(chunks), per_partition):
                part = tuple(chunks[i : i + per_partition])
                if len(part) < per_partition:  # shares a partition with other tables' rests
                    rests.append((table, part, again))
                    continue
                specs.append(
                    ChunkRead(table, part, end_pos, len(specs), self.envelope, again, origin)
                )
        specs += self._packed(rests, per_partition, end_pos, len(specs), origin)
        self.dialect.check_readers(len(specs))
        return specs

    def _packed(
        self,
        rests: list[tuple[T, tuple[Chunk, ...], bool]],
        per_partition: int,
        target: P,
        first: int,
        origin: str | None,
    ) -> list[PartitionSpec]:
        """Partitions of up to ``per_partition`` chunks from the tables' last, partial
        groups, in order: a table alone keeps a partition of its own."""
        bins: list[list[tuple[T, tuple[Chunk, ...], bool]]] = []
        used = 0
        for rest in rests:
            if not bins or used + len(rest[1]) > per_partition:
                bins.append([])
                used = 0
            bins[-1].append(rest)
            used += len(rest[1])
        specs: list[PartitionSpec] = []
        for number, group in enumerate(bins, first):
            reads = tuple(
                ChunkRead(t, c, target, number, self.envelope, again, origin)
                for t, c, again in group
            )
            specs.append(reads[0] if len(reads) == 1 else SmallReads(reads, number))
        return specs

    def _chunks_between(
        self, table_id: TableId, before: TableProgress, after: TableProgress
    ) -> list[Chunk]:
        """The chunks a batch read: between the snapshot cursors, or between the re-read
        cursors of a done table (from the range's start when the re-read is new in the
        batch; none when it was stopped or had finished before the batch)."""
        planner = self._planner(table_id)
        if not _rereads(before, after):
            return planner.chunks_between(_cursor(before), _cursor(after))
        new = after.again
        if new is None or not new.started:
            return []
        old = before.again
        if old is not None and old.signal == new.signal and not old.done:
            start = old.view
        else:
            start = Resnapshot(new.signal, new.lo, new.hi).view
        return planner.chunks_between(start, new.end_view)

    def snapshot_partitions(self) -> list[PartitionSpec]:
        """All chunks of every table, normalised to the log position now (batch reads), or
        to the dialect's fixed snapshot target (an earlier position, still in the log)."""
        progress = {t: TableProgress() for t in self.tables}  # validates the server first
        position = self.dialect.snapshot_target() or self.current_position()
        start = self._json(SourceOffset(position, progress))
        bounded = self._json(SourceOffset(position, progress, bounded=True))
        return self.partitions(start, self.latest_offset(bounded, None))

    def _json(self, offset: SourceOffset[P]) -> Offset:
        """An offset as Spark stores it, with the server its log position was read from
        (``origin``) when the dialect names servers: a restart connected to another server
        (a replica failed over) translates the position or fails, never reads a position
        of one server on another (:meth:`Dialect.log_position`)."""
        data = offset.to_json()
        origin = self.dialect.log_origin()
        if origin is not None:
            data["origin"] = origin
        return data

    def _offset(self, data: Offset) -> SourceOffset[P]:
        """An offset's typed form, for the tables captured now. Tables that match since
        the checkpoint was made, or match no more, are reconciled as
        ``scan.newly-added-table.enabled`` says (see :meth:`_reconcile`)."""
        offset = SourceOffset.from_json(data, lambda _: self.dialect.log_position(data))
        captured = {t for t, p in offset.tables.items() if not p.dropped}
        gone = sorted(captured - set(self.tables) - self._dropped)
        if gone:
            gone = self._kept_until_dropped(offset, gone)
        new = sorted(set(self.tables) - set(offset.tables))
        if not gone and not new:
            return offset
        return self._reconcile(offset, gone, new)

    def _reconcile(
        self, offset: SourceOffset[P], gone: list[TableId], new: list[TableId]
    ) -> SourceOffset[P]:
        """With ``scan.newly-added-table.enabled``, a new table starts its snapshot at this
        offset like any table of an ``initial`` start (its chunks are normalised to batch
        ends; its log changes are emitted once its cursor covers their keys), so the
        others go on from the checkpoint and nothing is read twice; a table that no longer
        matches is dropped from the offset. Without it, new tables are not captured
        (warned once) and a missing one fails with the fix."""
        names = ", ".join(str(t) for t in gone)
        if not self.settings.newly_added_tables:
            if gone:
                raise SchemaError(
                    f"the checkpoint captures {names}, which the table options no longer "
                    "match (dropped, renamed or options changed): restore the table or the "
                    "options, set 'scan.newly-added-table.enabled' to 'true' to stop "
                    "capturing it (its target keeps its rows), or start a new checkpoint"
                )
            if not self._warned_new:
                self._warned_new = True
                log.warning(
                    "tables %s match the table options but were not there when the checkpoint "
                    "was made: they are not captured (set 'scan.newly-added-table.enabled' to "
                    "'true' to snapshot them while the others continue)",
                    ", ".join(str(t) for t in new),
                )
            return offset
        tables = {t: p for t, p in offset.tables.items() if t not in gone}
        tables.update({t: self._shaped(TableProgress(), t) for t in new})
        if not self._warned_new:
            self._warned_new = True
            if new:
                log.info(
                    "newly added tables %s: snapshotting them while the others continue from "
                    "the checkpoint",
                    ", ".join(str(t) for t in new),
                )
            if gone:
                log.warning(
                    "tables %s are no longer captured (their targets keep their rows)", names
                )
        return dataclasses.replace(offset, tables=tables)

    def _order(self, table: T) -> KeyOrder:
        """The table's key order. Taken from the table given, not :attr:`tables`: an
        executor's copy of this source was made when the query started, before tables
        created since were discovered."""
        table_id = table.table_id
        if table_id not in self._orders:
            self._orders[table_id] = self.dialect.key_order(table)
        return self._orders[table_id]

    def _planner(self, table_id: TableId) -> ChunkPlanner:
        if table_id not in self._planners:
            table, dialect = self.tables[table_id], self.dialect
            self._planners[table_id] = ChunkPlanner(
                lambda: dialect.key_stats(table),
                lambda lo, size: dialect.next_chunk_end(table, lo, size),
                self._order(table),
                self.settings.chunk_size,
                (self.settings.factor_lower, self.settings.factor_upper),
                str(table_id),
                table.column_names[table.chunk_key_index],
            )
        return self._planners[table_id]

    def commit(self, end: Offset) -> None:
        """Spark committed the batches up to ``end``: the dialect may release log it keeps."""
        self.dialect.committed(self.dialect.log_position(end))

    def close(self) -> None:
        self.dialect.close()
        self._planners.clear()

    def __getstate__(self) -> dict[str, Any]:
        # travels to executors: connections and caches stay behind
        return {"dialect": self.dialect, "_tables": self._tables, "_envelope": self._envelope}

    def __setstate__(self, state: dict[str, Any]) -> None:
        IncrementalSource.__init__(self, state["dialect"])
        self._tables = state["_tables"]
        self._envelope = state.get("_envelope")

    # -- executor side -----------------------------------------------------------------
    def read(self, spec: PartitionSpec) -> Iterator[pa.RecordBatch]:
        first = spec.parts[0] if isinstance(spec, SmallReads) else spec
        self.dialect.check_origin(first.origin)
        if isinstance(spec, ChunkRead):
            yield from self._read_chunks(spec)
        elif isinstance(spec, SmallReads):
            for part in spec.parts:
                yield from self._read_chunks(part)
        else:
            yield from self._read_log(spec)

    def _builder(self, table: T, envelope: bool) -> BatchBuilder:
        constants = self.dialect.table_metadata(table)
        if envelope:
            return EnvelopeBatchBuilder(
                envelope_schema(self.settings.metadata),
                table.table_id,
                table.column_names,
                [f.type for f in self.dialect.arrow_fields(table)],
                table.key_indexes,
                constants,
            )
        schema = self.table_schema(table)
        return ChangelogBatchBuilder(schema, len(table.column_names), table.table_id, constants)

    def _read_chunks(self, spec: ChunkRead[P, T]) -> Iterator[pa.RecordBatch]:
        """The chunks' rows as of the batch's end. Chunks whose table changed its columns
        between the batch's end and their read emit nothing: the change's own batch has
        their key range read again in the new shape (progress.py, ``ChunkSpan``)."""
        builder = self._builder(spec.table, spec.envelope)
        at = dt.datetime.now(dt.timezone.utc)
        chunks = self.dialect.read_chunks(spec.table, spec.chunks, spec.target, spec.reader)
        kind = ChangeType.UPDATE_POSTIMAGE if spec.again else ChangeType.INSERT
        try:
            for rows in chunks:
                yield builder.snapshot_batch(rows, spec.target.version, at, kind)
        except ChunkCrossedChange as exc:
            log.info(
                "chunks of %s from %r: %s; they are read again after the change",
                spec.table.table_id,
                spec.chunks[0].lo,
                exc,
            )

    def _read_log(self, spec: LogRead[P, T]) -> Iterator[pa.RecordBatch]:
        """One log partition's changes as Arrow batches of at least ``MIN_BATCH_ROWS`` rows
        (Spark pays per batch). This is the executor's hot path after decoding: a table
        whose snapshot is done takes whole rows events (``ChangeBlock``) straight into
        Arrow columns (``block_batch``), with no object or key test per row; for the typed
        changelog the dialect may write those columns itself (``ChangeBlock.sunk``, no
        tuples). A table whose snapshot is running goes change by change through the key
        predicate."""
        live = spec.tables
        builders = {t: self._builder(table, spec.envelope) for t, table in live.items()}
        emitted = {t: self._emitted_predicate(table, spec.progress[t]) for t, table in live.items()}
        done = {t for t in live if spec.progress[t].done}
        blocks: dict[TableId, list[ChangeBlock]] = {t: [] for t in live}
        counts = dict.fromkeys(live, 0)
        pending: dict[TableId, list[tuple[RowChange, Emitted]]] = {t: [] for t in live}
        size = max(self.settings.fetch_size, MIN_BATCH_ROWS)
        # done tables of the typed changelog: the dialect may write Arrow buffers, no tuples
        typed = {
            t: b.data_types
            for t, b in builders.items()
            if t in done and isinstance(b, ChangelogBatchBuilder)
        }
        stream = self.dialect.read_log(live, spec.start, spec.end, spec.reader, typed)

        def batch(table: TableId) -> pa.RecordBatch:
            out, builder = blocks[table], builders[table]
            if out[0].sunk is not None:
                assert isinstance(builder, ChangelogBatchBuilder)  # only these get sinks
                built = builder.block_batch(out, stream.take(table))
            else:
                built = builder.block_batch(out)
            out.clear()
            counts[table] = 0
            return built

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

    def _emitted_predicate(self, table: T, progress: TableProgress) -> Callable[[Row], bool]:
        """Whether a row's key had been emitted when the batch started (log events are
        emitted only for those keys)."""
        if progress.done or not progress.started:  # no key comparison needed
            return lambda row: progress.done
        order = self._order(table)
        k = table.chunk_key_index

        def emitted(row: Row) -> bool:
            return order.emitted(row[k], progress)

        return emitted


def _cut(chunks: list[Chunk], hi: Key, order: KeyOrder) -> tuple[list[Chunk], bool]:
    """``chunks`` up to the range end ``hi`` (None: the table's end), and whether they
    reach it."""
    if hi is None:
        return chunks, chunks[-1].is_last
    out: list[Chunk] = []
    for chunk in chunks:
        if chunk.hi is None or order.sort_key(chunk.hi) >= order.sort_key(hi):
            out.append(Chunk(chunk.lo, hi))
            return out, True
        out.append(chunk)
    return out, False


#: How often the start discovers the tables again while their columns change under it.
START_ATTEMPTS = 5
#: The ``signal`` of a re-read a schema change started (ChunkSpan).
SCHEMA_CHANGE_READ = "schema-change"


def _union(a: ChunkSpan, b: ChunkSpan, order: KeyOrder) -> ChunkSpan:
    """The smallest key range holding both (None: open)."""

    def lower(x: Key, y: Key) -> Key:
        return None if x is None or y is None else min(x, y, key=order.sort_key)

    def upper(x: Key, y: Key) -> Key:
        return None if x is None or y is None else max(x, y, key=order.sort_key)

    return ChunkSpan(lower(a.lo, b.lo), upper(a.hi, b.hi))


def _names_and_types(fields: Sequence[pa.Field]) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in fields]


def _reads(progress: TableProgress) -> TableProgress:
    """What decides a batch's chunk reads (not the chunk span bookkeeping)."""
    return dataclasses.replace(progress, chunks=None)


def _rereading(progress: TableProgress) -> bool:
    """A re-read runs: its chunks come before the snapshot's."""
    return progress.again is not None and not progress.again.done


def _rereads(before: TableProgress, after: TableProgress) -> bool:
    """Whether the batch from ``before`` to ``after`` read chunks of a re-read (a done
    table reads no others; a table in its snapshot reads a re-read's chunks first)."""
    return before.done or (after.again is not None and after.again != before.again)


def _cursor(progress: TableProgress) -> TableProgress:
    """The snapshot's own cursor (what its chunks are planned from)."""
    return TableProgress(progress.started, progress.cursor, progress.done)


def _read_all_again(current: TableProgress) -> TableProgress:
    """The progress of a table whose rows changed without the log saying how (swapped in
    by an online schema change tool, or values an ALTER filled in or converted): every
    key the snapshot has read (all of them once it is done) is read again. A running
    re-read's signal goes on with the wider range."""
    if not current.started:
        return current  # the snapshot reads the new table from its start
    hi = None if current.done else current.cursor
    signal = current.again.signal if _rereading(current) and current.again else SCHEMA_CHANGE_READ
    return dataclasses.replace(current, again=Resnapshot(signal, None, hi))


def _range_text(again: Resnapshot) -> str:
    if again.lo is None and again.hi is None:
        return ""
    return f" (chunk keys from {again.lo!r} to {again.hi!r})"


def _plan_key(
    table_id: TableId, before: TableProgress, after: TableProgress
) -> tuple[TableId, str, str]:
    return (table_id, repr(before.to_json()), repr(after.to_json()))


def _verb(statement: str) -> str:
    """DROP, or RENAME for a statement that renames a table away (RENAME / ALTER TABLE)."""
    words = re.sub(r"/\*.*?\*/", " ", statement, flags=re.S).split(None, 1)
    return "DROP" if words and words[0].upper() == "DROP" else "RENAME"


def chunk_partitions(counts: Sequence[int], per_partition: int) -> int:
    """How many chunk partitions :meth:`IncrementalSource.partitions` makes of tables with
    ``counts`` chunks: each table's full groups of ``per_partition``, then its partial
    last group packed with the next tables' (in order, a new partition when one is full)."""
    full = sum(n // per_partition for n in counts)
    bins = used = 0
    for rest in (n % per_partition for n in counts):
        if not rest:
            continue
        if not bins or used + rest > per_partition:
            bins, used = bins + 1, 0
        used += rest
    return full + bins


def widened(per_partition: int, counts: Sequence[int], readers: int) -> int:
    """Chunks per partition, at least ``per_partition``, such that the chunk partitions
    are at most ``readers``: a database that must tell concurrent readers apart (MySQL's
    server ids) gets bigger partitions rather than two readers under one id, which
    would knock each other off the server."""
    total = sum(counts)
    if total == 0:
        return per_partition
    wider = max(per_partition, -(-total // readers))
    while chunk_partitions(counts, wider) > readers:
        wider += max(1, wider // 4)
    return wider

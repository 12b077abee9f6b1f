"""Planning the next batch (``latestOffset``), as a sequence of named steps.

A batch from offset A goes (1) through the log from A's position to B's, and (2) over a
bounded number of chunks from each unfinished table's cursor, all normalised to B's
position. :meth:`BatchPlanner.plan` decides B, top-down:

1. the start offset, reconciled with the tables captured now (``TableCatalog.parse``);
2. the signals written since (``Signals.apply``), and the tables its batch dropped gone;
3. a ``recover-lost-log`` signal the server bears out (the log from A is gone): the
   recovery batch (``LostLog``); else (a signal refused too), on a restart, the log from
   A must still be there;
4. a one-table stream stops for a restart when its table's columns changed;
5. the log's end: now (or availableNow's cap), within the read limit (``_log_end``);
6. the first schema change in the range: a created table is discovered and the batch
   planned again; a change right at A is a batch of its own (``SchemaBatches``); a later
   one ends the batch before it, whose chunks leave the changed table alone;
7. chunks with the rest of the budget (``ChunkPlans``), except of tables whose columns
   changed where the log does not show it yet.

Each step is a piece of its own (snapshot/catalog.py, signalling.py, lost_log.py,
schema_batches.py, stream_shape.py, chunk_plans.py), testable without the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Set
from typing import Any, Generic

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import PendingColumns
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.chunk_plans import ChunkPlans
from sparkcdc.snapshot.dialect import P, T
from sparkcdc.snapshot.lost_log import LostLog
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.schema_batches import SchemaBatches, held_by
from sparkcdc.snapshot.signalling import Signals
from sparkcdc.snapshot.stream_shape import StreamShape


class BatchPlanner(Generic[P, T]):
    """The driver's planning of batch ends over the catalog's tables."""

    def __init__(
        self,
        catalog: TableCatalog[P, T],
        chunks: ChunkPlans[P, T],
        signals: Signals[P, T],
        lost_log: LostLog[P, T],
    ) -> None:
        self.catalog = catalog
        self.dialect = catalog.dialect
        self.settings = catalog.settings
        self.chunks = chunks
        self.signals = signals
        self.lost_log = lost_log
        self.schema = SchemaBatches(catalog)
        self.shape = StreamShape(catalog)
        self.head: P | None = None  #: the log's end when the last batch was planned

    def plan(
        self, start: Mapping[str, Any], max_rows: int | None, cap: P | None
    ) -> SourceOffset[P]:
        """The end of the next batch: the log now (or ``cap``) and a bounded number of
        chunks.

        Every chunk of a batch is normalised to the batch's end position P by reading the
        log between P and its own read, so a batch must stay short: without
        ``maxRowsPerTrigger`` chunks are bounded by ``rows-per-batch``. For the same reason
        ``cap`` (availableNow's end) holds only once the snapshot is done: a snapshot
        normalised to the fixed cap would read ever longer windows as the run goes on. The
        run still ends: chunks run out, then the log stops at the cap.
        """
        offset, recovery = self.signals.apply(self.catalog.parse(start))
        offset = self.catalog.forget_dropped(offset)
        if recovery is not None and self.lost_log.accepts(offset, recovery):
            return self.lost_log.recovery_batch(offset, recovery)
        restarted = self.lost_log.check_restart(offset.log)
        self.shape.check(offset, restarted)
        if offset.bounded:  # a snapshot-only stream: its log position stays
            return self._with_chunks(offset, offset.log, max_rows, set())
        end, budget = self._log_end(offset, max_rows, cap)
        change = self.schema.first_change(offset, end, moved=end > offset.log)
        if change is not None and change.created:
            if self.catalog.discover_again(change):
                return self.plan(start, max_rows, cap)  # the offset takes the new table
            if change.after <= offset.log:  # found in the catalog at the start (no CREATE
                # in the log), and discovery left it out: planned again, it is not offered
                return self.plan(start, max_rows, cap)
            end, change = change.after, None  # gone again: the batch passes it by
        if change is None:
            return self._with_chunks(offset, end, budget, set())
        self.schema.check_followable(change, offset)
        if change.boundary <= offset.log:  # the change is next: a batch of its own
            return self.schema.batch(offset, change)
        return self._with_chunks(offset, change.boundary, budget, held_by(change))

    def _log_end(
        self, offset: SourceOffset[P], max_rows: int | None, cap: P | None
    ) -> tuple[P, int]:
        """Where the batch's log range ends, and the rows left for chunks: the log's end
        now (availableNow's ``cap`` once no snapshot runs), cut at a transaction boundary
        by the dialect (``limit_log``) so that its row changes stay within the read limit;
        while a snapshot runs the log gets half the limit, so neither starves."""
        position, unfinished = offset.log, offset.snapshotting
        budget = self.settings.rows_per_batch if max_rows is None else max_rows
        now = self.head = self.dialect.current_position()
        if cap is not None and cap < now and not unfinished:
            now = cap
        if now > position:
            share = None
            if max_rows is not None:
                share = max(1, max_rows // 2) if unfinished else max_rows
            now, used = self.dialect.limit_log(position, now, share, sorted(offset.tables))
            if max_rows is not None:
                budget = max(max_rows - used, 1 if unfinished else 0)
        return now, budget

    def _with_chunks(
        self, offset: SourceOffset[P], end: P, budget: int | None, held: Set[TableId]
    ) -> SourceOffset[P]:
        """The batch's end offset: the log at ``end`` and the chunks ``budget`` allows
        (None: no limit), none of ``held`` tables."""
        position = end if end > offset.log else offset.log
        # the log is seen change-free up to its end now: every chunk read of an earlier
        # batch happened before now, so none crossed a change (see ChunkSpan)
        clear = offset.bounded or self.head is None or position >= self.head
        pending = self._columns_pending(offset)
        tables = self.chunks.plan(offset, budget, set(held) | pending, clear, pending)
        return dataclasses.replace(offset, log=position, tables=tables)

    def _columns_pending(self, offset: SourceOffset[P]) -> set[TableId]:
        """Tables whose chunks wait for a change of their columns that the log does not
        show yet (``PendingColumns``)."""
        if not isinstance(self.dialect, PendingColumns):
            return set()
        shapes = self.catalog.tables_at(offset)
        reading = {
            t: shapes[t]
            for t, p in offset.tables.items()
            if t in shapes and (p.reading or p.chunks is not None)
        }
        return self.dialect.columns_pending(reading) if reading else set()

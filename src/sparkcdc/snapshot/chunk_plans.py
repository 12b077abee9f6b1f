"""A batch's chunks: which tables read how many, and the same chunks again for partitions.

Planning (``latestOffset``) moves each reading table's cursor (its snapshot's, or a
re-read's first) over a bounded number of chunks, and records their key range in the
table's entry (``ChunkSpan``: chunks read after a schema change must be read again,
docs/design.md "Chunks read after a change"). The chunks are kept for ``partitions``,
which re-plans them from the two offsets' cursors when they are not at hand (another
process, a replay after a restart): any split of the key range is correct, since every
chunk is normalised to the batch's end.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Set
from typing import Generic

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.chunk_planner import ChunkPlanner
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats
from sparkcdc.snapshot.dialect import P, T
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.progress import ChunkSpan, Resnapshot, TableProgress
from sparkcdc.snapshot.rereads import cut, rereading, rereads, union

log = logging.getLogger(__name__)


class ChunkPlans(Generic[P, T]):
    """Chunk planning over the catalog's tables, with each table's key statistics read
    once (:class:`ChunkPlanner`) and the last batches' chunks kept for their partitions."""

    def __init__(self, catalog: TableCatalog[P, T]) -> None:
        self.catalog = catalog
        self.settings = catalog.settings
        self._planners: dict[TableId, ChunkPlanner] = {}
        self._plans: dict[tuple[TableId, str, str], list[Chunk]] = {}
        catalog.on_forget.append(self.refresh)

    def refresh(self, table_id: TableId) -> None:
        """Read the table's key statistics anew when it is next planned (a re-read starts,
        its snapshot starts again, or it is gone)."""
        self._planners.pop(table_id, None)

    def clear(self) -> None:
        self._planners.clear()

    # -- planning (latestOffset) ----------------------------------------------------------
    def plan(
        self,
        offset: SourceOffset[P],
        budget: int | None,
        held: Set[TableId],
        clear: bool,
        pending: Set[TableId],
    ) -> dict[TableId, TableProgress]:
        """The tables' entries after the batch's chunks: tables in order, while ``budget``
        rows last (None: no limit; at least one chunk each), skipping ``held`` ones. With
        ``clear`` (the log was seen change-free up to its end: no earlier chunk read
        crossed a change) the chunk spans of tables not read now are dropped, except of
        ``pending`` ones, whose change the log shows later."""
        progress = offset.tables
        chunk_size = self.settings.chunk_size
        new_progress = dict(progress)
        planned: set[TableId] = set()
        for table_id in sorted(progress):
            if budget is not None and budget <= 0:
                break
            current = progress[table_id]
            if not current.reading or (current.done and offset.paused):
                continue
            if table_id in held or self.catalog.vanished(table_id):  # vanished: reads nothing
                continue
            max_chunks = 1 << 30 if budget is None else max(1, math.ceil(budget / chunk_size))
            chunks, after = self._next(table_id, current, max_chunks)
            span = ChunkSpan(chunks[0].lo, chunks[-1].hi)
            if not clear and current.chunks is not None:
                span = union(current.chunks, span, self._order(table_id))
            after = dataclasses.replace(after, chunks=span)
            planned.add(table_id)
            new_progress[table_id] = after
            self._plans[_plan_key(table_id, current, after)] = chunks
            if budget is not None:
                budget -= len(chunks) * chunk_size
        if clear:
            for table_id, current in new_progress.items():
                if table_id in pending:  # a change the log shows later: chunks crossed it
                    continue
                if table_id not in planned and current.chunks is not None:
                    new_progress[table_id] = dataclasses.replace(current, chunks=None)
        return new_progress

    def _next(
        self, table_id: TableId, current: TableProgress, max_chunks: int
    ) -> tuple[list[Chunk], TableProgress]:
        """The table's next chunks and its entry after them."""
        if rereading(current):  # a re-read on demand, or after a schema change
            return self._plan_again(table_id, current, max_chunks)
        chunks = self._planner(table_id).plan(current, max_chunks)
        last = chunks[-1]
        after = (
            TableProgress.finished()
            if last.is_last
            else TableProgress(started=True, cursor=last.hi)
        )
        return chunks, dataclasses.replace(after, schema=current.schema)

    def _plan_again(
        self, table_id: TableId, progress: TableProgress, max_chunks: int
    ) -> tuple[list[Chunk], TableProgress]:
        """The next chunks of a table's re-read, cut at its range's end."""
        again = progress.again
        assert again is not None
        planned = self._planner(table_id).plan(again.view, max_chunks)
        chunks, done = cut(planned, again.hi, self._order(table_id))
        moved = dataclasses.replace(again, started=True, cursor=chunks[-1].hi, done=done)
        if done:
            log.info("re-read of %s (signal %s) done", table_id, again.signal)
        return chunks, dataclasses.replace(progress, again=moved)

    # -- the same chunks for partitions ---------------------------------------------------
    def read_between(
        self, table_id: TableId, before: TableProgress, after: TableProgress
    ) -> list[Chunk]:
        """The chunks the batch from ``before`` to ``after`` reads of the table: those
        planned for it, or planned again (another process, or a replay after a restart)."""
        chunks = self._plans.pop(_plan_key(table_id, before, after), None)
        if chunks is None:
            chunks = self._chunks_between(table_id, before, after)
        return chunks

    def _chunks_between(
        self, table_id: TableId, before: TableProgress, after: TableProgress
    ) -> list[Chunk]:
        """The chunks a batch read: between the snapshot cursors, or between the re-read
        cursors of a done table (from the range's start when the re-read is new in the
        batch; none when it was stopped or had finished before the batch)."""
        planner = self._planner(table_id)
        if not rereads(before, after):
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

    def _order(self, table_id: TableId) -> KeyOrder:
        return self.catalog.order(self.catalog.tables[table_id])

    def _planner(self, table_id: TableId) -> ChunkPlanner:
        if table_id not in self._planners:
            table, dialect = self.catalog.tables[table_id], self.catalog.dialect
            if table.one_chunk:  # no key to ask about: the empty statistics plan one chunk
                self._planners[table_id] = ChunkPlanner(
                    lambda: ONE_CHUNK,
                    _no_chunk_end,
                    self.catalog.order(table),
                    self.settings.chunk_size,
                    (self.settings.factor_lower, self.settings.factor_upper),
                    str(table_id),
                    "",
                )
                return self._planners[table_id]
            self._planners[table_id] = ChunkPlanner(
                lambda: dialect.key_stats(table),
                lambda lo, size: dialect.next_chunk_end(table, lo, size),
                self.catalog.order(table),
                self.settings.chunk_size,
                (self.settings.factor_lower, self.settings.factor_upper),
                str(table_id),
                table.column_names[table.chunk_key_index],
            )
        return self._planners[table_id]


#: The key statistics of a table read as one chunk (``SourceTable.one_chunk``): none, so
#: ``plan_chunks`` gives the one chunk ``[None, None)`` and the table is done after it.
ONE_CHUNK = KeyStats(None, None, 0)


def _no_chunk_end(lo: Key, size: int) -> Key:
    raise AssertionError("a table read as one chunk has no chunk ends to look up")


def _cursor(progress: TableProgress) -> TableProgress:
    """The snapshot's own cursor (what its chunks are planned from)."""
    return TableProgress(progress.started, progress.cursor, progress.done)


def _plan_key(
    table_id: TableId, before: TableProgress, after: TableProgress
) -> tuple[TableId, str, str]:
    return (table_id, repr(before.to_json()), repr(after.to_json()))

"""Driver-side chunk planning of one table from its cursor, over a dialect's two hooks.

Statistics only steer the split sizes: any split of a key range is correct (every chunk is
normalised to the batch's position), so stale statistics cost balance, never correctness.
"""

from __future__ import annotations

from collections.abc import Callable

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats, even_step, plan_chunks
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.progress import TableProgress


class ChunkPlanner:
    """Plans chunks from a cursor; key statistics are read once (first use) and cached.

    ``stats`` and ``next_end`` are the dialect's ``key_stats`` and ``next_chunk_end`` bound
    to the table; ``table`` and ``key`` name them in errors.
    """

    def __init__(
        self,
        stats: Callable[[], KeyStats],
        next_end: Callable[[Key, int], Key],
        order: KeyOrder,
        chunk_size: int,
        factors: tuple[float, float],
        table: str,
        key: str,
    ) -> None:
        self._read_stats = stats
        self._next_end = next_end
        self.order = order
        self.chunk_size = chunk_size
        self.factors = factors
        self.table, self.key = table, key
        self._stats: KeyStats | None = None
        self._step: int | None = None

    @property
    def stats(self) -> KeyStats:
        if self._stats is None:
            self._stats = self._read_stats()
            lower, upper = self.factors
            self._step = even_step(self._stats, self.chunk_size, lower, upper)
        return self._stats

    def next_chunk_end(self, lo: Key, size: int) -> Key:
        """The dialect's next chunk end, refused if it does not advance past ``lo`` (a key
        whose values do not round-trip would otherwise plan the same chunk forever)."""
        hi = self._next_end(lo, size)
        if hi is not None and lo is not None and self.order.sort_key(hi) <= self.order.sort_key(lo):
            raise SparkCdcError(
                f"chunk planning of {self.table} did not advance past {lo!r} on '{self.key}': "
                "the server's values of this column do not round-trip; pick another column "
                "with 'scan.incremental.snapshot.chunk.key-column'"
            )
        return hi

    def plan(self, progress: TableProgress, max_chunks: int) -> list[Chunk]:
        stats = self.stats
        return plan_chunks(
            progress.cursor,
            progress.started,
            stats,
            self.chunk_size,
            max_chunks,
            self._step,
            self.next_chunk_end,
        )

    def chunks_between(self, start: TableProgress, end: TableProgress) -> list[Chunk]:
        """Re-plan the chunks covering the keys a batch moved the cursor over."""
        if start == end or start.done or (not end.done and not end.started):
            return []
        chunks: list[Chunk] = []
        progress = start
        while True:
            (chunk,) = self.plan(progress, 1)
            if not end.done and (
                chunk.hi is None or self.order.sort_key(chunk.hi) >= self.order.sort_key(end.cursor)
            ):
                chunks.append(Chunk(chunk.lo, end.cursor))
                return chunks
            chunks.append(chunk)
            if chunk.hi is None:
                return chunks
            progress = TableProgress(started=True, cursor=chunk.hi)

"""Chunk splitting: where the next chunks of a table end, Flink CDC style.

A chunk is the key range ``[lo, hi)`` of one column (the chunk key: the first primary key
column unless configured). ``lo=None`` is unbounded below, ``hi=None`` unbounded above.
Chunks are planned lazily from a cursor, so offsets never hold chunk lists:

* numeric keys whose distribution factor ``(max - min + 1) / rows`` lies within the bounds
  are split arithmetically into steps of ``chunk_size * factor`` (no queries);
* other keys ask the database for the key ``chunk_size`` rows past the cursor.

Any partition of a key range into chunks is correct (each chunk is normalised to the same
log position), so a replayed batch may split its range differently after a restart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

Key = Any


@dataclass(frozen=True)
class Chunk:
    """Rows whose chunk key is in ``[lo, hi)``; ``None`` bounds are open."""

    lo: Key = None
    hi: Key = None

    @property
    def is_last(self) -> bool:
        return self.hi is None


@dataclass(frozen=True)
class KeyStats:
    """What the splitter needs to know about a table's chunk key."""

    minimum: Key
    maximum: Key
    approximate_rows: int

    @property
    def empty(self) -> bool:
        return self.minimum is None


def is_integral(value: Key) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, Decimal) and value == value.to_integral_value()
    )


def even_step(stats: KeyStats, chunk_size: int, lower: float, upper: float) -> int | None:
    """The arithmetic step for evenly distributed integral keys, or None to query instead."""
    if stats.empty or not (is_integral(stats.minimum) and is_integral(stats.maximum)):
        return None
    rows = max(stats.approximate_rows, 1)
    span = int(stats.maximum) - int(stats.minimum) + 1
    factor = span / rows
    if not lower <= factor <= upper:
        return None
    return max(math.ceil(chunk_size * factor), 1)


NextChunkEnd = Callable[[Key, int], Key]
"""``(lo, chunk_size) -> hi``: the first key of the next chunk after ``lo`` (None: no more)."""


def plan_chunks(
    cursor: Key,
    started: bool,
    stats: KeyStats,
    chunk_size: int,
    max_chunks: int,
    step: int | None,
    next_chunk_end: NextChunkEnd,
) -> list[Chunk]:
    """Up to ``max_chunks`` consecutive chunks starting at the cursor.

    ``started=False`` means nothing of the table has been read: the first chunk is open
    below (rows below the minimum seen at planning time are still covered). The last chunk
    returned has ``hi=None`` when it reaches the end of the table.
    """
    if max_chunks < 1:
        raise ValueError("max_chunks must be >= 1")
    chunks: list[Chunk] = []
    lo = cursor if started else None
    if stats.empty:
        return [Chunk(lo, None)]
    for _ in range(max_chunks):
        if step is not None:
            base = int(stats.minimum) if lo is None else int(lo)
            hi: Key = base + step
            if hi > int(stats.maximum):
                hi = None
            elif isinstance(stats.maximum, Decimal):
                hi = Decimal(hi)
        else:
            hi = next_chunk_end(lo, chunk_size)
        chunks.append(Chunk(lo, hi))
        if hi is None:
            break
        lo = hi
    return chunks

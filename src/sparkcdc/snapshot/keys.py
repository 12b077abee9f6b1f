"""Chunk key ordering: the database's order, as Python sort keys.

The database decides which rows a chunk query returns, so Python must order keys of log
events exactly the same way when it decides whether an event belongs to a chunk or lies
below a table's cursor. NULL sorts first (as in MySQL). For strings, the connector passes a
``collate`` function mapping a value to its collation weight when the column's collation is
not a plain code-point order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sparkcdc.snapshot.chunks import Chunk, Key
from sparkcdc.snapshot.progress import TableProgress


@dataclass(frozen=True)
class KeyOrder:
    """Orders one chunk-key column; ``collate`` maps a value to what sorts like the database."""

    collate: Callable[[Any], Any] | None = None

    def sort_key(self, value: Key) -> tuple[int, Any]:
        if value is None:
            return (0, 0)
        return (1, self.collate(value) if self.collate else value)

    def in_chunk(self, value: Key, chunk: Chunk) -> bool:
        key = self.sort_key(value)
        if chunk.lo is not None and key < self.sort_key(chunk.lo):
            return False
        return chunk.hi is None or key < self.sort_key(chunk.hi)

    def emitted(self, value: Key, progress: TableProgress) -> bool:
        """Whether rows with this key have been emitted by the snapshot so far."""
        if progress.done:
            return True
        if not progress.started:
            return False
        return progress.cursor is None or self.sort_key(value) < self.sort_key(progress.cursor)


def pad_space(value: Any) -> Any:
    """PAD SPACE collations compare as if the shorter string were padded with spaces."""
    return value.rstrip(" ") if isinstance(value, str) else value

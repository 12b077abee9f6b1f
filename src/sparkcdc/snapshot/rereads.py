"""Re-reads of a done table's key range, and the key-range arithmetic they need.

A table is read again while its log flows when a signal asks (``execute-snapshot``) or a
schema change left chunks that may have crossed it, or gave the rows values the log does
not carry: its entry gets ``again``, a second cursor over a key range
(:class:`~sparkcdc.snapshot.progress.Resnapshot`), while its own cursor stays
(docs/design.md, "Snapshots on demand" and "Schema changes").
"""

from __future__ import annotations

import dataclasses

from sparkcdc.snapshot.chunks import Chunk, Key
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.progress import ChunkSpan, Resnapshot, TableProgress

#: The ``signal`` of a re-read a schema change started (ChunkSpan).
SCHEMA_CHANGE_READ = "schema-change"


def rereading(progress: TableProgress) -> bool:
    """A re-read runs: its chunks come before the snapshot's."""
    return progress.again is not None and not progress.again.done


def rereads(before: TableProgress, after: TableProgress) -> bool:
    """Whether the batch from ``before`` to ``after`` read chunks of a re-read (a done
    table reads no others; a table in its snapshot reads a re-read's chunks first)."""
    return before.done or (after.again is not None and after.again != before.again)


def read_all_again(current: TableProgress) -> TableProgress:
    """The progress of a table whose rows changed without the log saying how (swapped in
    by an online schema change tool, or values an ALTER filled in or converted): every
    key the snapshot has read (all of them once it is done) is read again. A running
    re-read's signal goes on with the wider range."""
    if not current.started:
        return current  # the snapshot reads the new table from its start
    hi = None if current.done else current.cursor
    signal = current.again.signal if rereading(current) and current.again else SCHEMA_CHANGE_READ
    return dataclasses.replace(current, again=Resnapshot(signal, None, hi))


def range_text(again: Resnapshot) -> str:
    if again.lo is None and again.hi is None:
        return ""
    return f" (chunk keys from {again.lo!r} to {again.hi!r})"


def union(a: ChunkSpan, b: ChunkSpan, order: KeyOrder) -> ChunkSpan:
    """The smallest key range holding both (None: open)."""

    def lower(x: Key, y: Key) -> Key:
        return None if x is None or y is None else min(x, y, key=order.sort_key)

    def upper(x: Key, y: Key) -> Key:
        return None if x is None or y is None else max(x, y, key=order.sort_key)

    return ChunkSpan(lower(a.lo, b.lo), upper(a.hi, b.hi))


def cut(chunks: list[Chunk], hi: Key, order: KeyOrder) -> tuple[list[Chunk], bool]:
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

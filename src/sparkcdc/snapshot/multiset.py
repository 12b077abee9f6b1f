"""Normalising a chunk of a table without a primary key: rows as a multiset.

Without a key, a row has no identity but its values, and duplicates are real: two identical
rows are two rows, and deleting one of them leaves one. So a chunk is not a map from keys
to rows (``snapshot/normalize.py``) but a multiset of row values, and a change is a signed
multiset: an insert adds its after-image, a delete removes one copy of its before-image,
an update does both. Multiset sums commute, so the window folds into one count per row
value whatever the order of its changes:

* forward (snapshot at S, target P >= S, changes in (S, P]): ``+after - before``;
* backward (P < S, changes in (P, S]): ``+before - after``;
* by visibility (PostgreSQL): ``+after - before`` of each change the target has and the
  snapshot lacks, ``+before - after`` of each the snapshot has and the target lacks.

Each image counts only if its chunk key is in the chunk's range, so a row whose chunk key
moves between chunks leaves one and enters the other, each normalised on its own. The
chunk at the target is then the snapshot's rows minus the negative counts (one row of that
value dropped per count) plus the positive counts. Why that is exact: docs/design.md,
"Tables without a primary key".

Values are matched by :func:`row_identity` (lists and dicts made hashable, every NaN one
value). Memory is bounded by the window's distinct row values, not by the chunk.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.snapshot.normalize import InRange

_NAN = ("sparkcdc:NaN",)


def _hashable(value: Any) -> Hashable:
    if isinstance(value, float) and math.isnan(value):
        return _NAN
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    if isinstance(value, bytearray):
        return bytes(value)
    hashable: Hashable = value
    return hashable


def row_identity(row: Row) -> Hashable:
    """What makes two rows of a keyless table the same row: all their values."""
    return tuple(_hashable(v) for v in row)


@dataclass
class MultisetDelta:
    """Net copies of each row value a window adds to (positive) or removes from (negative)
    a chunk, with one image of each value to emit."""

    counts: Counter[Hashable] = field(default_factory=Counter)
    rows: dict[Hashable, Row] = field(default_factory=dict)

    def add(self, row: Row, copies: int) -> None:
        identity = row_identity(row)
        self.counts[identity] += copies
        self.rows.setdefault(identity, row)

    def __bool__(self) -> bool:
        """Whether the window changes the chunk at all (changes that cancel out do not)."""
        return any(self.counts.values())

    def within(self, in_range: InRange) -> MultisetDelta:
        """The part of the delta whose rows lie in ``in_range`` (one chunk of a partition:
        equal rows have equal chunk keys, so a value's count lies wholly in one chunk)."""
        kept = MultisetDelta()
        for identity, copies in self.counts.items():
            row = self.rows[identity]
            if copies and in_range(row):
                kept.counts[identity] = copies
                kept.rows[identity] = row
        return kept

    def add_change(self, change: RowChange, sign: int, in_range: InRange) -> None:
        """``sign`` 1 applies the change, -1 undoes it; images outside the chunk count not."""
        if change.after is not None and in_range(change.after):
            self.add(change.after, sign)
        if change.before is not None and in_range(change.before):
            self.add(change.before, -sign)


def forward_delta(changes: Iterable[RowChange], in_range: InRange) -> MultisetDelta:
    """The window (S, P] applied to a chunk read at S."""
    delta = MultisetDelta()
    for change in changes:
        delta.add_change(change, 1, in_range)
    return delta


def backward_delta(changes: Iterable[RowChange], in_range: InRange) -> MultisetDelta:
    """The window (P, S] undone from a chunk read at S."""
    delta = MultisetDelta()
    for change in changes:
        delta.add_change(change, -1, in_range)
    return delta


def visibility_delta(
    changes: Iterable[tuple[RowChange, bool, bool]], in_range: InRange
) -> MultisetDelta:
    """Changes with ``seen`` (the snapshot holds them) and ``wanted`` (the target does):
    the ones only the target has are applied, the ones only the snapshot has undone. No
    order among them is needed, unlike per-key states (``normalize.visibility_overrides``)."""
    delta = MultisetDelta()
    for change, seen, wanted in changes:
        if wanted and not seen:
            delta.add_change(change, 1, in_range)
        elif seen and not wanted:
            delta.add_change(change, -1, in_range)
    return delta


def apply_delta(rows: Iterable[Row], delta: MultisetDelta, table: str = "") -> Iterator[Row]:
    """The chunk at the target: the snapshot's rows (streamed) less the values the delta
    removes, then the values it adds. A removal the snapshot has no row for means the
    snapshot and the window disagree (a history no server writes): it raises, never
    guesses."""
    owed = {k: -n for k, n in delta.counts.items() if n < 0}
    for row in rows:
        if owed:
            identity = row_identity(row)
            if identity in owed:
                owed[identity] -= 1
                if not owed[identity]:
                    del owed[identity]
                continue
        yield row
    if owed:
        sample = delta.rows[next(iter(owed))]
        raise SparkCdcError(
            f"{table or 'a table without a primary key'}: the log removes a row the chunk's "
            f"snapshot does not hold ({sample!r}); the snapshot cannot be normalised. Please "
            "report this with the table's DDL"
        )
    for identity, copies in delta.counts.items():
        for _ in range(copies):
            yield delta.rows[identity]


def window_touches(changes: Iterable[RowChange], in_range: InRange) -> bool:
    """Whether any change of the window touches the chunk: a watermark read (snapshot at an
    unknown point of the window) is exact for a keyless chunk only when none does."""
    return any(
        (c.before is not None and in_range(c.before)) or (c.after is not None and in_range(c.after))
        for c in changes
    )


def as_counter(rows: Iterable[Row]) -> Mapping[Hashable, int]:
    """A multiset of rows by :func:`row_identity` (for comparisons: ``verify``, tests)."""
    return Counter(row_identity(r) for r in rows)

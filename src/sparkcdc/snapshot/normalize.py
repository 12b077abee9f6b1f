"""Normalise a chunk read at log position S to the batch's position P.

A chunk task reads its rows in a consistent snapshot whose exact log position S the
database reports, then applies the log window between S and P for its key range. Memory is
bounded by the changes in the window, not by the chunk: the window is folded into
per-key *overrides* first, then the chunk's rows stream through them.

* forward (S <= P, events in (S, P]): a key's state at P is its last after-image, or
  absent if its last change removed it;
* backward (P < S, events in (P, S]): a key's state at P is the before-image of its first
  change in the window, or absent if that change created it.

Both need full row images (``binlog_row_image=FULL``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sparkcdc.core.rows import Row, RowChange

ABSENT: Any = None
"""Override value meaning: the key does not exist at the target position."""

KeyOf = Callable[[Row], Any]
InRange = Callable[[Row], bool]


def forward_overrides(changes: Iterable[RowChange], key_of: KeyOf) -> dict[Any, Row | None]:
    """Last state per key after applying ``changes`` in order (None: deleted)."""
    overrides: dict[Any, Row | None] = {}
    for change in changes:
        if change.before is not None:
            overrides[key_of(change.before)] = ABSENT
        if change.after is not None:
            overrides[key_of(change.after)] = change.after
    return overrides


def backward_overrides(changes: Iterable[RowChange], key_of: KeyOf) -> dict[Any, Row | None]:
    """State per key before the first of ``changes`` touched it (None: did not exist)."""
    overrides: dict[Any, Row | None] = {}
    for change in changes:
        if change.before is not None:
            overrides.setdefault(key_of(change.before), change.before)
        if change.after is not None:
            overrides.setdefault(key_of(change.after), ABSENT)
    return overrides


def apply_overrides(
    rows: Iterable[Row],
    overrides: dict[Any, Row | None],
    key_of: KeyOf,
    in_range: InRange,
) -> Iterator[Row]:
    """The chunk at the target position: snapshot rows with overrides applied, then rows
    that exist only in the overrides (inserted in the window), restricted to the chunk."""
    pending = {k: v for k, v in overrides.items() if v is not None and in_range(v)}
    for row in rows:
        key = key_of(row)
        if key in overrides:
            replacement = pending.pop(key, None)
            if replacement is not None:
                yield replacement
        else:
            yield row
    yield from pending.values()

"""A chunk's log window, folded for its table: per-key overrides or a multiset delta.

A chunk read at one log position is moved to the batch's position by the changes between
the two (its *window*). A table with a primary key folds them into the state of each key
it touches (``snapshot/normalize.py``); a table without one, whose rows are a multiset,
into net copies of each row value (``snapshot/multiset.py``). Readers fold and apply a
window through this module alone, so they need not know which kind of table they read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sparkcdc.core.rows import Row, RowChange
from sparkcdc.snapshot.multiset import MultisetDelta, apply_delta, backward_delta, forward_delta
from sparkcdc.snapshot.normalize import (
    InRange,
    KeyOf,
    apply_overrides,
    backward_overrides,
    forward_overrides,
)

#: Per-key states (keyed tables) or net copies per row value (keyless tables). Empty or
#: false when the window leaves the chunk as the snapshot read it.
Window = dict[Any, Row | None] | MultisetDelta


def fold_window(
    changes: Iterable[RowChange],
    forward: bool,
    key_of: KeyOf,
    in_range: InRange,
    keyless: bool,
) -> Window:
    """The window's changes (those touching ``in_range``) folded: ``forward`` applies
    them to a snapshot read before them, otherwise they are undone from one read after."""
    if keyless:
        return forward_delta(changes, in_range) if forward else backward_delta(changes, in_range)
    return forward_overrides(changes, key_of) if forward else backward_overrides(changes, key_of)


def apply_window(
    rows: Iterable[Row], window: Window, key_of: KeyOf, in_range: InRange, table: str = ""
) -> Iterator[Row]:
    """The rows of a chunk (``in_range``) as of the window's far end."""
    if isinstance(window, MultisetDelta):
        return apply_delta(rows, window.within(in_range), table)
    return apply_overrides(rows, window, key_of, in_range)

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

Where a snapshot is not a log position but a set of visible transactions (PostgreSQL's
MVCC snapshots), :func:`visibility_overrides` takes each window change with two flags:
whether the snapshot saw it and whether the target includes it (docs/design.md, "Exact
chunks on PostgreSQL").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from sparkcdc.core.errors import SparkCdcError
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


def _key_states(change: RowChange, key_of: KeyOf) -> Iterator[tuple[Any, Row | None, Row | None]]:
    """``(key, state before, state after)`` for each key the change touches (an update that
    moves a key touches two: the old key disappears, the new one appears)."""
    old = None if change.before is None else key_of(change.before)
    new = None if change.after is None else key_of(change.after)
    if change.before is not None:
        yield old, change.before, change.after if new == old else ABSENT
    if change.after is not None and (change.before is None or new != old):
        yield new, ABSENT, change.after


def visibility_overrides(
    changes: Iterable[tuple[RowChange, bool, bool]], key_of: KeyOf
) -> dict[Any, Row | None]:
    """Per-key states at the target, for keys the snapshot and the target disagree on.

    ``changes`` come in log order, each with ``seen`` (the snapshot holds its effect) and
    ``wanted`` (the target position includes it). The target includes a prefix of every
    key's changes (log order); the snapshot also does, because writers of one key wait for
    each other (a row lock, a unique index) and so become visible in log order. A key whose
    snapshot prefix is longer is undone to its state before the first change the target
    lacks; a key whose target prefix is longer takes the state after the last change the
    snapshot lacks. A history breaking the per-key prefix order raises instead of guessing.
    """
    undo: dict[Any, Row | None] = {}
    redo: dict[Any, Row | None] = {}
    unseen: set[Any] = set()
    unwanted: set[Any] = set()
    for change, seen, wanted in changes:
        for key, before, after in _key_states(change, key_of):
            if (seen and key in unseen) or (wanted and key in unwanted):
                raise SparkCdcError(
                    f"row {key!r}: a snapshot saw a change of this key but not an earlier one "
                    "(or a position took a later change but not an earlier one); the "
                    "snapshot cannot be normalised. Please report this with the table's DDL"
                )
            if not seen:
                unseen.add(key)
            if not wanted:
                unwanted.add(key)
            if seen and not wanted:
                undo.setdefault(key, before)
            elif wanted and not seen:
                redo[key] = after
    return {**redo, **undo}


def upsert_visibility_overrides(
    changes: Iterable[tuple[RowChange, bool, bool]], key_of: KeyOf
) -> dict[Any, Row | None]:
    """:func:`visibility_overrides` without old rows (PostgreSQL's ``changelog-mode:
    upsert``: an update's new row, a delete's key): a key whose snapshot is ahead of the
    target keeps its snapshot row, which the log's replay of the same changes by key then
    overwrites (docs/design.md, "Without REPLICA IDENTITY FULL"); changes the target has
    and the snapshot lacks are applied as before (they need new rows and keys only; none
    by the planning's rule, docs/design.md "Exact chunks on PostgreSQL"). Such a change
    with absent values (``RowChange.unchanged``) has no whole row to put in the chunk's
    place: it raises rather than emit NULLs."""

    def wanted(change: RowChange, seen: bool, target_has: bool) -> bool:
        if target_has and not seen and change.unchanged:
            raise SparkCdcError(
                f"a chunk of {change.table} lacks a change its batch has, whose TOASTed "
                f"values ({', '.join(change.unchanged)}) the WAL does not carry; the chunk "
                "cannot be brought to the batch's end. Please report this (the planning "
                "should not allow it); REPLICA IDENTITY FULL on the table avoids it"
            )
        return target_has or not seen

    return visibility_overrides(((c, s, w) for c, s, w in changes if wanted(c, s, w)), key_of)

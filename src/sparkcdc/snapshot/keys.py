"""Chunk key ordering: the database's order, as Python sort keys.

The database decides which rows a chunk query returns, so Python must order keys of log
events exactly the same way when it decides whether an event belongs to a chunk or lies
below a table's cursor. NULL sorts first (as in MySQL). For strings, the connector passes a
``collate`` function mapping a value to a key that sorts like the column's collation.

String keys are built from *weight strings*: one ``str`` character per collation weight
unit, so Python's code-point comparison of two weight strings is the database's comparison
of the weights. A binary (code-point) collation's weight string is the value itself.

PAD SPACE collations compare as if the shorter weight string were padded with the weight of
a space. Stripping trailing spaces is not enough: ``'a\\t' < 'a'`` because the tab is
compared with a pad space (0x09 < 0x20), whereas ``'a'`` is a prefix of ``'a\\t'`` and would
sort first. :func:`pad_space_key` rewrites a weight string so that plain ``str`` order equals
padded order (see there); the result is only ever compared, never shown or stored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.rows import Row
from sparkcdc.snapshot.chunks import Chunk, Key
from sparkcdc.snapshot.progress import TableProgress

#: Bound keys remembered per KeyOrder: chunks and cursors of a batch, far fewer in practice.
_MAX_BOUNDS = 4096


@dataclass(frozen=True)
class KeyOrder:
    """Orders one chunk-key column; ``collate`` maps a value to what sorts like the database.

    Chunk bounds and cursors are compared with every log event, so their keys are
    remembered (collation keys cost about a microsecond each).
    """

    collate: Callable[[Any], Any] | None = None
    _bounds: dict[Any, tuple[int, Any]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def __reduce__(self) -> tuple[Any, ...]:
        return (KeyOrder, (self.collate,))  # remembered bounds stay in this process

    def sort_key(self, value: Key) -> tuple[int, Any]:
        if value is None:
            return (0, 0)
        return (1, self.collate(value) if self.collate else value)

    def bound_key(self, value: Key) -> tuple[int, Any]:
        """:meth:`sort_key` of a chunk bound or cursor, remembered."""
        if self.collate is None:
            return self.sort_key(value)
        bounds = self._bounds
        try:
            return bounds[value]
        except KeyError:
            key = self.sort_key(value)
            if len(bounds) >= _MAX_BOUNDS:
                bounds.clear()
            bounds[value] = key
            return key
        except TypeError:  # unhashable: not a key type we produce, but stay correct
            return self.sort_key(value)

    def in_chunk(self, value: Key, chunk: Chunk) -> bool:
        key = self.sort_key(value)
        if chunk.lo is not None and key < self.bound_key(chunk.lo):
            return False
        return chunk.hi is None or key < self.bound_key(chunk.hi)

    def emitted(self, value: Key, progress: TableProgress) -> bool:
        """Whether rows with this key have been emitted by the snapshot so far."""
        if progress.done:
            return True
        if not progress.started:
            return False
        return progress.cursor is None or self.sort_key(value) < self.bound_key(progress.cursor)


@dataclass(frozen=True)
class PartitionKeys:
    """Which rows belong to a chunk partition, in the database's key order, and what
    identifies a row (a chunk read folds its log window into overrides by it)."""

    order: KeyOrder
    key_of: Callable[[Row], Any]
    #: the chunk key's column; None: a table read as one chunk (no chunk key column), whose
    #: one chunk ``[None, None)`` holds every row
    index: int | None
    chunks: tuple[Chunk, ...]

    def in_partition(self, row: Row) -> bool:
        if self.index is None:
            return True
        return any(self.order.in_chunk(row[self.index], c) for c in self.chunks)

    def in_chunk(self, row: Row, chunk: Chunk) -> bool:
        if self.index is None:
            return True
        return self.order.in_chunk(row[self.index], chunk)

    @classmethod
    def of_one_chunk(cls, key_of: Callable[[Row], Any], chunks: tuple[Chunk, ...]) -> PartitionKeys:
        """The keys of a table read as one chunk: every row is in it."""
        if chunks != (Chunk(),):
            raise AssertionError(f"a table read as one chunk is read whole, not as {chunks}")
        return cls(KeyOrder(), key_of, None, chunks)

    def touches(self, before: Row | None, after: Row | None) -> bool:
        """Whether a change's images reach into the partition (its window keeps it)."""
        return (before is not None and self.in_partition(before)) or (
            after is not None and self.in_partition(after)
        )


# Markers placed after each space unit. They are only ever compared with each other (a
# marker always follows a space unit, and no other token starts with a space unit), so
# their small values cannot collide with real weights.
_BEFORE_LOWER = "\x00"  #: a run of spaces followed by a unit that sorts below a space
_END = "\x01"  #: the end of the string: spaces forever
_BEFORE_HIGHER = "\x02"  #: a run of spaces followed by a unit that sorts above a space

_patterns: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def _patterns_for(space: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a unit below ``space``, a run of ``space`` and the unit after it), compiled once."""
    found = _patterns.get(space)
    if found is None:
        below = re.compile("[\x00-" + re.escape(chr(ord(space) - 1)) + "]")
        runs = re.compile(re.escape(space) + "+(.?)", re.DOTALL)
        found = _patterns.setdefault(space, (below, runs))
    return found


def pad_space_key(weights: str, space: str = " ") -> str:
    """A key whose ``str`` order is PAD SPACE order of weight strings (one char per unit).

    Padded comparison of ``A`` and ``B`` is decided at the first position where the
    space-padded sequences differ. Tokenise each string, after dropping trailing spaces, as
    single units other than ``space``, ``space + marker`` for every space unit, and a final
    ``space + END``. A marker says what the padded comparison would meet after its run of
    spaces: a unit below a space (``\\x00``), the end of the string, which pads with
    spaces forever (``\\x01``), or a unit above a space (``\\x02``). Then:

    * two space tokens with the same marker are equal, as the padded units are;
    * space vs. space with different markers: the first string to leave the run meets the
      unit the marker describes, against a space or a unit on the other side; the markers
      order exactly as that outcome (lower < end < higher);
    * space (or end) vs. a unit ``u``: the token starts with the space unit, which compares
      with ``u`` exactly as the padded space does.

    No token is a prefix of another, so the first differing token decides, as required.
    Trailing spaces vanish (``'a ' == 'a'``) and ``'a\\t' < 'a' < 'a!'`` for ASCII weights.
    Costs one ``in`` test without spaces; a ``replace`` when no unit sorts below a space.
    """
    if space not in weights:
        return weights + space + _END
    weights = weights.rstrip(space)
    if space not in weights:
        return weights + space + _END
    below, runs = _patterns_for(space)
    if below.search(weights) is None:  # every run of spaces is followed by a higher unit
        return weights.replace(space, space + _BEFORE_HIGHER) + space + _END
    return runs.sub(_mark_run, weights) + space + _END


def _mark_run(match: re.Match[str]) -> str:
    after = match.group(1)  # never empty: trailing spaces are stripped before
    space = match.string[match.start()]
    run = match.end() - match.start() - 1
    marker = _BEFORE_LOWER if after < space else _BEFORE_HIGHER
    return (space + marker) * run + after


def pad_space(value: Any) -> Any:
    """Sort key of a string under a PAD SPACE code-point (``_bin``) collation.

    Non-strings pass through unchanged, so the same function serves any chunk key type.
    """
    return pad_space_key(value) if isinstance(value, str) else value

"""What a Relation message with other columns says changed: adds, drops, renames and type
changes of a captured table's columns.

pgoutput describes a table again (a Relation message) before its first row change after
an ``ALTER TABLE``, with the columns as of that change (logical decoding reads the catalog
as it was then): names and types in column order, nothing more. A rename and a drop plus
an add look the same there. PostgreSQL's column numbers (``pg_attribute.attnum``) tell
them apart: a renamed column keeps its number, a dropped one keeps it too (marked
dropped), and an added column takes a number above all earlier ones. So the captured
table carries its columns' numbers (from discovery), and at a change the catalog as it is
now gives the described names their numbers.

The catalog may have moved on since the change (the stream reads the log behind the
server). Whatever cannot be matched consistently (a described name the catalog no longer
has, numbers out of order, a new column numbered below the known ones) is a ``problem``:
the stream stops there, naming it, rather than guess. One case cannot be seen: a
described name that was dropped or renamed away after the change and then given to
another column before the stream read the change (``tests/unit/test_pg_column_change.py``
checks every other history against a model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Attribute:
    """A column as the catalog has it now (dropped ones included: their number stays)."""

    attnum: int
    name: str
    dropped: bool
    type: tuple[int, int]  #: (type oid, typmod), as Relation messages give them
    #: It has a value in rows written before it was added: a default (stored as the
    #: "missing" value, or written into every row by a rewrite), or it is generated or
    #: an identity.
    filled: bool = False


@dataclass(frozen=True)
class Described:
    """A column of a Relation message."""

    name: str
    type: tuple[int, int]


@dataclass(frozen=True)
class ColumnsChange:
    """The change, column by column (names as before -> after the change)."""

    #: Each described column's number (empty when there is a ``problem``).
    attnums: tuple[int, ...] = ()
    renamed: Mapping[str, str] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    #: Described names whose type changed.
    retyped: tuple[str, ...] = ()
    #: Described names whose values in the rows already there the change set or converted
    #: without a row change in the WAL (an added column's default; any retype, as
    #: ``ALTER COLUMN ... TYPE ... USING`` computes the values anew and the Relation
    #: message does not say how): the table's rows are read again.
    rewritten: tuple[str, ...] = ()
    problem: str = ""

    def describe(self) -> str:
        """The change in words, for messages and the offset (there is no statement)."""
        parts = [f"rename column {a} to {b}" for a, b in self.renamed.items()]
        parts += [f"drop column {n}" for n in self.dropped]
        parts += [f"add column {n}" for n in self.added]
        parts += [f"alter column {n} type" for n in self.retyped]
        return ", ".join(parts) or "no column change"


def columns_change(
    old: Sequence[tuple[int, str, tuple[int, int]]],
    described: Sequence[Described],
    catalog: Sequence[Attribute],
) -> ColumnsChange:
    """The change from ``old`` (the table as captured: number, name, type per column) to
    the ``described`` columns, matched through the ``catalog`` as it is now.

    Numbers only grow, so the described columns are the old columns that survived (in
    order), then the added ones. An old column still live now survived; one dropped now
    may have been dropped before or after the change. A described name live now has its
    number now (no name is given to another column after the change). Every choice of
    survivors among the dropped-now ones that fits is tried: exactly one must fit."""
    live = {a.name: a.attnum for a in catalog if not a.dropped}
    alive = {a.attnum for a in catalog if not a.dropped}
    highest = max((n for n, _, _ in old), default=0)
    certain = [n for n, _, _ in old if n in alive]
    unsure = [n for n, _, _ in old if n not in alive]
    if len(unsure) > _MAX_UNSURE:
        return ColumnsChange(problem=_AMBIGUOUS)
    fits: list[tuple[int, ...]] = []
    for mask in range(1 << len(unsure)):
        chosen = [n for i, n in enumerate(unsure) if mask >> i & 1]
        survivors = sorted(certain + chosen)
        if len(survivors) > len(described):
            continue
        if _fits(survivors, described, live, highest):
            fits.append(tuple(survivors))
    if len(fits) != 1:
        return ColumnsChange(problem=_AMBIGUOUS)
    (chosen_survivors,) = fits
    survivors = list(chosen_survivors)
    before = {n: (name, kind) for n, name, kind in old}
    renamed: dict[str, str] = {}
    retyped: list[str] = []
    rewritten: list[str] = []
    for number, column in zip(survivors, described, strict=False):
        name, kind = before[number]
        if name != column.name:
            renamed[name] = column.name
        if kind != column.type:  # USING may have computed anything: the WAL cannot say
            retyped.append(column.name)
            rewritten.append(column.name)
    added = described[len(survivors) :]
    numbers = list(survivors) + [live.get(c.name, -1) for c in added]
    # an added column dropped again since may have had a value: it counts as filled
    filled = {a.attnum for a in catalog if a.filled} | {-1}
    rewritten += [c.name for c in added if live.get(c.name, -1) in filled]
    kept = set(survivors)
    dropped = tuple(name for n, name, _ in old if n not in kept)
    return ColumnsChange(
        tuple(numbers),
        renamed,
        dropped,
        tuple(c.name for c in added),
        tuple(retyped),
        tuple(rewritten),
    )


#: Old columns dropped by now, beyond which the choices are not tried (2^n of them).
_MAX_UNSURE = 10
_AMBIGUOUS = (
    "the table changed again since, and the catalog no longer tells a rename from a drop and an add"
)


def _fits(
    survivors: Sequence[int],
    described: Sequence[Described],
    live: Mapping[str, int],
    highest: int,
) -> bool:
    """Whether the described columns can be ``survivors`` then added columns, given the
    numbers of the names that are live now."""
    k = len(survivors)
    for i, column in enumerate(described):
        number = live.get(column.name)
        if number is None:
            continue
        if i < k and number != survivors[i]:
            return False
        if i >= k and number <= highest:
            return False
    return True

"""PostgreSQL column changes told apart by column numbers (wal/column_change.py): against
a model of ALTER TABLE, whatever happened after the described moment, the answer is the
true change or a problem, never a wrong change; with nothing after it, always the truth."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.postgres.wal.column_change import (
    Attribute,
    Described,
    columns_change,
)

Op = tuple[str, str, str, tuple[int, int]]
Snapshot = list[tuple[Any, ...]]

NAMES = ["a", "b", "c", "d", "e"]
TYPES = [(23, -1), (20, -1), (25, -1)]


@dataclass
class Model:
    """pg_attribute of one table: numbers only grow, drops keep their number."""

    columns: list[list[Any]] = field(default_factory=list)  # [attnum, name, dropped, type]

    def live(self) -> list[list[Any]]:
        return [c for c in self.columns if not c[2]]

    def apply(self, op: Op) -> None:
        kind, name, other, kind_type = op
        names = {c[1]: c for c in self.live()}
        if kind == "add" and name not in names:
            self.columns.append([len(self.columns) + 1, name, False, kind_type])
        elif kind == "drop" and name in names and len(names) > 1:
            names[name][2] = True
        elif kind == "rename" and name in names and other not in names:
            names[name][1] = other
        elif kind == "retype" and name in names:
            names[name][3] = kind_type

    def snapshot(self) -> Snapshot:
        return [tuple(c) for c in self.columns]


ops = st.tuples(
    st.sampled_from(["add", "drop", "rename", "retype"]),
    st.sampled_from(NAMES),
    st.sampled_from(NAMES),
    st.sampled_from(TYPES),
)


def _reused(then: Snapshot, now: Snapshot) -> bool:
    """Whether a described name belongs to another column now (dropped or renamed away
    after the change, then taken again): the one case the catalog cannot tell apart
    (module docstring)."""
    at = {c[1]: c[0] for c in then if not c[2]}
    return any(not c[2] and c[1] in at and at[c[1]] != c[0] for c in now)


def _truth(old: Snapshot, then: Snapshot) -> tuple[Any, ...]:
    before = {c[0]: c for c in old if not c[2]}
    at = {c[0]: c for c in then if not c[2]}
    renamed = {before[n][1]: at[n][1] for n in at if n in before and before[n][1] != at[n][1]}
    dropped = tuple(c[1] for n, c in before.items() if n not in at)
    added = tuple(c[1] for n, c in at.items() if n not in before)
    retyped = tuple(c[1] for n, c in at.items() if n in before and before[n][3] != c[3])
    return renamed, dropped, added, retyped


@settings(max_examples=400, deadline=None)
@given(
    st.lists(ops, min_size=1, max_size=6),
    st.lists(ops, max_size=6),
    st.lists(ops, max_size=6),
)
def test_the_answer_is_the_truth_or_a_problem(
    first: list[Op], change: list[Op], later: list[Op]
) -> None:
    model = Model()
    model.apply(("add", "a", "", TYPES[0]))
    for op in first:
        model.apply(op)
    old = model.snapshot()
    for op in change:
        model.apply(op)
    then = model.snapshot()
    for op in later:
        model.apply(op)
    now = model.snapshot()
    found = columns_change(
        [(c[0], c[1], c[3]) for c in old if not c[2]],
        [Described(c[1], c[3]) for c in then if not c[2]],
        [Attribute(c[0], c[1], c[2], c[3]) for c in now],
    )
    if not later or then == now:
        assert not found.problem
    if found.problem or _reused(then, now):
        return
    renamed, dropped, added, retyped = _truth(old, then)
    assert dict(found.renamed) == renamed
    assert found.dropped == dropped
    assert found.added == added
    assert found.retyped == retyped


def test_a_rename_is_not_a_drop_and_an_add() -> None:
    old = [(1, "id", (23, -1)), (2, "b", (23, -1))]
    catalog = [Attribute(1, "id", False, (23, -1)), Attribute(2, "c", False, (23, -1))]
    found = columns_change(old, [Described("id", (23, -1)), Described("c", (23, -1))], catalog)
    assert dict(found.renamed) == {"b": "c"} and not found.dropped and not found.added
    assert found.describe() == "rename column b to c"


def test_a_drop_and_an_add_of_the_same_name_is_not_a_rename() -> None:
    old = [(1, "id", (23, -1)), (2, "b", (23, -1))]
    catalog = [
        Attribute(1, "id", False, (23, -1)),
        Attribute(2, "........pg.dropped.2........", True, (0, -1)),
        Attribute(3, "b", False, (20, -1)),
    ]
    found = columns_change(old, [Described("id", (23, -1)), Described("b", (20, -1))], catalog)
    assert found.dropped == ("b",) and found.added == ("b",) and not found.renamed


def test_added_columns_with_a_value_in_existing_rows_and_retypes_are_rewritten() -> None:
    """A retype, a widening one too, is read again: USING may have computed the values."""
    old = [(1, "id", (23, -1)), (2, "a", (23, -1)), (3, "b", (23, -1))]
    catalog = [
        Attribute(1, "id", False, (23, -1)),
        Attribute(2, "a", False, (20, -1)),  # widened
        Attribute(3, "b", False, (21, -1)),  # narrowed
        Attribute(4, "plain", False, (23, -1)),
        Attribute(5, "dflt", False, (23, -1), filled=True),
        Attribute(6, "........pg.dropped.6........", True, (0, -1)),
    ]
    described = [
        Described("id", (23, -1)),
        Described("a", (20, -1)),
        Described("b", (21, -1)),
        Described("plain", (23, -1)),
        Described("dflt", (23, -1)),
        Described("gone", (23, -1)),  # dropped again since: its values are unknown
    ]
    found = columns_change(old, described, catalog)
    assert found.added == ("plain", "dflt", "gone")
    assert found.retyped == ("a", "b")
    assert found.rewritten == ("a", "b", "dflt", "gone")

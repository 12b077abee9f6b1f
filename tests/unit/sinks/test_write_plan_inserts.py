"""When a batch's rows of a target are all of keys the target cannot hold yet."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_report import TableCounts
from sparkcdc.sinks.write_plan import WritePlan, plan_of

T = TableId("shop", "events")


def batch(counts: TableCounts, mirrored: bool = True) -> WritePlan:
    """A batch as the runner makes it from one table's counts."""
    return plan_of(
        "p",
        3,
        {T: None},
        rows={T: counts.changelog_rows},
        snapshot_version=7,
        snapshot_rows={T: counts.snapshot_rows},
        log_inserts={T: counts.inserts} if mirrored else {},
    )


def test_inserts_and_snapshot_rows_alone_are_new_keys() -> None:
    assert batch(TableCounts(inserts=5)).targets[T].inserts_only
    assert batch(TableCounts(snapshot_rows=100, inserts=5)).targets[T].inserts_only


def test_any_other_change_is_not() -> None:
    assert not batch(TableCounts(inserts=5, updates=1)).targets[T].inserts_only
    assert not batch(TableCounts(inserts=5, deletes=1)).targets[T].inserts_only
    assert not batch(TableCounts(inserts=5, reread_rows=1)).targets[T].inserts_only


def test_a_target_that_is_not_one_table_as_captured_is_not() -> None:
    # a route or a transform: its rows' keys may be in the target from elsewhere
    assert not batch(TableCounts(inserts=5), mirrored=False).targets[T].inserts_only


def test_an_empty_or_uncounted_batch_is_not() -> None:
    assert not batch(TableCounts()).targets[T].inserts_only
    assert not plan_of("p", 3, {T: None}, log_inserts={T: 5}).targets[T].inserts_only


@given(
    st.integers(0, 50),
    st.integers(0, 50),
    st.integers(0, 50),
    st.integers(0, 50),
    st.integers(0, 50),
)
def test_exactly_when_nothing_but_snapshot_rows_and_inserts(
    snapshot: int, inserts: int, updates: int, deletes: int, reread: int
) -> None:
    counts = TableCounts(snapshot, inserts, updates, deletes, reread)
    expected = snapshot + inserts > 0 and updates == deletes == reread == 0
    assert batch(counts).targets[T].inserts_only == expected

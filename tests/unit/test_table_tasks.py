"""The tasks a table's rows of a many-table batch are written with."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.pipeline.table_tasks import ROWS_PER_TASK, tasks_for


def test_a_table_with_few_rows_or_none_is_one_task() -> None:
    assert tasks_for(0) == tasks_for(1) == tasks_for(ROWS_PER_TASK) == 1
    assert tasks_for(ROWS_PER_TASK + 1) == 2


@given(st.integers(min_value=1, max_value=10**12))
def test_each_task_gets_at_most_its_share_and_none_is_idle(rows: int) -> None:
    tasks = tasks_for(rows)
    assert tasks * ROWS_PER_TASK >= rows > (tasks - 1) * ROWS_PER_TASK

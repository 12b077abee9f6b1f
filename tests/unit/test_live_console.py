"""The live snapshot display of ``sparkcdc run`` on a terminal: a bar per table with this
run's rate, and a total when several tables are copied."""

from __future__ import annotations

import io

from rich.console import Console

from sparkcdc.cli.live import TOTAL, LiveConsole
from sparkcdc.pipeline.batch_report import TableCounts
from sparkcdc.pipeline.metrics import PipelineMetrics
from sparkcdc.pipeline.run_state import RunState
from tests.unit.test_pipeline_metrics import ITEMS, ORDERS, Clock, offset, report


def rates(display: LiveConsole) -> dict[str, str]:
    assert display._progress is not None
    return {str(t.description): t.fields["rate"] for t in display._progress.tasks}


def test_one_table_shows_its_rate_of_this_run() -> None:
    clock = Clock()
    # a restart: 400 rows were copied by an earlier run (they are no part of this rate)
    state = RunState()
    state.add(report(0, clock.now, {ORDERS: TableCounts(snapshot_rows=400)}, offset()))
    state_offset = offset(orders={"cursor": {"int": "400"}})
    state.source_offset = state_offset
    metrics = PipelineMetrics("p", [ORDERS], state, {ORDERS: 10_000}, clock=clock)
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    display = LiveConsole(console, metrics, live=True, clock=clock)
    display.start()
    try:
        assert rates(display) == {str(ORDERS): ""}  # nothing copied by this run yet
        batch = report(1, clock.now, {ORDERS: TableCounts(snapshot_rows=3000)}, state_offset)
        clock.now += 2.0
        metrics.record(batch)
        display.on_batch(batch)
        assert rates(display) == {str(ORDERS): "1.5 k rows/s"}  # 3000 rows in 2 s
    finally:
        display.stop()


def test_several_tables_show_a_total_and_a_rate_each() -> None:
    clock = Clock()
    metrics = PipelineMetrics(
        "p", [ORDERS, ITEMS], RunState(), {ORDERS: 100, ITEMS: 100}, clock=clock
    )
    console = Console(file=io.StringIO(), force_terminal=True, width=160)
    display = LiveConsole(console, metrics, live=True, clock=clock)
    display.start()
    try:
        first = report(
            0,
            clock.now,
            {ORDERS: TableCounts(snapshot_rows=50)},
            offset(orders={"cursor": {"int": "50"}}, items={"started": False}),
        )
        clock.now += 1.0
        metrics.record(first)
        display.on_batch(first)
        assert rates(display) == {str(ORDERS): "50 rows/s", str(ITEMS): "", TOTAL: "50 rows/s"}
        second = report(
            1,
            clock.now,
            {ITEMS: TableCounts(snapshot_rows=30)},
            offset(orders={"cursor": {"int": "50"}}, items={"cursor": {"int": "30"}}),
        )
        clock.now += 1.0
        metrics.record(second)
        display.on_batch(second)
        # items began in the second batch: its rate counts from then
        assert rates(display) == {
            str(ORDERS): "25 rows/s",
            str(ITEMS): "30 rows/s",
            TOTAL: "40 rows/s",
        }
    finally:
        display.stop()

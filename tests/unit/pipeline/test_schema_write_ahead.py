"""Schema changes written ahead into the run state (``RunState.pending``): recorded before
the sink applies them, finished by the restart after a crash in between, renames and
drops included (the aimed kill that proves it end to end: tests/faults/test_kill_loop.py).
The sink here is a stand-in that records what it is asked to apply: what is under test is
the bookkeeping around it, not a sink."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.metrics import PipelineMetrics
from sparkcdc.pipeline.run_state import RunState, load_run_state, save_run_state
from sparkcdc.pipeline.runner import finish_evolutions
from sparkcdc.pipeline.schema_follow import plain_target
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.schema_change import ColumnMoves

ORDERS = TableId("shop", "orders")
BEFORE = StructType([StructField("id", LongType(), False), StructField("extra", IntegerType())])
AFTER = StructType([StructField("id", LongType(), False), StructField("moved", IntegerType())])
MOVES = ColumnMoves(renamed={"extra": "moved"})


class RecordingSink:
    """Records each ``evolve``; refuses them all when ``refuse`` says why."""

    def __init__(self, refuse: str | None = None) -> None:
        self.evolved: list[tuple[TableId, list[str], ColumnMoves | None]] = []
        self.refuse = refuse

    def evolve(self, spark: Any, table: SinkTable, previous: Any = None, moves: Any = None) -> None:
        del spark, previous
        if self.refuse:
            raise RuntimeError(self.refuse)
        self.evolved.append((table.source, list(table.columns), moves))


def written_ahead(tmp_path: Path, before: str | None) -> RunState:
    """The run state a crash between the write-ahead and the sink's ALTER leaves."""
    state = RunState()
    if before is not None:
        state.targets[ORDERS] = before
    metrics = PipelineMetrics("p", [ORDERS], state, {})
    metrics.schema_changing(ORDERS, AFTER.json(), MOVES.to_json())
    save_run_state(tmp_path, metrics.state)
    return load_run_state(tmp_path)


def test_a_change_is_in_the_state_before_it_is_applied_and_settled_after(
    tmp_path: Path,
) -> None:
    state = written_ahead(tmp_path, None)
    assert state.targets == {ORDERS: AFTER.json()}
    assert state.pending == {
        ORDERS: {"before": None, "schema": AFTER.json(), "moves": {"renamed": {"extra": "moved"}}}
    }
    for schema in (AFTER.json(), None):  # None: the target is the table's own columns
        metrics = PipelineMetrics("p", [ORDERS], RunState.from_json(state.to_json()), {})
        metrics.schema_changed(ORDERS, ORDERS, schema)
        settled = metrics.state
        assert settled.pending == {}
        assert settled.targets == ({ORDERS: schema} if schema else {})
        assert settled.schema_changes == {ORDERS: 1}


@pytest.mark.parametrize("before", [BEFORE.json(), None])
def test_a_change_the_sink_refuses_is_taken_back_at_once(
    tmp_path: Path, before: str | None
) -> None:
    state = written_ahead(tmp_path, before)
    metrics = PipelineMetrics("p", [ORDERS], state, {})
    metrics.schema_refused(ORDERS)
    assert metrics.state.pending == {}
    assert metrics.state.targets == ({ORDERS: before} if before else {})
    assert metrics.state.schema_changes == {}


def test_a_restart_finishes_a_change_written_ahead_with_its_renames(tmp_path: Path) -> None:
    state = written_ahead(tmp_path, BEFORE.json())
    sink = RecordingSink()
    target = plain_target(SinkTable(ORDERS, BEFORE, ("id",)), AFTER)
    finish_evolutions(None, sink, [target], state, tmp_path)  # type: ignore[arg-type]
    assert sink.evolved == [(ORDERS, ["id", "moved"], MOVES)]
    again = load_run_state(tmp_path)
    assert again.pending == {} and again.targets == {ORDERS: AFTER.json()}
    # once settled, a restart only checks the target (no moves: nothing to rename again)
    finish_evolutions(None, sink, [target], again, tmp_path)  # type: ignore[arg-type]
    assert sink.evolved[-1] == (ORDERS, ["id", "moved"], None)


@pytest.mark.parametrize("before", [BEFORE.json(), None])
def test_a_change_written_ahead_that_the_sink_refuses_is_taken_back(
    tmp_path: Path, before: str | None
) -> None:
    state = written_ahead(tmp_path, before)
    target = plain_target(SinkTable(ORDERS, BEFORE, ("id",)), AFTER)
    sink = RecordingSink(refuse="cannot drop column extra: a view depends on it")
    with pytest.raises(SparkCdcError) as raised:
        finish_evolutions(None, sink, [target], state, tmp_path)  # type: ignore[arg-type]
    text = str(raised.value)
    assert "a view depends on it" in text and "Run the pipeline again" in text
    again = load_run_state(tmp_path)
    assert again.pending == {}
    assert again.targets == ({ORDERS: before} if before else {})

"""A running pipeline's metrics: the live values behind the Prometheus endpoint, the
console and ``status`` (docs/operations.md has each definition and its Flink CDC /
Debezium name).

Fed by the runner once per batch (after the sink write) and read from other threads (the
HTTP endpoint, the console), so every access holds one lock. Values that depend on the
time of reading (idle time) are computed when read; the source's head (bytes behind) is
asked for after each batch and, while no batch runs, at most every ``head_interval``
seconds when read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_report import (
    PENDING,
    SNAPSHOTTING,
    STREAMING,
    BatchReport,
    TableCounts,
    table_states,
)
from sparkcdc.pipeline.run_state import RunState

#: Progress shown while a table's snapshot runs never reaches 1: the estimate of its rows
#: may be low, and 100% means the offset says the table is done.
MAX_RUNNING_PROGRESS = 0.99


@dataclass(frozen=True)
class LogHead:
    """Where the server's log ends now, and how far behind the pipeline's position is."""

    position: str
    bytes_behind: int | None
    #: When the oldest change not yet read was written to the log (epoch seconds; asked
    #: for by ``status`` only, as it reads the log): None when none waits or not known.
    waiting_since: float | None = None
    #: Whether ``waiting_since`` was read from the log (None then means: none waits).
    waiting_known: bool = False


@dataclass(frozen=True)
class TableMetrics:
    table: TableId
    state: str
    totals: TableCounts
    estimated_rows: int | None  #: the source's estimate when the run started
    schema_changes: int = 0  #: applied to its target, across restarts

    @property
    def snapshot_progress(self) -> float:
        """0..1: 1 exactly when the table's snapshot is done."""
        if self.state == STREAMING:
            return 1.0
        if self.state == PENDING or not self.estimated_rows:
            return 0.0
        return min(MAX_RUNNING_PROGRESS, self.totals.snapshot_rows / self.estimated_rows)


@dataclass(frozen=True)
class MetricsSnapshot:
    """All values at one instant."""

    pipeline: str
    now: float
    started: float
    batches: int  #: batches written by this run
    last_batch_id: int
    last_batch_written: float | None
    last_batch_seconds: float | None
    fetch_lag: float | None
    emit_lag: float | None
    idle_seconds: float
    position: str | None
    head: LogHead | None
    tables: Sequence[TableMetrics] = field(default_factory=tuple)
    sink_retries: int = 0  #: batches tried again by this run (target connection lost)
    source_retries: int = 0  #: lost source connections Spark tasks retried, this run

    @property
    def snapshot_remaining_tables(self) -> int:
        return sum(1 for t in self.tables if t.state != STREAMING)


class PipelineMetrics:
    """The live metrics of one run of a pipeline."""

    def __init__(
        self,
        pipeline: str,
        tables: Sequence[TableId],
        state: RunState,
        estimated_rows: Mapping[TableId, int | None],
        describe_position: Callable[[str], str] = lambda offset: offset,
        log_head: Callable[[str], LogHead | None] | None = None,
        clock: Callable[[], float] = time.time,
        head_interval: float = 5.0,
        source_retries: Callable[[], int] = lambda: 0,
    ) -> None:
        self.pipeline = pipeline
        self._lock = threading.Lock()
        self._clock = clock
        self._tables = list(tables)
        self._state = state
        self._estimates = dict(estimated_rows)
        self._describe = describe_position
        self._log_head = log_head
        self._head_interval = head_interval
        self._started = clock()
        self._last_active = self._started
        self._batches = 0
        self._sink_retries = 0
        self._source_retries = source_retries  #: live: Spark adds as its tasks end
        self._source_retries_recorded = 0  #: of those, added to the run state
        self._last: BatchReport | None = None
        self._states = {t: PENDING for t in self._tables}
        self._states.update(_known(table_states(state.source_offset), self._tables))
        self._head: LogHead | None = None
        self._head_at = float("-inf")

    @property
    def state(self) -> RunState:
        """A copy of the totals, to persist."""
        with self._lock:
            return RunState.from_json(self._state.to_json())

    def record(self, report: BatchReport) -> None:
        """A batch was written to the sink."""
        retries = self._source_retries()  # the batch's tasks have ended
        with self._lock:
            self._batches += 1
            self._last = report
            if self._state.add(report):
                self._state.source_retries += retries - self._source_retries_recorded
                self._source_retries_recorded = retries
            self._states.update(_known(report.table_states, self._tables))
            if report.changes or report.snapshot_rows:
                self._last_active = report.fetched
        self._refresh_head(force=True)

    def add_tables(self, tables: Sequence[TableId]) -> None:
        """Tables created while the pipeline runs, captured from now on (pending until
        their first batch says otherwise; no row estimate: they were just created)."""
        with self._lock:
            for table in tables:
                if table not in self._states:
                    self._tables.append(table)
                    self._states[table] = PENDING

    def schema_changing(self, target: TableId, schema: str, moves: dict[str, Any]) -> None:
        """A change is about to be applied to ``target``, whose schema will be ``schema``
        (StructType JSON) after the renames and drops ``moves`` (ColumnMoves JSON): written
        ahead (``RunState.pending``) until :meth:`schema_changed` says it was applied."""
        with self._lock:
            before = self._state.targets.get(target)
            if target not in self._state.pending:
                self._state.pending[target] = {"before": before}
            self._state.pending[target].update(schema=schema, moves=moves)
            self._state.targets[target] = schema

    def schema_refused(self, target: TableId) -> None:
        """The change :meth:`schema_changing` wrote ahead was not applied (the sink
        refused it): the target's entry is what it was before."""
        with self._lock:
            pending = self._state.pending.pop(target, None)
            if pending is None:
                return
            if pending.get("before") is None:
                self._state.targets.pop(target, None)
            else:
                self._state.targets[target] = pending["before"]

    def schema_changed(self, table: TableId, target: TableId, schema: str | None) -> None:
        """A change of ``table``'s columns was applied to its target ``target``, whose
        schema is now ``schema`` (StructType JSON; None: the table's own columns)."""
        with self._lock:
            self._state.pending.pop(target, None)
            counts = self._state.schema_changes
            counts[table] = counts.get(table, 0) + 1
            if schema is None:
                self._state.targets.pop(target, None)
            else:
                self._state.targets[target] = schema

    def truncate_applied(self, table: TableId) -> None:
        """A TRUNCATE of ``table`` emptied its target (counted with the schema changes)."""
        with self._lock:
            counts = self._state.schema_changes
            counts[table] = counts.get(table, 0) + 1

    def sink_retried(self) -> None:
        """The sink tries a batch again: its connection to the target was lost."""
        with self._lock:
            self._sink_retries += 1
            self._state.sink_retries += 1

    def table_dropped(self, table: TableId, target_dropped: bool) -> None:
        """A DROP of ``table`` reached its target (counted with the schema changes); a
        dropped target's evolved schema is forgotten (a table created again under the name
        starts with its own)."""
        with self._lock:
            counts = self._state.schema_changes
            counts[table] = counts.get(table, 0) + 1
            if target_dropped:
                self._state.targets.pop(table, None)

    def snapshot(self) -> MetricsSnapshot:
        self._refresh_head(force=False)
        with self._lock:
            now = self._clock()
            state, last = self._state, self._last
            offset = state.source_offset
            return MetricsSnapshot(
                pipeline=self.pipeline,
                now=now,
                started=self._started,
                batches=self._batches,
                last_batch_id=state.batch_id,
                last_batch_written=state.written,
                last_batch_seconds=None if last is None else last.written - last.started,
                fetch_lag=state.fetch_lag,
                emit_lag=state.emit_lag,
                idle_seconds=max(0.0, now - self._last_active),
                position=None if offset is None else self._describe(offset),
                head=self._head,
                tables=tuple(
                    TableMetrics(
                        t,
                        self._states[t],
                        state.totals.get(t, TableCounts()),
                        self._estimates.get(t),
                        state.schema_changes.get(t, 0),
                    )
                    for t in self._tables
                ),
                sink_retries=self._sink_retries,
                source_retries=self._source_retries(),
            )

    def _refresh_head(self, force: bool) -> None:
        if self._log_head is None:
            return
        with self._lock:
            offset = self._state.source_offset
            now = self._clock()
            if offset is None or (not force and now - self._head_at < self._head_interval):
                return
            self._head_at = now
        head = self._log_head(offset)  # outside the lock: a round trip to the server
        with self._lock:
            self._head = head


def _known(states: Mapping[TableId, str], tables: Sequence[TableId]) -> dict[TableId, str]:
    """The states of the pipeline's tables (an offset may still name tables no longer
    captured)."""
    wanted = set(tables)
    return {t: s for t, s in states.items() if t in wanted}


__all__ = [
    "PENDING",
    "SNAPSHOTTING",
    "STREAMING",
    "LogHead",
    "MetricsSnapshot",
    "PipelineMetrics",
    "TableMetrics",
]

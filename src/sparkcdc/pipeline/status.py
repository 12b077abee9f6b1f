"""``sparkcdc status``: where a pipeline is, from its checkpoint and its source, without
Spark (docs/operations.md).

Read-only and safe while the pipeline runs: Spark's newest ``commits/N`` is the last
committed batch and ``offsets/N`` its end offset; the run state adds totals; the source
is asked (read-only) for its log's end and row estimates. If the source cannot be
reached, the checkpoint's part is still reported, with the error.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_report import STREAMING, TableCounts, table_states
from sparkcdc.pipeline.checkpoint import batch_offset
from sparkcdc.pipeline.definition import PipelineDefinition
from sparkcdc.pipeline.metrics import LogHead, TableMetrics
from sparkcdc.pipeline.run_state import RunState, load_run_state
from sparkcdc.pipeline.source_probe import SourceProbe
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.registry import make_sink
from sparkcdc.snapshot.offset import SourceOffset


class NoCheckpointError(SparkCdcError):
    """The pipeline has not committed a batch yet."""


@dataclass(frozen=True)
class TableStatus:
    table: str
    state: str  #: pending, snapshotting or streaming
    snapshot_rows: int
    estimated_rows: int | None
    snapshot_progress: float  #: 0..1, 1 exactly when the snapshot is done
    inserts: int
    updates: int
    deletes: int
    target: str | None
    schema_changes: int = 0  #: applied to its target, across restarts
    #: A re-read of a streaming table running (a signal, or after a schema change):
    #: ``signal``, the key range ``from`` / ``to`` (None: open), ``at`` (the key read up
    #: to; None before its first chunk), ``paused``; None when there is none.
    reread: dict[str, Any] | None = None
    reread_rows: int = 0  #: rows read again on demand, across restarts


@dataclass(frozen=True)
class PipelineStatus:
    pipeline: str
    source: str
    sink: str
    checkpoint: str
    committed_batch: int
    committed_at: float  #: epoch seconds
    position: str
    head: str | None
    bytes_behind: int | None
    #: How long the oldest change not yet read has waited in the source's log (0 when
    #: caught up; None when the source cannot tell: PostgreSQL's WAL has no commit times
    #: before decoding), and when it was written (epoch seconds).
    seconds_behind: float | None
    waiting_since: float | None
    source_error: str | None
    written_batch: int | None  #: the last batch the sink wrote (run state)
    written_at: float | None
    newest_commit: float | None  #: newest log commit time written
    fetch_lag: float | None  #: of the last batch with log changes
    emit_lag: float | None
    tables: list[TableStatus] = field(default_factory=list)
    #: Lost connections tried again, across restarts (run state): to the source by Spark
    #: tasks of written batches, to the target by the sink.
    source_retries: int = 0
    sink_retries: int = 0
    now: float = 0.0  #: when the status was taken (epoch seconds)
    #: The checkpoint's pause file exists: a running pipeline plans no batch until it is
    #: removed (made by hand, or by a stop that did not finish).
    paused_by_file: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def last_commit(checkpoint: Path) -> tuple[int, float] | None:
    """The newest committed batch of a checkpoint and when it was committed."""
    commits = checkpoint / "commits"
    try:
        ids = [int(p.name) for p in commits.iterdir() if p.name.isdigit()]
    except OSError:
        return None
    if not ids:
        return None
    batch = max(ids)
    return batch, (commits / str(batch)).stat().st_mtime


def running_rereads(offset: str) -> dict[TableId, dict[str, Any]]:
    """The re-reads running in a source offset (JSON text), by table, as
    :attr:`TableStatus.reread` shows them (keys as text; a one-column key is its value)."""
    parsed = SourceOffset.parse(offset)
    found = {}
    for table, progress in parsed.tables.items():
        resnapshot = progress.again
        if resnapshot is None or resnapshot.done:
            continue
        found[table] = {
            "signal": resnapshot.signal,
            "from": _key_text(resnapshot.lo),
            "to": _key_text(resnapshot.hi),
            "at": _key_text(resnapshot.cursor) if resnapshot.started else None,
            "paused": parsed.paused,
        }
    return found


def _key_text(value: Any) -> str | None:
    if value is None:
        return None
    parts = value if isinstance(value, tuple) else (value,)
    return ", ".join(str(p) for p in parts)


def pipeline_status(definition: PipelineDefinition) -> PipelineStatus:
    settings = definition.settings
    commit = last_commit(settings.checkpoint)
    offset = None if commit is None else batch_offset(settings.checkpoint, commit[0])
    if commit is None or offset is None:
        raise NoCheckpointError(
            f"pipeline '{settings.name}' has no committed batch in {settings.checkpoint} yet: "
            f"start it with `sparkcdc run {definition.path}`"
        )
    state = load_run_state(settings.checkpoint)
    states = table_states(offset)
    probe = SourceProbe(definition.connector.handle(definition.source_config))
    try:
        position = probe.describe(offset)
        head = probe.log_head(offset, waiting=True)
        now = time.time()
        pending = [t for t, s in states.items() if s != STREAMING]
        estimates = probe.estimated_rows(pending) if pending and head is not None else {}
        error = probe.last_error
    finally:
        probe.close()
    tables = _table_statuses(definition, states, state, estimates, running_rereads(offset))
    written = state.batch_id >= 0
    return PipelineStatus(
        pipeline=settings.name,
        source=definition.source_type,
        sink=definition.sink_type,
        checkpoint=str(settings.checkpoint),
        committed_batch=commit[0],
        committed_at=commit[1],
        position=position,
        head=None if head is None else head.position,
        bytes_behind=None if head is None else head.bytes_behind,
        seconds_behind=None if head is None else seconds_behind(head, now),
        waiting_since=None if head is None else head.waiting_since,
        source_error=error,
        written_batch=state.batch_id if written else None,
        written_at=state.written,
        newest_commit=state.newest_commit,
        fetch_lag=state.fetch_lag,
        emit_lag=state.emit_lag,
        tables=tables,
        source_retries=state.source_retries,
        sink_retries=state.sink_retries,
        now=now,
        paused_by_file=definition.pause_file.exists(),
    )


def _table_statuses(
    definition: PipelineDefinition,
    states: dict[TableId, str],
    state: RunState,
    estimates: dict[TableId, int | None],
    rereads: dict[TableId, dict[str, Any]],
) -> list[TableStatus]:
    """Each table's line of the status: its state, counts and target."""
    sink = make_sink(definition.sink_type, definition.sink_options, definition.path.parent)
    tables = []
    for table, table_state in sorted(states.items()):
        totals = state.totals.get(table, TableCounts())
        metrics = TableMetrics(table, table_state, totals, estimates.get(table))
        tables.append(
            TableStatus(
                table=str(table),
                state=table_state,
                snapshot_rows=totals.snapshot_rows,
                estimated_rows=estimates.get(table),
                snapshot_progress=metrics.snapshot_progress,
                inserts=totals.inserts,
                updates=totals.updates,
                deletes=totals.deletes,
                target=sink.target_of(SinkTable(table, None, ())),
                schema_changes=state.schema_changes.get(table, 0),
                reread=rereads.get(table),
                reread_rows=totals.reread_rows,
            )
        )
    sink.close()
    return tables


def seconds_behind(head: LogHead, now: float) -> float | None:
    """How long the oldest change not yet read has waited: 0 when nothing is behind."""
    if head.waiting_since is None:
        return 0.0 if head.bytes_behind == 0 or head.waiting_known else None
    return max(0.0, now - head.waiting_since)


def status_json(status: PipelineStatus) -> str:
    return json.dumps(status.to_json(), indent=2)

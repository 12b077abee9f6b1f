"""A pipeline's totals across restarts, kept in its checkpoint folder.

Spark's checkpoint says which batch was committed, not what the batches held; ``status``
and the metrics need running totals (snapshot rows per table for progress, changes by
kind), so the runner adds each batch here after its sink write. A batch is added only if
its id is above the last one added: a batch replayed after a crash between the sink write
and this file's write is added then, never twice. Rewritten atomically (temp file, rename).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_report import BatchReport, TableCounts

#: Under the checkpoint: Spark ignores folders it does not own.
STATE_FILE = Path("sparkcdc") / "state.json"


@dataclass
class RunState:
    batch_id: int = -1  #: the last batch added (-1: none yet)
    written: float | None = None  #: when its sink write returned (epoch seconds)
    source_offset: str | None = None  #: its end offset (JSON text)
    totals: dict[TableId, TableCounts] = field(default_factory=dict)
    newest_commit: float | None = None  #: newest log commit time written so far
    fetch_lag: float | None = None  #: of the last batch with log changes
    emit_lag: float | None = None
    #: Targets whose schema schema changes made differ from their table's columns
    #: (pipeline/evolution.py), shaped and merged targets a schema change reached
    #: (pipeline/shaped_evolution.py), by target name (a one-table target's is its
    #: table's), as Spark StructType JSON: a restart conforms rows to them.
    targets: dict[TableId, str] = field(default_factory=dict)
    #: Schema changes written ahead: recorded (``targets`` has the target's schema after
    #: the change) before the sink applies them, removed once applied. A restart that
    #: finds one left by a crash finishes it, with its renames and drops (``moves``):
    #: the target may or may not have it, and the appliers change only what is missing.
    #: By target name: ``{"schema": ..., "before": the entry in targets before or None,
    #: "moves": ColumnMoves JSON}``.
    pending: dict[TableId, dict[str, Any]] = field(default_factory=dict)
    #: Schema changes applied to each table's target, across restarts.
    schema_changes: dict[TableId, int] = field(default_factory=dict)
    #: Lost connections tried again, across restarts: to the source by Spark tasks (as
    #: their batches were written), and to the target by the sink.
    source_retries: int = 0
    sink_retries: int = 0

    def add(self, report: BatchReport) -> bool:
        """Add a batch's counts unless it was added before; True if added."""
        if report.batch_id <= self.batch_id:
            return False
        self.batch_id = report.batch_id
        self.written = report.written
        self.source_offset = report.source_offset
        for table, counts in report.counts.items():
            self.totals[table] = self.totals.get(table, TableCounts()) + counts
        if report.newest_commit is not None:
            self.newest_commit = max(self.newest_commit or 0.0, report.newest_commit)
            self.fetch_lag, self.emit_lag = report.fetch_lag, report.emit_lag
        return True

    def to_json(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "written": self.written,
            "source_offset": self.source_offset,
            "tables": {t.key: c.to_json() for t, c in sorted(self.totals.items())},
            "newest_commit": self.newest_commit,
            "fetch_lag": self.fetch_lag,
            "emit_lag": self.emit_lag,
            "targets": {t.key: schema for t, schema in sorted(self.targets.items())},
            "pending": {t.key: change for t, change in sorted(self.pending.items())},
            "schema_changes": {t.key: n for t, n in sorted(self.schema_changes.items())},
            "source_retries": self.source_retries,
            "sink_retries": self.sink_retries,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        return cls(
            batch_id=int(data.get("batch_id", -1)),
            written=data.get("written"),
            source_offset=data.get("source_offset"),
            totals={
                TableId.from_key(k): TableCounts.from_json(v)
                for k, v in data.get("tables", {}).items()
            },
            newest_commit=data.get("newest_commit"),
            fetch_lag=data.get("fetch_lag"),
            emit_lag=data.get("emit_lag"),
            targets={TableId.from_key(k): v for k, v in data.get("targets", {}).items()},
            pending={TableId.from_key(k): v for k, v in data.get("pending", {}).items()},
            schema_changes={
                TableId.from_key(k): int(v) for k, v in data.get("schema_changes", {}).items()
            },
            source_retries=int(data.get("source_retries", 0)),
            sink_retries=int(data.get("sink_retries", 0)),
        )


def load_run_state(checkpoint: Path) -> RunState:
    """The stored state, or an empty one (first run, or a file from a crashed write: the
    totals then restart from zero, which only affects progress display)."""
    try:
        return RunState.from_json(json.loads((checkpoint / STATE_FILE).read_text("utf-8")))
    except (OSError, ValueError, TypeError, AttributeError):
        return RunState()


def save_run_state(checkpoint: Path, state: RunState) -> None:
    path = checkpoint / STATE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_suffix(".tmp")
    temp.write_text(json.dumps(state.to_json()), encoding="utf-8")
    os.replace(temp, path)

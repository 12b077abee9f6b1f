"""``sparkcdc status`` for people: a few lines about the pipeline, a table per captured
table (``--json`` is for scripts)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from sparkcdc.core.printable import printable, printable_name
from sparkcdc.pipeline.status import PipelineStatus

COLOURS = {"streaming": "green", "snapshotting": "yellow", "pending": "yellow"}


def status_view(status: PipelineStatus, now: float | None = None) -> RenderableType:
    if now is None:  # ages as of when the status was taken, as --json has them
        now = status.now or time.time()
    lines = [
        f"pipeline '{status.pipeline}': {status.source} -> {status.sink}, "
        f"checkpoint {status.checkpoint}",
        f"last committed batch {status.committed_batch} at {_when(status.committed_at, now)}",
        f"position {status.position}",
    ]
    if status.head is not None:
        behind = status.bytes_behind
        lines.append(
            f"source log ends at {status.head}"
            + ("" if behind is None else f": {behind:,} bytes behind")
        )
        if status.waiting_since is not None:
            lines.append(f"oldest change not read yet: written {_when(status.waiting_since, now)}")
    if status.paused_by_file:
        lines.append(
            f"paused: {status.checkpoint}/pause exists (a running pipeline plans no batch "
            "until it is removed; the next run removes it)"
        )
    if status.source_error is not None:
        lines.append(f"source not reachable: {status.source_error}")
    if status.emit_lag is not None:
        lines.append(
            f"last batch with changes: fetch lag {status.fetch_lag:.1f} s, "
            f"emit lag {status.emit_lag:.1f} s"
        )
    if status.newest_commit is not None:
        lines.append(f"newest change written: committed {_when(status.newest_commit, now)}")
    if status.source_retries or status.sink_retries:
        lines.append(
            f"lost connections tried again: {status.source_retries:,} to the source, "
            f"{status.sink_retries:,} to the target"
        )
    table = Table(title=None)
    for column in ("table", "state", "snapshot", "inserts", "updates", "deletes", "target"):
        table.add_column(column)
    for t in status.tables:
        snapshot = f"{t.snapshot_rows:,} rows"
        if t.state != "streaming":
            estimate = "?" if t.estimated_rows is None else f"~{t.estimated_rows:,}"
            snapshot += f" of {estimate} ({t.snapshot_progress:.0%})"
        else:
            snapshot += " (done)"
        state = f"[{COLOURS.get(t.state, 'white')}]{t.state}[/]"
        if t.reread is not None:
            state += ", [yellow]re-reading[/]" + (" (paused)" if t.reread["paused"] else "")
            snapshot += "; " + escape(printable_name(_reread(t.reread, t.reread_rows)))
        table.add_row(
            escape(printable_name(t.table)),
            state,
            snapshot,
            f"{t.inserts:,}",
            f"{t.updates:,}",
            f"{t.deletes:,}",
            escape(printable_name(t.target or status.sink)),
        )
    return Group(*(Text(printable(line)) for line in lines), table)


def _reread(reread: dict[str, Any], rows: int) -> str:
    """``signal 'fix' keys 100..200, at 150, 1,234 rows read again`` (open ends: ``..``)."""
    keys = f"{reread['from'] or ''}..{reread['to'] or ''}"
    at = "not started" if reread["at"] is None else f"at {reread['at']}"
    return f"signal '{reread['signal']}' keys {keys}, {at}, {rows:,} rows read again"


def _when(epoch: float, now: float) -> str:
    stamp = dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({max(0.0, now - epoch):.0f} s ago)"

"""What ``sparkcdc run`` and the demo print while a pipeline runs (docs/operations.md).

While a snapshot runs on a terminal: a live display, a bar per table being copied and
a total (rows, percent, rate, time left). Otherwise, and once every table streams: one
line per batch (changes by kind, time, lag, bytes behind). At the end, a summary. In a
pipe or a file there is no live display: the lines say the snapshot's percentages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)

from sparkcdc.core.printable import PrintableFormatter, printable_name
from sparkcdc.pipeline.batch_report import STREAMING, BatchReport
from sparkcdc.pipeline.metrics import MetricsSnapshot, PipelineMetrics, TableMetrics

TOTAL = "all tables"


class LiveConsole:
    def __init__(
        self,
        console: Console,
        metrics: PipelineMetrics,
        live: bool | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.console = console
        self.metrics = metrics
        self.live = console.is_terminal if live is None else live
        self._clock = clock
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._copying = False  #: some table's snapshot was not done at the last batch
        #: Per table (and the total): snapshot rows copied before this run, and when this
        #: run's first batch with rows of it began; rates count this run's rows only.
        self._rows_before: dict[str, int] = {}
        self._copying_since: dict[str, float] = {}

    def start(self) -> None:
        snapshot = self.metrics.snapshot()
        copying = [t for t in snapshot.tables if t.state != STREAMING]
        self._copying = bool(copying)
        if self.live and copying:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                MofNCompleteColumn(),
                TextColumn("rows"),
                TextColumn("{task.fields[rate]}"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            for table in copying:
                self._tasks[str(table.table)] = self._progress.add_task(
                    escape(printable_name(str(table.table))), total=_size(table) or None, rate=""
                )
            if len(copying) > 1:
                self._tasks[TOTAL] = self._progress.add_task(TOTAL, total=None, rate="")
            self._rows_before = {str(t.table): t.totals.snapshot_rows for t in snapshot.tables}
            self._rows_before[TOTAL] = sum(t.totals.snapshot_rows for t in snapshot.tables)
            self._update(snapshot)
            self._progress.start()

    def on_batch(self, report: BatchReport) -> None:
        for table, counts in report.counts.items():
            if counts.snapshot_rows:
                self._copying_since.setdefault(str(table), report.started)
                self._copying_since.setdefault(TOTAL, report.started)
        snapshot = self.metrics.snapshot()
        finished = self._copying and snapshot.snapshot_remaining_tables == 0
        self._copying = snapshot.snapshot_remaining_tables > 0
        if self._progress is not None:
            self._update(snapshot)
            if finished:
                self._progress.stop()
                self._progress = None
            elif not report.changes:
                return  # the bars say it
        if not (self.live and finished and not report.changes):
            self.console.print(batch_line(report, snapshot, with_snapshot=not self.live))
        if finished:
            self.console.print("snapshot done: every table is streaming")

    def _update(self, snapshot: MetricsSnapshot) -> None:
        assert self._progress is not None
        done = total = 0
        for table in snapshot.tables:
            task = self._tasks.get(str(table.table))
            rows, size = table.totals.snapshot_rows, _size(table)
            done, total = done + rows, total + size
            if task is not None:
                rate = self._rate(str(table.table), rows)
                self._progress.update(task, completed=rows, total=size or None, rate=rate)
        if TOTAL in self._tasks:
            rate = self._rate(TOTAL, done)
            self._progress.update(self._tasks[TOTAL], completed=done, total=total, rate=rate)

    def _rate(self, name: str, rows: int) -> str:
        """``12.3 k rows/s``: this run's snapshot rows of ``name`` over the time since its
        first batch with some began (empty before that)."""
        since = self._copying_since.get(name)
        copied = rows - self._rows_before.get(name, 0)
        if since is None or copied <= 0:
            return ""
        return f"{_si(copied / max(1e-3, self._clock() - since))} rows/s"

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        self.console.print(summary_line(self.metrics.snapshot()))


def batch_line(report: BatchReport, snapshot: MetricsSnapshot, with_snapshot: bool) -> str:
    """``batch 12: 1,216 changes (+10 ~1,182 -24) in 0.84 s, emit lag 0.9 s, 0 B behind``."""
    inserts = sum(c.inserts for c in report.counts.values())
    updates = sum(c.updates for c in report.counts.values())
    deletes = sum(c.deletes for c in report.counts.values())
    parts = []
    reread = sum(c.reread_rows for c in report.counts.values())
    if report.snapshot_rows:
        parts.append(f"{report.snapshot_rows:,} snapshot rows")
    if reread:
        parts.append(f"{reread:,} rows read again")
    if report.changes or not (report.snapshot_rows or reread):
        parts.append(f"{report.changes:,} changes (+{inserts:,} ~{updates:,} -{deletes:,})")
    seconds = report.written - report.started
    line = f"batch {report.batch_id}: {', '.join(parts)} in {seconds:.2f} s"
    if report.emit_lag is not None:
        line += f", emit lag {report.emit_lag:.1f} s"
    if snapshot.head is not None and snapshot.head.bytes_behind is not None:
        line += f", {_bytes(snapshot.head.bytes_behind)} behind"
    copying = [t for t in snapshot.tables if t.state != STREAMING]
    if with_snapshot and copying:
        line += "; snapshot " + snapshot_summary(snapshot.tables)
    return escape(line)


def snapshot_summary(tables: Sequence[TableMetrics]) -> str:
    """``45% (shop.orders 45%, shop.items done)``: rows copied over all tables' estimates."""
    done = sum(t.totals.snapshot_rows for t in tables)
    total = sum(_size(t) for t in tables)
    each = ", ".join(
        f"{printable_name(str(t.table))} "
        f"{'done' if t.state == STREAMING else f'{t.snapshot_progress:.0%}'}"
        for t in tables
    )
    share = done / total if total else 0.0
    if any(t.state != STREAMING for t in tables):
        share = min(share, 0.99)
    return f"{share:.0%} ({each})"


def summary_line(snapshot: MetricsSnapshot) -> str:
    tables = snapshot.tables
    rows = sum(t.totals.snapshot_rows for t in tables)
    inserts = sum(t.totals.inserts for t in tables)
    updates = sum(t.totals.updates for t in tables)
    deletes = sum(t.totals.deletes for t in tables)
    line = (
        f"{snapshot.batches} batches in {snapshot.now - snapshot.started:.0f} s; in total "
        f"{rows:,} snapshot rows and {inserts + updates + deletes:,} changes "
        f"(+{inserts:,} ~{updates:,} -{deletes:,})"
    )
    if snapshot.position is not None:
        line += f"; at {snapshot.position}"
    if snapshot.head is not None and snapshot.head.bytes_behind is not None:
        line += f", {_bytes(snapshot.head.bytes_behind)} behind the source"
    streaming = sum(1 for t in tables if t.state == STREAMING)
    line += f"; {streaming} of {len(tables)} tables streaming"
    return escape(line)


def _size(table: TableMetrics) -> int:
    """A table's rows to copy: what was copied once done, else the estimate (or what was
    copied, if more)."""
    rows = table.totals.snapshot_rows
    return rows if table.state == STREAMING else max(table.estimated_rows or 0, rows)


def _si(value: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f}"


def _bytes(value: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"


def log_to(console: Console, log_file: Path | None) -> None:
    """Our log lines at INFO on the console (through rich, so they print above a live
    display), and into ``log_file`` with Spark's."""
    from rich.logging import RichHandler

    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    handler = RichHandler(console=console, show_path=False, markup=False)
    handler.setFormatter(PrintableFormatter("%(message)s"))
    handler.setLevel(logging.INFO)
    root.addHandler(handler)
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        file = logging.FileHandler(log_file, encoding="utf-8")
        file.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(file)
    logging.getLogger("sparkcdc").setLevel(logging.INFO)

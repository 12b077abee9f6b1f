"""Where a pipeline batch's seconds go (``benchmarks.soak --breakdown``), from three clocks
that already run, joined per batch:

* Spark's query progress of each batch (``durationMs``): the source's planning
  (``latestOffset``: discovery and the binlog scan, in the Python planner process), the
  offset log's write (``walCommit``), the batch's planning, the sink (``addBatch``: our
  ``foreachBatch``), the commit log's write (``commitOffsets``), the whole trigger;
* the runner's steps of the batch (``BatchReport.steps``, pipeline/runner.py): the driver's
  Python from the batch's offsets to its recorded metrics;
* Spark's status store (kept with the UI off): every job's submission and completion
  times, a job being the batch's whose ``foreachBatch`` it ran in, and the runner step's
  during which it was submitted (its call site does not tell: PySpark names the first
  frame outside its own files, which in ``foreachBatch`` is Py4J's callback).

and, for ``writer: native``, a clock put around the delta-rs commits for the run
(``sinks/delta/native.py``'s ``merge`` and ``append``, wrapped here: nothing in
``src/`` times them). The clocks cost a few calls per batch; the status store keeps
``RETAINED_JOBS`` jobs (a Spark setting given to the benchmark's session).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sparkcdc.pipeline.batch_report import (
    COUNTED,
    OFFSETS,
    PLANNED,
    RECORDED,
    RELEASED,
    WRITTEN,
    BatchReport,
)

#: Jobs (and stages) Spark's status store keeps: enough for an hour of 1-s batches.
RETAINED_JOBS = 100_000
SESSION_CONF = {
    "spark.ui.retainedJobs": str(RETAINED_JOBS),
    "spark.ui.retainedStages": str(RETAINED_JOBS),
}


@dataclass(frozen=True)
class Job:
    """One Spark job as the status store has it (times in epoch seconds)."""

    job_id: int
    submitted: float
    completed: float | None
    tasks: int

    @property
    def seconds(self) -> float:
        return 0.0 if self.completed is None else self.completed - self.submitted


def spark_jobs(spark: Any) -> list[Job]:
    """Every job Spark's status store holds (read once, at the end of a run: each is a few
    Py4J calls)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    found = []
    jobs = store.jobsList(None).iterator()
    while jobs.hasNext():
        job = jobs.next()
        submitted = job.submissionTime()
        if not submitted.isDefined():
            continue
        completed = job.completionTime()
        found.append(
            Job(
                int(job.jobId()),
                submitted.get().getTime() / 1000,
                completed.get().getTime() / 1000 if completed.isDefined() else None,
                int(job.numTasks()),
            )
        )
    return sorted(found, key=lambda j: j.submitted)


class ProgressLog:
    """Spark's progress of every batch of a query (``durationMs``, the trigger's start),
    read from the JVM every ``interval`` seconds by a thread: the query keeps its last 100
    only (each holds two offsets: with 100 tables, ~0.25 MB), and the batches' ids are
    read newest first until one already seen."""

    def __init__(self, interval: float = 5.0) -> None:
        self.interval = interval
        self.durations: dict[int, dict[str, float]] = {}
        self.started: dict[int, float] = {}  #: when each batch's trigger started
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._query: Callable[[], Any] = lambda: None

    def follow(self, query: Callable[[], Any]) -> ProgressLog:
        """Poll ``query()`` (the run's current Spark query) until :meth:`close`."""
        self._query = query
        self._thread = threading.Thread(target=self._run, name="progress-log", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        query = self._query()
        if query is None:
            return
        try:
            progress = query._jsq.recentProgress()
        except Exception:  # the query stopped: its last progress was read before
            return
        for i in range(len(progress) - 1, -1, -1):
            one = progress[i]
            batch = int(one.batchId())
            if batch in self.durations:
                break
            durations = one.durationMs()
            self.durations[batch] = {str(k): int(durations[k]) / 1000 for k in durations}
            self.started[batch] = _epoch(str(one.timestamp()))

    def close(self, final: bool = True) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if final:
            self.poll()


def _epoch(timestamp: str) -> float:
    """Spark's progress timestamp (``2026-12-05T17:01:02.345Z``) in epoch seconds."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Call:
    """One delta-rs commit: when it started and ended."""

    start: float
    end: float


@dataclass
class CommitClock:
    """The native writer's delta-rs commits, timed (``native.merge`` and ``native.append``
    wrapped while :meth:`installed`)."""

    calls: list[Call] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def installed(self) -> Iterator[CommitClock]:
        from sparkcdc.sinks.delta import native

        originals = {name: getattr(native, name) for name in ("merge", "append")}

        def timed(call: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                start = time.time()
                try:
                    return call(*args, **kwargs)
                finally:
                    end = time.time()
                    with self._lock:
                        self.calls.append(Call(start, end))

            return wrapper

        for name, call in originals.items():
            setattr(native, name, timed(call))
        try:
            yield self
        finally:
            for name, call in originals.items():
                setattr(native, name, call)

    def within(self, start: float, end: float) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if start <= c.start <= end]


def most_at_once(calls: Sequence[Call]) -> int:
    """The most calls that ran at one moment."""
    edges = sorted([(c.start, 1) for c in calls] + [(c.end, -1) for c in calls])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


#: The rows of a breakdown, in the order a batch runs them. ``·`` rows are parts of the
#: row above them.
ROWS = (
    "waiting for the trigger",
    "Spark: latestOffset (source planning, binlog scan)",
    "Spark: offset log write (walCommit)",
    "Spark: batch planning (queryPlanning + getBatch)",
    "Spark: addBatch (foreachBatch)",
    "· offsets read, table events",
    "· split and count",
    "· write plan",
    "· sink write",
    "·· Spark jobs in the sink write",
    "·· delta-rs commits (sum)",
    "·· delta-rs commits (longest)",
    "·· delta-rs commits (count)",
    "·· delta-rs commits (most at once)",
    "· cached rows released",
    "· metrics and run state",
    "· addBatch outside the runner",
    "Spark: commit log write (commitOffsets)",
    "Spark: rest of the trigger",
    "the trigger (triggerExecution)",
    "Spark jobs (count)",
    "Spark jobs (tasks)",
    "Spark jobs (seconds, summed)",
)


#: The runner's steps (``BatchReport.steps``) and their rows.
RUNNER_STEPS = (
    (OFFSETS, "· offsets read, table events"),
    (COUNTED, "· split and count"),
    (PLANNED, "· write plan"),
    (WRITTEN, "· sink write"),
    (RELEASED, "· cached rows released"),
    (RECORDED, "· metrics and run state"),
)


@dataclass
class Breakdown:
    """One batch's seconds per row of :data:`ROWS` (absent: not known for it), its jobs by
    the runner's step they ran in (count, seconds), its tables changed and changes."""

    batch_id: int
    seconds: dict[str, float]
    jobs: dict[str, tuple[int, float]]
    tables: int
    changes: int


def breakdowns(
    batches: Sequence[BatchReport],
    progress: ProgressLog,
    jobs: Sequence[Job],
    commits: CommitClock | None,
) -> list[Breakdown]:
    """Each of ``batches`` broken down (a batch whose progress was not read is left out)."""
    out = []
    previous: tuple[int, float] | None = None  #: the batch before: its id, its trigger's end
    for batch in batches:
        durations = progress.durations.get(batch.batch_id)
        trigger_start = progress.started.get(batch.batch_id)
        if durations is None or trigger_start is None:
            continue
        steps = batch.steps
        end = steps.get(RECORDED, batch.written)
        mine = [j for j in jobs if batch.started <= j.submitted <= end]
        seconds = _spark_rows(durations)
        if previous is not None and previous[0] == batch.batch_id - 1:
            seconds["waiting for the trigger"] = max(0.0, trigger_start - previous[1])
        previous = (batch.batch_id, trigger_start + durations.get("triggerExecution", 0.0))
        seconds.update(_runner_rows(batch, durations))
        if PLANNED in steps and WRITTEN in steps:
            writing = [j for j in mine if steps[PLANNED] <= j.submitted <= steps[WRITTEN]]
            seconds["·· Spark jobs in the sink write"] = sum(j.seconds for j in writing)
            if commits is not None:
                calls = commits.within(steps[PLANNED], steps[WRITTEN])
                seconds["·· delta-rs commits (sum)"] = sum(c.end - c.start for c in calls)
                seconds["·· delta-rs commits (longest)"] = max(
                    (c.end - c.start for c in calls), default=0.0
                )
                seconds["·· delta-rs commits (count)"] = len(calls)
                seconds["·· delta-rs commits (most at once)"] = most_at_once(calls)
        seconds["Spark jobs (count)"] = len(mine)
        seconds["Spark jobs (tasks)"] = sum(j.tasks for j in mine)
        seconds["Spark jobs (seconds, summed)"] = sum(j.seconds for j in mine)
        by_label: dict[str, tuple[int, float]] = {}
        for job in mine:
            label = _step_of(batch, job.submitted)
            count, total = by_label.get(label, (0, 0.0))
            by_label[label] = (count + 1, total + job.seconds)
        tables = sum(1 for c in batch.counts.values() if c.changes or c.snapshot_rows)
        out.append(Breakdown(batch.batch_id, seconds, by_label, tables, batch.changes))
    return out


def _step_of(batch: BatchReport, moment: float) -> str:
    """The runner's step of ``batch`` that ran at ``moment`` (its row's name)."""
    for step, row in RUNNER_STEPS:
        end = batch.steps.get(step)
        if end is not None and moment <= end:
            return row
    return "after the runner's steps"


def _spark_rows(durations: dict[str, float]) -> dict[str, float]:
    known = ("latestOffset", "walCommit", "queryPlanning", "getBatch", "addBatch", "commitOffsets")
    whole = durations.get("triggerExecution", 0.0)
    return {
        "Spark: latestOffset (source planning, binlog scan)": durations.get("latestOffset", 0.0),
        "Spark: offset log write (walCommit)": durations.get("walCommit", 0.0),
        "Spark: batch planning (queryPlanning + getBatch)": durations.get("queryPlanning", 0.0)
        + durations.get("getBatch", 0.0),
        "Spark: addBatch (foreachBatch)": durations.get("addBatch", 0.0),
        "Spark: commit log write (commitOffsets)": durations.get("commitOffsets", 0.0),
        "Spark: rest of the trigger": max(0.0, whole - sum(durations.get(k, 0.0) for k in known)),
        "the trigger (triggerExecution)": whole,
    }


def _runner_rows(batch: BatchReport, durations: dict[str, float]) -> dict[str, float]:
    """The runner's steps as seconds, each from the end of the one before."""
    steps = batch.steps
    rows = {}
    before = batch.started
    for step, row in RUNNER_STEPS:
        if step in steps:
            rows[row] = steps[step] - before
            before = steps[step]
    if RECORDED in steps and "addBatch" in durations:
        rows["· addBatch outside the runner"] = max(
            0.0, durations["addBatch"] - (steps[RECORDED] - batch.started)
        )
    return rows


def table(title: str, columns: Mapping[str, Sequence[Breakdown]]) -> str:
    """The medians of each row over each column's batches, as text (``n/a``: no batch)."""
    heads = [f"{name} ({len(found)} batches)" for name, found in columns.items()]
    lines = [f"\n{title}", "  medians per batch, seconds"]
    width = max(len(r) for r in ROWS)
    sizes = [max(len(h), 12) for h in heads]
    lines.append(_line("", heads, width, sizes))
    found_rows = [*ROWS, "tables changed", "changes"]
    for row in found_rows:
        cells = []
        for found in columns.values():
            values = [_value(b, row) for b in found]
            known = [v for v in values if v is not None]
            cells.append(_cell(row, statistics.median(known)) if known else "n/a")
        lines.append(_line(row, cells, width, sizes))
    labels = sorted({label for found in columns.values() for b in found for label in b.jobs})
    if labels:
        lines.append("  Spark jobs by the runner's step: count / seconds per batch (medians)")
        for label in labels:
            cells = []
            for found in columns.values():
                pairs = [b.jobs.get(label, (0, 0.0)) for b in found]
                if not pairs:
                    cells.append("n/a")
                    continue
                count = statistics.median(p[0] for p in pairs)
                seconds = statistics.median(p[1] for p in pairs)
                cells.append(f"{count:g} / {seconds:.3f}")
            lines.append(_line(label[:width], cells, width, sizes))
    return "\n".join(lines)


def _line(name: str, cells: Sequence[str], width: int, sizes: Sequence[int]) -> str:
    right = "  ".join(c.rjust(s) for c, s in zip(cells, sizes, strict=True))
    return f"  {name.ljust(width)}  {right}"


def _value(batch: Breakdown, row: str) -> float | None:
    if row == "tables changed":
        return float(batch.tables)
    if row == "changes":
        return float(batch.changes)
    return batch.seconds.get(row)


#: Rows that are counts, not seconds.
COUNTS = frozenset(
    {
        "·· delta-rs commits (count)",
        "·· delta-rs commits (most at once)",
        "Spark jobs (count)",
        "Spark jobs (tasks)",
        "tables changed",
        "changes",
    }
)


def _cell(row: str, value: float) -> str:
    return f"{value:g}" if row in COUNTS else f"{value:.3f}"

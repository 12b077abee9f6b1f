"""``sparkcdc run`` / ``status`` / ``verify`` / ``validate``."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sparkcdc.cli.live import LiveConsole, log_to
from sparkcdc.cli.preflight import check_sink_servers, preflight
from sparkcdc.cli.status_view import status_view
from sparkcdc.core.errors import OptionError
from sparkcdc.core.folders import ensure_writable
from sparkcdc.core.printable import printable, printable_name
from sparkcdc.pipeline.batch_report import BatchReport
from sparkcdc.pipeline.definition import PipelineDefinition, load_pipeline
from sparkcdc.pipeline.plan import plan
from sparkcdc.pipeline.prometheus import serve_metrics
from sparkcdc.pipeline.runner import PipelineRun, pipeline_id, prepare, session_for
from sparkcdc.pipeline.status import NoCheckpointError, pipeline_status, status_json
from sparkcdc.verify.run import TableVerdict


def validate(args: argparse.Namespace) -> int:
    """The file, then (unless ``--offline``) what a run would refuse before its first batch,
    with nothing written: the source server and its tables (read-only), the transforms'
    expressions (analysed by Spark, started only when there are transforms) and the
    targets (two tables into one refused)."""
    console = Console(soft_wrap=True)
    console.print(escape(f"checking {args.pipeline}"))
    definition = load_pipeline(args.pipeline)
    rules = [
        f"{len(found)} {name}{'' if len(found) == 1 else 's'}"
        for name, found in (("transform", definition.transforms), ("route", definition.routes))
        if found
    ]
    console.print(
        escape(
            f"file ok: {definition.path}: {describe(definition)}"
            f"{''.join(f', {r}' for r in rules)}, checkpoint {definition.settings.checkpoint}"
        )
    )
    for note in definition.notes:
        console.print(escape(f"note: {note}"))
    if args.offline:
        return 0
    say = _printer(console)
    preflight(definition, log_path(definition), say, servers=False)
    sessions: list[Any] = []  # started here, stopped here
    scratch = Path(tempfile.mkdtemp(prefix="sparkcdc-validate-"))  # Spark's log, then gone

    def spark() -> Any:
        if not definition.transforms:
            return None
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        if SparkContext._active_spark_context is not None:  # a caller's (tests, notebooks)
            return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        sessions.append(session_for(definition, scratch / "spark.log"))
        return sessions[-1]

    try:
        planned = plan(definition, spark, pipeline_id(definition), inspect_only=True, progress=say)
        planned.probe.close()
    finally:
        for session in sessions:
            session.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    console.print(
        f"source ok: {len(planned.tables)} table{'' if len(planned.tables) == 1 else 's'} "
        "match and are ready for CDC; nothing was written"
    )
    check_sink_servers(definition, say)
    for target in planned.targets:
        sources = ", ".join(str(s.table.source) for s in target.sources)
        console.print(
            escape(f"  {sources} -> {planned.sink.target_of(target.table) or target.table.source}")
        )
    return 0


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    if not console.is_terminal:  # a log file or a pipe: whole lines, not wrapped at 80
        console = Console(stderr=True, soft_wrap=True)
    say = _printer(console)
    # from the first second: a signal while the file is read, the source probed or the JVM
    # starts is acknowledged at once and ends the start-up at its next step (nothing is
    # written before the first batch); a second one quits at once
    stop, hurry = stopping_on_signals(quit_on_second=True, acknowledge=_acknowledge)
    definition, log_file = _checked_run(args, say)
    log_to(console, log_file)
    display: LiveConsole | None = None

    def report(batch: BatchReport) -> None:
        if display is not None:
            display.on_batch(batch)

    def step(text: str) -> None:
        if stop.is_set():
            raise StartupStopped
        # PySpark's SparkContext puts its own SIGINT handler in place as it starts
        stopping_on_signals(stop, hurry, quit_on_second=True, acknowledge=_acknowledge)
        say(text)

    try:
        step("checkpoint: " + str(definition.settings.checkpoint))
        pipeline = prepare(definition, on_batch=report, jvm_log=log_file, progress=step)
    except StartupStopped:
        console.print("pipeline stopped before it started; run it again to start it")
        return 0
    # PySpark's SparkContext installed its SIGINT handler: ours again
    stopping_on_signals(stop, hurry, acknowledge=_acknowledge)
    if args.verbose:
        pipeline.spark.sparkContext.setLogLevel("WARN")
    if stop.is_set():
        console.print("pipeline stopped before it started; run it again to start it")
        return 0
    display = LiveConsole(console, pipeline.metrics)
    _announce(console, args, definition, pipeline, log_file)
    display.start()
    try:
        pipeline.start()
        pipeline.wait(stop, hurry=hurry)
    finally:
        display.stop()
    console.print("pipeline stopped; run it again to resume from the checkpoint")
    return 0


def _checked_run(
    args: argparse.Namespace, say: Callable[[str], None]
) -> tuple[PipelineDefinition, Path | None]:
    """The pipeline file of ``run``, read and checked before anything starts (the source
    probed, the checkpoint and log folders writable); with the log file (None: the terminal)."""
    say(f"reading {args.pipeline}")
    definition = load_pipeline(args.pipeline)
    if args.available_now:
        settings = dataclasses.replace(definition.settings, trigger_seconds=None)
        definition = dataclasses.replace(definition, settings=settings)
    say(f"pipeline '{definition.settings.name}': {describe(definition)}")
    for note in definition.notes:
        say(f"note: {note}")
    log_file = None if args.verbose else Path(args.log_file or log_path(definition))
    preflight(definition, log_file, say)
    ensure_writable(definition.settings.checkpoint, "pipeline.checkpoint")
    if log_file is not None:
        ensure_writable(log_file.parent, "--log-file")
    return definition, log_file


def _announce(
    console: Console,
    args: argparse.Namespace,
    definition: PipelineDefinition,
    pipeline: PipelineRun,
    log_file: Path | None,
) -> None:
    """The started pipeline's one-line summary, where its log goes and its metrics' URL."""
    names = ", ".join(str(t.source) for t in pipeline.tables)
    console.print(
        escape(
            f"pipeline '{definition.settings.name}': {names} -> {definition.sink_type} "
            f"(checkpoint {definition.settings.checkpoint}); Ctrl-C stops"
        )
    )
    if log_file is not None:
        console.print(escape(f"Spark's log: {log_file}"))
    if args.metrics_port is not None:
        port = serve_metrics(pipeline.metrics, args.metrics_port, args.metrics_host)
        console.print(f"metrics: http://{args.metrics_host}:{port}/metrics")


class StartupStopped(Exception):
    """A stop was asked for while the pipeline started: the start-up ends at its next step."""


def describe(definition: PipelineDefinition) -> str:
    """``mysql 'MySQL Source' -> delta``: the blocks' types with their Flink CDC names."""
    source = definition.source_type
    sink = definition.sink_type
    if definition.source_name:
        source += f" '{definition.source_name}'"
    if definition.sink_name:
        sink += f" '{definition.sink_name}'"
    return f"{source} -> {sink}"


def _printer(console: Console) -> Any:
    def say(text: str) -> None:
        console.print(escape(printable(text)))

    return say


def _acknowledge(text: str) -> None:
    """Said from a signal handler: straight to the file descriptor, no locks taken."""
    with contextlib.suppress(OSError):
        os.write(2, f"{text}\n".encode())


def log_path(definition: PipelineDefinition) -> Path:
    """Where a pipeline's Spark log goes by default: beside its checkpoint folder."""
    return Path(f"{definition.settings.checkpoint}.log")


def status(args: argparse.Namespace) -> int:
    definition = load_pipeline(args.pipeline)
    logging.getLogger("sparkcdc.pipeline.source_probe").setLevel(logging.ERROR)
    try:
        report = pipeline_status(definition)
    except NoCheckpointError as exc:
        if args.json:
            print(json.dumps({"pipeline": definition.settings.name, "error": str(exc)}))
        else:
            Console(stderr=True).print(escape(f"sparkcdc status: {exc}"))
        return 1
    if args.json:
        print(status_json(report))
    else:
        output_console().print(status_view(report))
    return 0 if report.source_error is None else 3


def stopping_on_signals(
    stop: threading.Event | None = None,
    hurry: threading.Event | None = None,
    quit_on_second: bool = False,
    acknowledge: Any = None,
) -> tuple[threading.Event, threading.Event]:
    """Ctrl-C (SIGINT) and SIGTERM (what schedulers send) ask the pipeline to stop after
    its running micro-batch; a second one stops it at once. They replace PySpark's SIGINT
    handler, which cancels jobs from inside the signal handler, in the middle of whatever
    call to the JVM was running, and prints tracebacks of both. Given events (installed
    again after PySpark's), signals keep setting those. With ``quit_on_second`` (while
    the pipeline starts: nothing is written yet) a second signal exits at once.
    ``acknowledge`` says at once what the signal does (it runs in the signal handler)."""
    stop, hurry = stop or threading.Event(), hurry or threading.Event()
    say = acknowledge or (lambda _: None)

    def on_signal(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if quit_on_second and stop.is_set():
            say(f"{name}: quitting now")
            raise SystemExit(128 + signum)
        if stop.is_set():
            say(f"{name}: stopping now, without waiting for the running batch")
        elif quit_on_second:
            say(f"{name}: stopping; start-up ends at its next step (again: quit now)")
        else:
            say(f"{name}: stopping after the running batch (again: stop now)")
        (hurry if stop.is_set() else stop).set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stop, hurry


def verify(args: argparse.Namespace) -> int:
    say = _printer(Console(stderr=True, soft_wrap=True))
    say(f"reading {args.pipeline}")
    definition = load_pipeline(args.pipeline)
    say(f"verifying pipeline '{definition.settings.name}': {describe(definition)}")
    preflight(definition, log_path(definition), say)
    verdicts = verify_pipeline(definition, jvm_log=log_path(definition), progress=say)
    if args.json:
        print(json.dumps([verdict_json(v) for v in verdicts], indent=2))
    else:
        output_console().print(verdict_table(verdicts))
    return 0 if all(v.status == "equal" for v in verdicts) else 1


def output_console() -> Console:
    """Standard output: on a terminal, its width (rich cuts long values to fit); in a
    pipe or a file, wide enough that no value is ever cut."""
    console = Console()
    return console if console.is_terminal else Console(width=100_000)


def verdict_json(verdict: TableVerdict) -> dict[str, Any]:
    c = verdict.comparison
    return {
        "table": str(verdict.table),
        "status": verdict.status,
        "position": verdict.position,
        "source_rows": None if c is None else c.source_rows,
        "target_rows": None if c is None else c.target_rows,
        "chunks": None if c is None else c.chunks,
        "differing_chunks": None if c is None else c.mismatched_chunks,
        "differing_keys": None if c is None else c.differing_keys,
        "samples": [] if c is None else [f"{key} {why}" for key, why in c.samples[:5]],
        "repeated_changes": None if c is None else c.repeated_changes,
    }


def verify_pipeline(
    definition: PipelineDefinition,
    spark: Any | None = None,
    jvm_log: Path | None = None,
    progress: Any = None,
) -> list[TableVerdict]:
    from sparkcdc.sinks.registry import sink_capabilities
    from sparkcdc.verify.run import verify_tables

    if not sink_capabilities(definition.sink_type, definition.sink_options).verifiable:
        raise OptionError(
            f"sparkcdc verify: the {definition.sink_type} sink's targets cannot be read back "
            "(its declared capabilities); verify reads Delta and JDBC targets"
        )
    run = prepare(definition, spark, jvm_log=jvm_log, progress=progress)
    try:
        return verify_tables(
            run.spark, definition, run.sink, run.targets, run.probe.handle, progress=progress
        )
    finally:
        run.sink.close()
        run.probe.close()


def verdict_table(verdicts: Sequence[TableVerdict]) -> Table:
    table = Table(title="sparkcdc verify")
    for column in (
        "table",
        "status",
        "at position",
        "source rows",
        "target rows",
        "chunks (differing)",
        "differing keys",
    ):
        table.add_column(column)
    colours = {
        "equal": "green",
        "different": "red",
        "snapshotting": "yellow",
        "empty": "yellow",
        "not captured": "yellow",
    }
    for v in verdicts:
        c = v.comparison
        samples = ""
        if c is not None and c.samples:
            samples = "; ".join(f"{key} {why}" for key, why in c.samples[:5])
        if c is not None and c.repeated_changes:
            samples += f" ({c.repeated_changes} changes held more than once)"
        table.add_row(
            escape(printable_name(str(v.table))),
            f"[{colours[v.status]}]{v.status}[/]",
            escape(printable_name(v.position)),
            "-" if c is None else str(c.source_rows),
            "-" if c is None else str(c.target_rows),
            "-" if c is None else f"{c.chunks} ({c.mismatched_chunks})",
            "-" if c is None else escape(printable_name(f"{c.differing_keys} {samples}".strip())),
        )
    return table

"""``sparkcdc run`` / ``verify`` / ``validate``."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import threading
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from sparkcdc.pipeline.definition import PipelineDefinition, load_pipeline
from sparkcdc.pipeline.runner import BatchReport, prepare
from sparkcdc.verify.run import TableVerdict


def validate(args: argparse.Namespace) -> int:
    definition = load_pipeline(args.pipeline)
    Console().print(
        f"[green]ok[/green]: {definition.path}: {definition.source_type} -> "
        f"{definition.sink_type}, checkpoint {definition.settings.checkpoint}"
    )
    return 0


def run(args: argparse.Namespace) -> int:
    definition = load_pipeline(args.pipeline)
    if args.available_now:
        settings = dataclasses.replace(definition.settings, trigger_seconds=None)
        definition = dataclasses.replace(definition, settings=settings)
    console = Console(stderr=True)

    def report(batch: BatchReport) -> None:
        changed = ", ".join(f"{t}: {n}" for t, n in sorted(batch.row_counts.items()) if n)
        console.print(f"batch {batch.batch_id}: {changed or 'no changes'}")

    pipeline = prepare(definition, on_batch=report)
    pipeline.spark.sparkContext.setLogLevel("ERROR")  # Spark's warnings are not ours to show
    stop, hurry = stopping_on_signals()
    names = ", ".join(str(t.source) for t in pipeline.tables)
    console.print(
        f"pipeline '{definition.settings.name}': {names} -> {definition.sink_type} "
        f"(checkpoint {definition.settings.checkpoint}); Ctrl-C stops"
    )
    pipeline.start()
    pipeline.wait(stop, hurry=hurry)
    console.print("pipeline stopped; run it again to resume from the checkpoint")
    return 0


def stopping_on_signals() -> tuple[threading.Event, threading.Event]:
    """Ctrl-C (SIGINT) and SIGTERM (what schedulers send) ask the pipeline to stop after
    its running micro-batch; a second one stops it at once. They replace PySpark's SIGINT
    handler, which cancels jobs from inside the signal handler, in the middle of whatever
    call to the JVM was running, and prints tracebacks of both."""
    stop, hurry = threading.Event(), threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        (hurry if stop.is_set() else stop).set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    return stop, hurry


def verify(args: argparse.Namespace) -> int:
    definition = load_pipeline(args.pipeline)
    verdicts = verify_pipeline(definition)
    console = Console() if Console().is_terminal else Console(width=110)
    console.print(verdict_table(verdicts))
    return 0 if all(v.status == "equal" for v in verdicts) else 1


def verify_pipeline(definition: PipelineDefinition, spark: Any | None = None) -> list[TableVerdict]:
    from sparkcdc.verify.run import verify_tables

    run = prepare(definition, spark)
    try:
        return verify_tables(run.spark, definition, run.sink, run.tables)
    finally:
        run.sink.close()


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
    colours = {"equal": "green", "different": "red", "snapshotting": "yellow", "empty": "yellow"}
    for v in verdicts:
        c = v.comparison
        samples = ""
        if c is not None and c.samples:
            samples = "; ".join(f"{key} {why}" for key, why in c.samples[:5])
        table.add_row(
            str(v.table),
            f"[{colours[v.status]}]{v.status}[/]",
            v.position,
            "-" if c is None else str(c.source_rows),
            "-" if c is None else str(c.target_rows),
            "-" if c is None else f"{c.chunks} ({c.mismatched_chunks})",
            "-" if c is None else f"{c.differing_keys} {samples}".strip(),
        )
    return table

"""What an ADD COLUMN costs a running pipeline: the pause from the DDL to the first row of
the new shape in a 1M-row Delta target, against a plain INSERT's latency in the same run.

    .venv/bin/python -m benchmarks.schema_change [--rows N] [--rounds N] [--tables 1|2]

Loads ``bench.orders`` (``--rows``, default 1M) into a private MariaDB, runs a pipeline
into Delta (trigger 200 ms, ``schema.change.behavior: lenient``) in this process until its
snapshot is done, then per round: (1) an INSERT, timed until the batch holding it has been
written (the baseline: trigger wait, planning, the batch, the MERGE); (2) ``ALTER TABLE ...
ADD COLUMN`` and an INSERT that fills the new column, timed from the ALTER until that
row's batch has been written (the change's own batch, the sink's ``ADD COLUMNS``, and with
one table the query's restart; with ``--tables 2`` the stream is the envelope and needs
none). Times come from the runner's batch reports (no extra Spark jobs while measuring).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import (
    DATABASE,
    ORDERS_COLUMNS,
    TABLE,
    ProcessSampler,
    orders_select,
    populate_orders,
    print_kv,
    print_process_report,
    source_block,
    spark_session,
    start_mariadb,
    warm_buffer_pool,
)
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.batch_report import BatchReport


class Reports:
    """The runner's batch reports as they come, with a way to wait for one."""

    def __init__(self) -> None:
        self.items: list[BatchReport] = []
        self.arrived = threading.Condition()

    def __call__(self, report: BatchReport) -> None:
        with self.arrived:
            self.items.append(report)
            self.arrived.notify_all()

    def first_with_rows(self, table: TableId, after: float, timeout: float = 120) -> float:
        """When the first batch started after ``after`` with rows of ``table`` was written."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for report in self.items:
                    if report.started >= after and report.row_counts.get(table, 0) > 0:
                        return report.written
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no batch with rows of {table} within {timeout} s")
                self.arrived.wait(left)


def insert(key: int, column: str = "", value: int = 0) -> str:
    """One row of the benchmark table (and ``column`` = ``value``)."""
    extra = (f", {column}", f", {value}") if column else ("", "")
    select = orders_select(str(key))
    return f"INSERT INTO {TABLE} ({ORDERS_COLUMNS}{extra[0]}) {select}{extra[1]}"


def pipeline_file(db: EmbeddedMariaDB, folder: Path, tables: int) -> Path:
    names = TABLE if tables == 1 else f"({TABLE}|other)"
    text = f"""\
{source_block(db, f"{DATABASE}.{names}")}sink:
  type: delta
  path: lake
pipeline:
  name: bench-schema-change
  checkpoint: checkpoint
  trigger-interval: 200ms
  schema.change.behavior: lenient
"""
    path = folder / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def measure(args: argparse.Namespace, db: EmbeddedMariaDB, spark: Any, folder: Path) -> None:
    from sparkcdc.pipeline.definition import load_pipeline
    from sparkcdc.pipeline.runner import prepare

    if args.tables == 2:
        db.execute("CREATE TABLE other (id INT PRIMARY KEY)", database=DATABASE)
    reports = Reports()
    run = prepare(load_pipeline(pipeline_file(db, folder, args.tables)), spark, on_batch=reports)
    table = TableId(DATABASE, TABLE)
    started = time.time()
    run.start()
    try:
        deadline = time.monotonic() + 1800
        while not any(r.table_states.get(table) == "streaming" for r in reports.items):
            if time.monotonic() > deadline or not run.active:
                raise RuntimeError("the snapshot did not finish")
            time.sleep(0.2)
        snapshot = time.time() - started
        inserts, alters = [], []
        key = args.rows + 1_000_000
        for i in range(args.rounds):
            key += 1
            t0 = time.time()
            db.execute(insert(key), database=DATABASE)
            inserts.append(reports.first_with_rows(table, t0) - t0)
            time.sleep(1.0)
            key += 1
            t0 = time.time()
            db.execute(f"ALTER TABLE {TABLE} ADD COLUMN bench_{i} INT", database=DATABASE)
            db.execute(insert(key, f"bench_{i}", i), database=DATABASE)
            alters.append(reports.first_with_rows(table, t0) - t0)
            time.sleep(1.0)
    finally:
        run.stop()
    path = folder / "lake" / DATABASE / TABLE
    frame = spark.read.format("delta").load(str(path))
    last = frame.where(f"id = {key}").select(f"bench_{args.rounds - 1}").collect()
    assert last and last[0][0] == args.rounds - 1, "the last row is not in the target"
    print_kv(
        "Set-up",
        [
            ("target", f"Delta, {frame.count():,} rows, {len(frame.columns)} columns"),
            ("stream", "one table (typed: restarts)" if args.tables == 1 else "envelope"),
            ("snapshot", f"{snapshot:.1f} s incl. query start"),
            ("rounds", str(args.rounds)),
        ],
    )
    base, alter = statistics.median(inserts), statistics.median(alters)
    print_kv(
        "Latency to the target, median of the rounds (every round)",
        [
            ("INSERT (baseline)", f"{base:.2f} s ({_each(inserts)})"),
            (
                "ADD COLUMN, then INSERT of the new column",
                f"{alter:.2f} s = {alter / base:.1f}x the INSERT, the change costs "
                f"{alter - base:.2f} s ({_each(alters)})",
            ),
        ],
    )


def _each(seconds: list[float]) -> str:
    return ", ".join(f"{s:.2f}" for s in seconds)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tables", type=int, choices=(1, 2), default=1)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--buffer-pool", default="1G")
    args = parser.parse_args(argv)
    with ProcessSampler() as memory:
        db = start_mariadb(args.buffer_pool)
        try:
            with memory.phase("load"):
                populate_orders(db, args.rows)
                warm_buffer_pool(db)
            spark, _ = spark_session(args.cores)
            with memory.phase("pipeline"), tempfile.TemporaryDirectory() as tmp:
                measure(args, db, spark, Path(tmp))
            spark.stop()
        finally:
            db.stop()
        print_process_report(memory)


if __name__ == "__main__":
    main()

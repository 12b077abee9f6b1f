"""``sparkcdc demo``: a local MariaDB captured into a local Delta table, end to end.

Starts its own MariaDB (binlog on, ROW format, FULL images) in a temporary folder, loads
``demo_orders`` (11 orders) and a larger generated ``demo_events`` table, runs a pipeline
(the same code as ``sparkcdc run``) into Delta tables under ``.sparkcdc-demo/``, then
changes the source while the pipeline runs and shows the changes arriving, the final
table and ``verify``'s verdict. Everything it starts, it stops.
"""

from __future__ import annotations

import argparse
import os
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

from sparkcdc.cli.live import LiveConsole, log_to
from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.identifiers import quoted
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_report import BatchReport
from sparkcdc.snapshot.offset import SourceOffset

if TYPE_CHECKING:
    from sparkcdc.pipeline.definition import PipelineDefinition

ORDERS = [
    (1000, "2021-09-17", "10:20:30", 1, 102, "alice"),
    (1001, "2021-09-17", "10:21:15", 2, 105, "bob"),
    (1002, "2021-09-18", "09:05:00", 1, 101, "carol"),
    (1003, "2021-09-18", "11:45:12", 5, 103, "dave"),
    (1004, "2021-09-19", "14:02:59", 3, 104, "erin"),
    (1005, "2021-09-19", "16:30:00", 1, 102, "frank"),
    (1006, "2021-09-20", "08:15:45", 4, 106, "grace"),
    (1007, "2021-09-20", "12:00:00", 2, 101, "heidi"),
    (1008, "2021-09-21", "17:25:30", 1, 107, "ivan"),
    (1009, "2021-09-21", "19:40:10", 6, 105, "judy"),
    (1010, "2021-09-22", "07:55:05", 2, 103, "mallory"),
]

PIPELINE = """\
# Written by `sparkcdc demo`: a pipeline from the demo's MariaDB into local Delta tables.
source:
  type: mysql
  hostname: {host}
  port: {port}
  username: {user}
  password: ${{SPARKCDC_DEMO_PASSWORD}}
  tables: demo.demo_\\.*
  server-id: 5400-5431
sink:
  type: delta
  path: lakehouse
  table-name: "{{database}}/{{table}}"
  changelog-mode: upsert
pipeline:
  name: sparkcdc-demo
  checkpoint: checkpoint
  trigger-interval: 1s
  max-rows-per-trigger: {batch_rows}
  parallelism: 2
"""


#: The file that says a folder is the demo's own, so a later demo may empty it.
MARKER = ".sparkcdc-demo"


def fresh_workdir(folder: Path) -> None:
    """Make ``folder`` an empty folder for the demo. It is removed first only when the
    demo made it (its :data:`MARKER` file is there): ``--workdir`` may name any folder, a
    home or a project, whose files are not the demo's to delete. A folder that exists
    without the marker is used only if it is empty; otherwise the demo stops."""
    marker = folder / MARKER
    if folder.is_symlink():
        raise SparkCdcError(f"--workdir {folder} is a symbolic link; name a folder")
    if marker.is_file() and not marker.is_symlink():
        shutil.rmtree(folder)
    elif folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise SparkCdcError(
            f"--workdir {folder} exists and was not made by sparkcdc demo (no {MARKER} file "
            "in it), so the demo will not empty it; name a new or empty folder"
        )
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text("made by sparkcdc demo; the next demo empties this folder\n")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkcdc demo", description=__doc__)
    parser.add_argument(
        "--rows", type=int, default=300_000, help="rows of the generated demo_events table"
    )
    parser.add_argument(
        "--workdir", type=Path, default=Path(".sparkcdc-demo"), help="pipeline file + lakehouse"
    )
    return parser


def run_demo(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console() if Console().is_terminal else Console(width=120)
    Demo(console, args.workdir.resolve(), args.rows).run()
    return 0


class Demo:
    def __init__(self, console: Console, workdir: Path, rows: int) -> None:
        self.console = console
        self.workdir = workdir
        self.rows = rows
        self.reports: list[BatchReport] = []
        self.arrived = threading.Condition()
        self.display: LiveConsole | None = None

    def say(self, text: str) -> None:
        self.console.print(f"[bold cyan]==>[/] {text}")

    def run(self) -> None:
        from sparkcdc.embedded.mariadb import EmbeddedMariaDB

        started = time.monotonic()
        fresh_workdir(self.workdir)  # a fresh database: a fresh checkpoint
        self.say("Starting a local MariaDB (binlog on, ROW format, FULL row images)")
        with EmbeddedMariaDB() as db:
            self.load(db)
            pipeline_file = self.write_pipeline(db)
            self.capture(db, pipeline_file)
        self.say(
            f"Done in {time.monotonic() - started:.0f} s. The Delta tables stay in "
            f"{self.workdir / 'lakehouse'}; the pipeline file is {pipeline_file}."
        )

    def load(self, db: Any) -> None:
        db.create_database("demo")
        db.execute(
            "CREATE TABLE demo.demo_orders (order_id INT PRIMARY KEY, order_date DATE NOT NULL,"
            " order_time TIME NOT NULL, quantity INT NOT NULL, product_id INT NOT NULL,"
            " purchaser VARCHAR(64) NOT NULL)"
        )
        values = ", ".join(f"({o}, '{d}', '{t}', {q}, {p}, '{n}')" for o, d, t, q, p, n in ORDERS)
        db.execute(f"INSERT INTO demo.demo_orders VALUES {values}")
        db.execute(
            "CREATE TABLE demo.demo_events (event_id BIGINT PRIMARY KEY, order_id INT NOT NULL,"
            " kind VARCHAR(16) NOT NULL, amount DECIMAL(12,2) NOT NULL,"
            " happened_at DATETIME(3) NOT NULL)"
        )
        if self.rows > 0:
            db.execute(
                "INSERT INTO demo.demo_events SELECT seq, 1000 + seq % 11,"
                " ELT(1 + seq % 3, 'viewed', 'paid', 'shipped'), (seq % 10000) / 100,"
                " TIMESTAMP'2021-09-17 00:00:00' + INTERVAL seq SECOND"
                f" FROM demo.seq_1_to_{self.rows}"
            )
        self.say(
            f"Loaded demo.demo_orders ({len(ORDERS)} rows) and demo.demo_events "
            f"({self.rows:,} rows)"
        )

    def write_pipeline(self, db: Any) -> Path:
        options = db.source_options()
        os.environ["SPARKCDC_DEMO_PASSWORD"] = options["password"]
        text = PIPELINE.format(
            host=options["hostname"],
            port=options["port"],
            user=options["username"],
            batch_rows=max(50_000, self.rows // 4),
        )
        path = self.workdir / "pipeline.yaml"
        path.write_text(text, encoding="utf-8")
        self.say(f"Wrote the pipeline file {path} (the same file `sparkcdc run` takes)")
        return path

    def on_batch(self, report: BatchReport) -> None:
        if self.display is not None:
            self.display.on_batch(report)
        with self.arrived:
            self.reports.append(report)
            self.arrived.notify_all()

    def wait_for(self, done: Any, what: str, timeout: float = 300.0) -> BatchReport:
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                for report in self.reports:
                    if done(report):
                        return report
                if not self.arrived.wait(max(0.0, deadline - time.monotonic())):
                    raise RuntimeError(f"the demo pipeline did not deliver {what} in time")

    def capture(self, db: Any, pipeline_file: Path) -> None:
        """Run the pipeline: its snapshot, then changes made to the source while it runs
        (shown as the target's change feed); then ``status`` and ``verify``."""
        from sparkcdc.pipeline.definition import load_pipeline
        from sparkcdc.pipeline.runner import prepare

        definition = load_pipeline(pipeline_file)
        spark_log = self.workdir / "spark.log"
        log_to(self.console, spark_log)
        self.say(
            "Starting Spark (local[2]) and the pipeline: snapshot first, then the binlog "
            f"(Spark's own log: {spark_log})"
        )
        run = prepare(definition, on_batch=self.on_batch, jvm_log=spark_log)
        path = str(self.workdir / "lakehouse" / "demo" / "demo_orders")
        self.display = LiveConsole(self.console, run.metrics)
        self.display.start()
        run.start()
        try:
            snapshot_done = self.wait_for(_all_copied, "the snapshot")
            self.say("Snapshot complete. demo_orders in the lakehouse:")
            self.show(run.spark.read.format("delta").load(path).orderBy("order_id"))
            version = _latest_version(run.spark, path)
            self.change_source(db, snapshot_done)
            self.show_changes(run.spark, path, version)
        finally:
            run.stop()
            self.display.stop()
        self.status_and_verify(definition, run.spark)

    def change_source(self, db: Any, snapshot_done: BatchReport) -> None:
        """Update and delete a row of the source; wait until the pipeline has delivered
        the changes."""
        orders = TableId("demo", "demo_orders")
        self.say("Changing the source while the pipeline runs:")
        self.console.print("    UPDATE demo_orders SET quantity = 7 WHERE order_id = 1005")
        db.execute("UPDATE demo.demo_orders SET quantity = 7 WHERE order_id = 1005")
        self.console.print("    DELETE FROM demo_orders WHERE order_id = 1000")
        db.execute("DELETE FROM demo.demo_orders WHERE order_id = 1000")
        # the update (pre- and post-image) and the delete: 3 changelog rows, in one batch
        # or spread over several
        self.wait_for(
            lambda r: (
                sum(
                    b.row_counts.get(orders, 0)
                    for b in self.reports
                    if snapshot_done.batch_id < b.batch_id <= r.batch_id
                )
                >= 3
            ),
            "the changes",
        )

    def show_changes(self, spark: Any, path: str, version: int) -> None:
        """The target's change feed after ``version``, and the target now."""
        from pyspark.sql import functions as F

        self.say("The changes as they arrived (the Delta table's change feed):")
        feed = (
            spark.read.format("delta")
            .option("readChangeFeed", "true")
            .option("startingVersion", version + 1)
            .load(path)
        )
        first = F.when(F.col(CHANGE_TYPE) == "update_preimage", 0).otherwise(1)
        self.show(
            feed.orderBy(COMMIT_VERSION, "order_id", first).select(
                "order_id", "quantity", "purchaser", CHANGE_TYPE, COMMIT_VERSION
            )
        )
        self.say("demo_orders in the lakehouse now:")
        self.show(spark.read.format("delta").load(path).orderBy("order_id"))

    def status_and_verify(self, definition: PipelineDefinition, spark: Any) -> None:
        """``sparkcdc status`` and ``sparkcdc verify`` of the pipeline; fails when a target
        differs from the source."""
        from sparkcdc.cli.commands import output_console, verdict_table, verify_pipeline
        from sparkcdc.cli.status_view import status_view
        from sparkcdc.pipeline.status import pipeline_status

        # as the commands print them: in a pipe or a file, no value cut
        whole = self.console if self.console.is_terminal else output_console()
        self.say("Where the pipeline stands (sparkcdc status):")
        whole.print(status_view(pipeline_status(definition)))
        self.say("Verifying every target table against the source (sparkcdc verify):")
        verdicts = verify_pipeline(definition, spark)
        whole.print(verdict_table(verdicts))
        if not all(v.status == "equal" for v in verdicts):
            raise RuntimeError("verify found differences: the demo failed")

    def show(self, frame: Any) -> None:
        table = Table(*frame.columns, show_lines=False)
        for row in frame.collect():
            table.add_row(*("NULL" if v is None else str(v) for v in row))
        self.console.print(table)


def _all_copied(report: BatchReport) -> bool:
    if not report.source_offset:
        return False
    tables = SourceOffset.parse(report.source_offset).tables
    return bool(tables) and all(progress.done for progress in tables.values())


def _latest_version(spark: Any, path: str) -> int:
    row = spark.sql(f"DESCRIBE HISTORY delta.{quoted(path)}").agg({"version": "max"}).collect()[0]
    return int(row[0])

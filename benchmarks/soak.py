"""A long-running stream: a pipeline into Delta under a steady load of changes, for 30+
minutes, with its lag and every process's memory per window of minutes.

    .venv/bin/python -m benchmarks.soak [--minutes 30] [--rate 10000] [--writer native]

Loads ``bench.orders`` with ``--rows`` rows into a private MariaDB, starts a pipeline of it
into Delta in this process (``prepare``, ``start``: its initial snapshot, then the binlog,
a micro-batch every ``--trigger`` seconds), and a writer that changes ``--rate`` rows a
second in autocommitted statements of ``--statement-rows`` rows: updates of recent rows
(50 %), inserts of new keys (30 %), deletes of the oldest rows (20 %), or the shares
``--mix`` gives (``0,100,0``: inserts only, an events table's load). After
``--minutes`` the writer stops, the pipeline catches up and stops, and the Delta table is
compared with the source (rows, and a checksum of every column).

Printed per window of ``--window`` minutes: the changes written and applied per second,
the batches, the lag of each batch's newest change when the batch was written (p50, p95,
max: Flink's ``currentEmitEventTimeLag``), and peak memory per process kind. The first
window after the snapshot is the baseline: memory and lag are flat when the last window
is about the same.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
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
)
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.batch_report import STREAMING


class Writer:
    """Changes ``rate`` rows a second of ``orders`` in statements of ``size`` rows, in ticks
    of a tenth of a second; counts the rows each statement changed."""

    def __init__(
        self,
        db: EmbeddedMariaDB,
        rows: int,
        rate: int,
        size: int,
        mix: tuple[int, int, int] = (50, 30, 20),
    ) -> None:
        self.db, self.rate, self.size = db, rate, size
        total = sum(mix)
        #: a statement updates below the first share, inserts below the second, else deletes
        self.shares = (mix[0] / total, (mix[0] + mix[1]) / total)
        self.low, self.high = 1, rows  # the keys present: low..high
        self.changed = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="soak-writer", daemon=True)
        self.behind = 0.0  #: the longest the writer was behind its pace, seconds

    def _run(self) -> None:
        pick = random.Random(7)
        conn = self.db.connect(DATABASE, account=self.db.root)
        conn.autocommit(True)
        cur = conn.cursor()
        started = time.monotonic()
        due = 0.0
        while not self.stop.is_set():
            roll = pick.random()
            if roll < self.shares[0]:  # recent rows: the newest 10 %
                span = max(self.size, (self.high - self.low) // 10)
                first = pick.randint(max(self.low, self.high - span), self.high)
                cur.execute(
                    f"UPDATE {TABLE} SET quantity = quantity + 1, price = price + 0.01 "
                    f"WHERE id BETWEEN {first} AND {first + self.size - 1}"
                )
            elif roll < self.shares[1]:
                first, self.high = self.high + 1, self.high + self.size
                cur.execute(
                    f"INSERT INTO {TABLE} ({ORDERS_COLUMNS}) "
                    f"{orders_select()} FROM seq_{first}_to_{self.high}"
                )
            else:
                first, self.low = self.low, self.low + self.size
                cur.execute(f"DELETE FROM {TABLE} WHERE id BETWEEN {first} AND {self.low - 1}")
            self.changed += cur.rowcount
            due += self.size / self.rate
            wait = started + due - time.monotonic()
            if wait > 0:
                self.stop.wait(wait)
            else:
                self.behind = max(self.behind, -wait)
        conn.close()


def pipeline_file(db: EmbeddedMariaDB, folder: Path, trigger: int, writer: str = "spark") -> Path:
    path = folder / "pipeline.yaml"
    path.write_text(
        f"""\
{source_block(db, f"{DATABASE}.{TABLE}")}sink:
  type: delta
  path: {folder / "lake"}
  writer: {writer}
pipeline:
  name: soak
  checkpoint: {folder / "checkpoint"}
  trigger-interval: {trigger}s
""",
        encoding="utf-8",
    )
    return path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def checksum(frame: Any) -> tuple[int, int]:
    """(rows, a sum of every row's hash): equal tables have equal ones."""
    from pyspark.sql import functions as F

    # as text: a DATETIME is a timestamp read over JDBC, a timestamp without time zone in
    # Delta; their text is the same wall-clock time
    hashed = F.xxhash64(*[F.col(c).cast("string") for c in frame.columns])
    total_of = F.sum(hashed.cast("decimal(38,0)"))  # a sum of longs overflows one
    ((rows, total),) = frame.select(F.count(F.lit(1)), total_of).collect()
    return int(rows), int(total or 0)


def mix_of(text: str) -> tuple[int, int, int]:
    """``--mix``: three non-negative shares, ``updates,inserts,deletes``."""
    try:
        updates, inserts, deletes = (int(p) for p in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected updates,inserts,deletes, got {text!r}"
        ) from None
    if min(updates, inserts, deletes) < 0 or updates + inserts + deletes == 0:
        raise argparse.ArgumentTypeError(f"shares must be >= 0 and not all 0: {text!r}")
    return updates, inserts, deletes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=int, default=10_000, help="row changes a second")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--statement-rows", type=int, default=500)
    parser.add_argument("--trigger", type=int, default=10, help="seconds between batches")
    parser.add_argument("--window", type=float, default=5, help="minutes per printed row")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--writer",
        choices=("spark", "native"),
        default="spark",
        help="the Delta sink's writer: spark (Spark's MERGE, the old path) or native (delta-rs)",
    )
    parser.add_argument(
        "--mix",
        type=mix_of,
        default=(50, 30, 20),
        help="shares of update, insert and delete statements (default 50,30,20)",
    )
    args = parser.parse_args(argv)

    from sparkcdc.pipeline.definition import load_pipeline
    from sparkcdc.pipeline.runner import prepare

    with ProcessSampler() as memory, tempfile.TemporaryDirectory(prefix="sparkcdc-soak-") as tmp:
        db = start_mariadb("2G")
        try:
            with memory.phase("load"):
                populate_orders(db, args.rows)
            spark, _ = spark_session(args.cores)
            spark.sparkContext.setLogLevel("ERROR")
            folder = Path(tmp)
            pipeline = pipeline_file(db, folder, args.trigger, args.writer)
            run = prepare(load_pipeline(pipeline), spark=spark)
            writer = Writer(db, args.rows, args.rate, args.statement_rows, args.mix)
            windows: list[tuple[str, float, int, list[Any]]] = []
            with memory.phase("snapshot"):
                run.start()
                while not run.batches or set(run.batches[-1].table_states.values()) != {STREAMING}:
                    time.sleep(0.5)
            writer.thread.start()
            started = time.monotonic()
            end = started + args.minutes * 60
            first_batch = len(run.batches)
            lo = 0.0
            while lo < args.minutes:
                hi = min(lo + args.window, args.minutes)
                name = f"minutes {lo:.4g}-{hi:.4g}"
                written_before = writer.changed
                with memory.phase(name):
                    time.sleep(max(0.0, min(end, started + hi * 60) - time.monotonic()))
                written = writer.changed - written_before
                windows.append((name, (hi - lo) * 60, written, run.batches[first_batch:]))
                first_batch, lo = len(run.batches), hi
            writer.stop.set()
            writer.thread.join()
            with memory.phase("catching up"):
                caught = time.monotonic()
                last = writer.changed
                while sum(b.changes for b in run.batches) < last and run.active:
                    time.sleep(0.5)
                caught_up = time.monotonic() - caught
            if not run.active:
                raise SystemExit("the pipeline's query ended before it caught up: see its log")
            run.stop()
            source = (
                spark.read.format("jdbc")
                .option("url", f"jdbc:mysql://{db.host}:{db.port}/{DATABASE}?permitMysqlScheme")
                .option("driver", "org.mariadb.jdbc.Driver")
                .option("user", db.source_options()["username"])
                .option("password", db.source_options()["password"])
                .option("dbtable", TABLE)
                .load()
            )
            target = spark.read.format("delta").load(str(folder / "lake" / DATABASE / TABLE))
            equal = checksum(source) == checksum(target.select(*source.columns))
            report(args, windows, writer, caught_up, equal)
            spark.stop()
        finally:
            db.stop()
    print_process_report(memory)


def report(
    args: argparse.Namespace,
    windows: list[tuple[str, float, int, list[Any]]],
    writer: Writer,
    caught_up: float,
    equal: bool,
) -> None:
    rows = []
    for name, seconds, written, batches in windows:
        lags = [b.emit_lag for b in batches if b.emit_lag is not None]
        applied = sum(b.changes for b in batches)
        lag = (
            f"lag p50 {statistics.median(lags):.1f} s, p95 {percentile(lags, 0.95):.1f} s, "
            f"max {max(lags):.1f} s"
            if lags
            else "no log batch"
        )
        rows.append(
            (
                name,
                f"written {written / seconds:,.0f}/s · applied {applied / seconds:,.0f}/s · "
                f"{len(batches)} batches · {lag}",
            )
        )
    print_kv(
        f"Soak: {args.rate:,} row changes/s for {args.minutes:g} min into Delta "
        f"(trigger {args.trigger} s; first window = baseline)",
        rows,
    )
    print_kv(
        "End",
        [
            ("changes written", f"{writer.changed:,}, at most {writer.behind:.1f} s behind pace"),
            ("caught up after the writer stopped", f"{caught_up:.1f} s"),
            ("Delta table == source (rows, checksum of every column)", str(equal)),
        ],
    )


if __name__ == "__main__":
    main()

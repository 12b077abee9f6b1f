"""A long-running stream: a pipeline into Delta under a steady load of changes, for 30+
minutes, with its lag and every process's memory per window of minutes.

    .venv/bin/python -m benchmarks.soak [--minutes 30] [--rate 10000] [--writer native]
    .venv/bin/python -m benchmarks.soak --tables 100 --rows 1000 --rate 1000 \
        --statement-rows 1 --trigger 1 --writer native   # whole-database sync's latency

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

``--tables N`` spreads the writer's statements over N copies of ``orders`` (``orders``,
``orders_2`` ... ``orders_N``, ``--rows`` rows each), each statement on a
table picked at random. Then each change's latency is printed as well: the time from its
statement's commit on the source to the end of the write of the batch that applied it
(p50, p99, max per window). Which batch applied a change is known from the batches'
per-table counts: a table's changes reach the log, and the batches, in the order the
writer made them.

``--breakdown`` prints where a batch's seconds go (benchmarks/batch_breakdown.py: Spark's
progress, the runner's steps, Spark's jobs, the delta-rs commits), medians over the load's
batches; ``--floor N`` first probes the batch's floor N times after the snapshot, before
the load: an empty batch (one change to a table the pipeline does not capture), one row of
one table, one row of every table (one transaction), each its own column of the breakdown.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from benchmarks import batch_breakdown
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
from sparkcdc.pipeline.batch_report import STREAMING, BatchReport

#: A table the pipeline does not capture: a change to it makes an empty batch (``--floor``).
NOISE = "noise"


class Writer:
    """Changes ``rate`` rows a second of ``tables`` in statements of ``size`` rows, in ticks
    of a tenth of a second; counts the rows each statement changed, and records when each
    table's changes were committed (wall clock, one entry per row changed)."""

    def __init__(
        self,
        db: EmbeddedMariaDB,
        rows: int,
        rate: int,
        size: int,
        mix: tuple[int, int, int] = (50, 30, 20),
        tables: tuple[str, ...] = (TABLE,),
    ) -> None:
        self.db, self.rate, self.size, self.tables = db, rate, size, tables
        total = sum(mix)
        #: a statement updates below the first share, inserts below the second, else deletes
        self.shares = (mix[0] / total, (mix[0] + mix[1]) / total)
        #: the keys present per table: low..high
        self.keys = {t: [1, rows] for t in tables}
        self.committed: dict[str, list[float]] = {t: [] for t in tables}
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
            table = self.tables[pick.randrange(len(self.tables))]
            cur.execute(self._statement(table, pick))
            self.changed += cur.rowcount
            self.committed[table].extend([time.time()] * cur.rowcount)
            due += self.size / self.rate
            wait = started + due - time.monotonic()
            if wait > 0:
                self.stop.wait(wait)
            else:
                self.behind = max(self.behind, -wait)
        conn.close()

    def _statement(self, table: str, pick: random.Random) -> str:
        """The next statement on ``table``: an update of recent rows (the newest 10 %), an
        insert of new keys or a delete of the oldest, by the mix's shares."""
        keys = self.keys[table]
        roll = pick.random()
        if roll < self.shares[0] or keys[1] - keys[0] < 2 * self.size:
            span = max(self.size, (keys[1] - keys[0]) // 10)
            first = pick.randint(max(keys[0], keys[1] - span), keys[1])
            return (
                f"UPDATE {table} SET quantity = quantity + 1, price = price + 0.01 "
                f"WHERE id BETWEEN {first} AND {first + self.size - 1}"
            )
        if roll < self.shares[1]:
            first, keys[1] = keys[1] + 1, keys[1] + self.size
            return (
                f"INSERT INTO {table} ({ORDERS_COLUMNS}) "
                f"{orders_select()} FROM seq_{first}_to_{keys[1]}"
            )
        first, keys[0] = keys[0], keys[0] + self.size
        return f"DELETE FROM {table} WHERE id BETWEEN {first} AND {keys[0] - 1}"


def table_names(count: int) -> tuple[str, ...]:
    """``orders``, then ``orders_2`` ... ``orders_<count>``."""
    return (TABLE, *(f"{TABLE}_{i}" for i in range(2, count + 1)))


def copy_orders(db: EmbeddedMariaDB, names: tuple[str, ...], noise: bool = False) -> None:
    """The other tables as unlogged copies of ``orders`` (a snapshot reads them); with
    ``noise``, the table ``NOISE`` too, not captured."""
    conn = db.connect(DATABASE, account=db.root)
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_log_bin = 0")
        for name in names[1:]:
            cur.execute(f"CREATE TABLE {name} LIKE {TABLE}")
            cur.execute(f"INSERT INTO {name} SELECT * FROM {TABLE}")
        if noise:
            cur.execute(f"CREATE TABLE {NOISE} (id INT PRIMARY KEY, v INT NOT NULL)")
            cur.execute(f"INSERT INTO {NOISE} VALUES (1, 0)")
        conn.commit()
    finally:
        conn.close()


def change_latencies(writer: Writer, batches: list[Any]) -> list[list[float]]:
    """Per batch, the latency of each change it applied: its write's end minus the
    change's commit. A table's changes are applied in the order they were committed, so
    a batch applying n of them applies the next n of its list."""
    applied = {t: 0 for t in writer.tables}
    out = []
    for batch in batches:
        latencies = []
        for table, counts in batch.counts.items():
            name = table.table
            if name not in applied:
                continue
            done = applied[name]
            applied[name] = done + counts.changes
            latencies += [batch.written - t for t in writer.committed[name][done : applied[name]]]
        out.append(latencies)
    return out


def pipeline_file(
    db: EmbeddedMariaDB, folder: Path, trigger: int, writer: str = "spark", tables: int = 1
) -> Path:
    path = folder / "pipeline.yaml"
    captured = f"{DATABASE}.{TABLE}" if tables == 1 else f"{DATABASE}.{TABLE}(_[0-9]+)?"
    path.write_text(
        f"""\
{source_block(db, captured)}sink:
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


def floor_probes(
    run: Any, db: EmbeddedMariaDB, names: tuple[str, ...], rounds: int, trigger: float
) -> dict[str, list[BatchReport]]:
    """The batches of ``rounds`` rounds of the floor's probes (``--floor``), by probe: each
    probe's statements committed on a quiet stream, then its batch waited for (a probe
    whose changes came in more than one batch, or in none, is left out)."""
    every = [f"UPDATE {name} SET quantity = quantity + 1 WHERE id = {{key}}" for name in names]
    probes = {
        "empty batch": (0, [f"UPDATE {NOISE} SET v = v + 1"]),
        "1 row, 1 table": (1, [every[0]]),
        f"1 row x {len(names)} tables": (
            len(names),
            ["START TRANSACTION", *every, "COMMIT"],
        ),
    }
    found: dict[str, list[BatchReport]] = {name: [] for name in probes}
    conn = db.connect(DATABASE, account=db.root)
    conn.autocommit(True)
    try:
        cur = conn.cursor()
        for key in range(1, rounds + 1):
            for name, (changes, statements) in probes.items():
                time.sleep(trigger + 0.5)  # the stream is idle: the batch before is done
                before = len(run.batches)
                for statement in statements:
                    cur.execute(statement.format(key=key))
                deadline = time.monotonic() + 10 * trigger + 120  # a loaded machine's batch
                while time.monotonic() < deadline and run.active:
                    new = run.batches[before:]
                    if new and sum(b.changes for b in new) >= changes:
                        break
                    time.sleep(0.05)
                new = run.batches[before:]
                if len(new) == 1 and new[0].changes == changes:
                    found[name].append(new[0])
    finally:
        conn.close()
    return found


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
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of each table")
    parser.add_argument("--tables", type=int, default=1, help="copies of orders written to")
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
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="print where a batch's seconds go (benchmarks/batch_breakdown.py)",
    )
    parser.add_argument(
        "--floor",
        type=int,
        default=0,
        metavar="N",
        help="with --breakdown: N rounds of the floor's probes before the load (an empty "
        "batch, one row of one table, one row of every table)",
    )
    args = parser.parse_args(argv)
    if args.floor and not args.breakdown:
        parser.error("--floor needs --breakdown")

    from sparkcdc.pipeline.definition import load_pipeline
    from sparkcdc.pipeline.runner import prepare

    with (
        ProcessSampler() as memory,
        tempfile.TemporaryDirectory(prefix="sparkcdc-soak-") as tmp,
        (
            batch_breakdown.CommitClock().installed()
            if args.breakdown
            else nullcontext(batch_breakdown.CommitClock())
        ) as commits,
    ):
        db = start_mariadb("2G")
        try:
            names = table_names(args.tables)
            with memory.phase("load"):
                populate_orders(db, args.rows)
                copy_orders(db, names, noise=args.floor > 0)
            conf = batch_breakdown.SESSION_CONF if args.breakdown else None
            spark, _ = spark_session(args.cores, conf)
            spark.sparkContext.setLogLevel("ERROR")
            folder = Path(tmp)
            pipeline = pipeline_file(db, folder, args.trigger, args.writer, args.tables)
            run = prepare(load_pipeline(pipeline), spark=spark)
            writer = Writer(db, args.rows, args.rate, args.statement_rows, args.mix, names)
            windows: list[tuple[str, float, int, list[Any]]] = []
            progress = batch_breakdown.ProgressLog()
            with memory.phase("snapshot"):
                run.start()
                if args.breakdown:
                    progress.follow(lambda: run.query)
                while not run.batches or set(run.batches[-1].table_states.values()) != {STREAMING}:
                    time.sleep(0.5)
            probes: dict[str, list[BatchReport]] = {}
            if args.floor:
                with memory.phase("floor probes"):
                    probes = floor_probes(run, db, names, args.floor, args.trigger)
            writer.thread.start()
            started = time.monotonic()
            end = started + args.minutes * 60
            first_batch = writer_from = len(run.batches)
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
            progress.close(final=args.breakdown)
            log_batches = run.batches[writer_from:]
            latencies = dict(
                zip(map(id, log_batches), change_latencies(writer, log_batches), strict=True)
            )
            equal = all(equal_tables(spark, db, folder, name) for name in names)
            report(args, windows, writer, caught_up, equal, latencies)
            if args.breakdown:
                loaded = [b for _, _, _, batches in windows for b in batches]
                jobs = batch_breakdown.spark_jobs(spark)
                print_breakdown(args, probes, loaded, progress, jobs, commits)
            spark.stop()
        finally:
            db.stop()
    print_process_report(memory)


def equal_tables(spark: Any, db: EmbeddedMariaDB, folder: Path, table: str) -> bool:
    """Whether the Delta target of ``table`` equals it (rows, checksum of every column)."""
    source = (
        spark.read.format("jdbc")
        .option("url", f"jdbc:mysql://{db.host}:{db.port}/{DATABASE}?permitMysqlScheme")
        .option("driver", "org.mariadb.jdbc.Driver")
        .option("user", db.source_options()["username"])
        .option("password", db.source_options()["password"])
        .option("dbtable", table)
        .load()
    )
    target = spark.read.format("delta").load(str(folder / "lake" / DATABASE / table))
    return checksum(source) == checksum(target.select(*source.columns))


def print_breakdown(
    args: argparse.Namespace,
    probes: dict[str, list[BatchReport]],
    loaded: list[BatchReport],
    progress: batch_breakdown.ProgressLog,
    jobs: list[batch_breakdown.Job],
    commits: batch_breakdown.CommitClock,
) -> None:
    """The breakdown's table: a column per floor probe, then the load's batches."""
    clock = commits if args.writer == "native" else None
    columns = {
        name: batch_breakdown.breakdowns(found, progress, jobs, clock)
        for name, found in probes.items()
    }
    columns["under load"] = batch_breakdown.breakdowns(loaded, progress, jobs, clock)
    print(
        batch_breakdown.table(
            f"Where a batch's seconds go ({args.tables} table(s), writer {args.writer}, "
            f"trigger {args.trigger} s)",
            columns,
        )
    )


def latency_text(latencies: list[float]) -> str:
    if not latencies:
        return "no change applied"
    return (
        f"change latency p50 {percentile(latencies, 0.5):.2f} s, "
        f"p99 {percentile(latencies, 0.99):.2f} s, max {max(latencies):.2f} s"
    )


def report(
    args: argparse.Namespace,
    windows: list[tuple[str, float, int, list[Any]]],
    writer: Writer,
    caught_up: float,
    equal: bool,
    latencies: dict[int, list[float]],
) -> None:
    rows = []
    for name, seconds, written, batches in windows:
        lags = [b.emit_lag for b in batches if b.emit_lag is not None]
        applied = sum(b.changes for b in batches)
        window_latencies = [x for b in batches for x in latencies[id(b)]]
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
                f"{len(batches)} batches · {lag} · {latency_text(window_latencies)}",
            )
        )
    print_kv(
        f"Soak: {args.rate:,} row changes/s over {args.tables} table(s) for {args.minutes:g} "
        f"min into Delta "
        f"(trigger {args.trigger} s; first window = baseline)",
        rows,
    )
    print_kv(
        "End",
        [
            ("changes written", f"{writer.changed:,}, at most {writer.behind:.1f} s behind pace"),
            ("caught up after the writer stopped", f"{caught_up:.1f} s"),
            ("every change", latency_text([x for v in latencies.values() for x in v])),
            ("Delta tables == source (rows, checksum of every column)", str(equal)),
        ],
    )


if __name__ == "__main__":
    main()

"""Issue 6's last done-when figure: does capture keep up with MariaDB writing at full speed?

``python -m benchmarks.binlog --keep-up SECONDS`` runs this instead of the decode
comparison. One connection generates the issue's workload mix (per cycle of ten
autocommitted ``--statement-rows``-row statements: one INSERT, eight UPDATEs, one DELETE,
i.e. 10/80/10 %) as fast as the server goes, for a fixed time, while a Spark stream
(processing-time trigger, ``noop`` sink) that started at the generation's first position
captures it. A sampler records, every ``--sample`` seconds, how many changes (and binlog
bytes) the stream's last finished batch is behind the server; after generation stops it
times how long the stream takes to reach the final position.

Why a duration and not a fixed change count: a short burst only measures how fast a backlog
is read (the decode benchmark does that); keeping up is about a steady state, where every
trigger's batch must be processed before the next one is due, with JIT and workers warm.
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._common import (
    DATABASE,
    ORDERS_COLUMNS,
    TABLE,
    ProcessSampler,
    human,
    orders_select,
    print_kv,
    sequence,
    spark_session,
)
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, file_index
from sparkcdc.embedded import EmbeddedMariaDB

#: Statements of one generation cycle: "I" insert, "U" update, "D" delete (10/80/10 %).
CYCLE = "IUUUUUUUUD"


def master_key(cur: Any) -> tuple[int, int]:
    """The server's binlog end as (file index, offset)."""
    cur.execute("SHOW MASTER STATUS")
    file, pos = cur.fetchone()[:2]
    return (file_index(file), int(pos))


class Generator(threading.Thread):
    """Writes the workload mix as fast as one connection can until stopped.

    After every statement it records (binlog end, changes so far): the stream's position is
    a transaction boundary, so bisecting these records gives exactly how many changes a
    position covers. Inserts take fresh ids above the loaded table and the cycle's DELETE
    removes the cycle's inserted block, so the table keeps its size however long it runs.
    """

    def __init__(self, db: EmbeddedMariaDB, table_rows: int, statement_rows: int) -> None:
        super().__init__(name="keep-up-generator", daemon=True)
        self.db = db
        self.table_rows = table_rows
        self.rows = statement_rows
        self.stop_event = threading.Event()
        self.keys: list[tuple[int, int]] = []
        self.counts: list[int] = []
        self.generated = 0
        self.started = 0.0
        self.stopped = 0.0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._generate()
        except BaseException as exc:  # reported by the caller
            self.error = exc

    def _generate(self) -> None:
        rng = random.Random(42)
        next_id = self.table_rows + 1
        n = self.rows
        with self.db.connect(DATABASE) as conn, conn.cursor() as cur:
            self.keys.append(master_key(cur))
            self.counts.append(0)
            self.started = time.perf_counter()
            while not self.stop_event.is_set():
                block = next_id
                next_id += n
                for kind in CYCLE:
                    if kind == "I":
                        sql = (
                            f"INSERT INTO `{TABLE}` ({ORDERS_COLUMNS}) "
                            f"{orders_select(offset=block - 1)} FROM {sequence(self.db, 1, n)}"
                        )
                    elif kind == "U":
                        first = rng.randint(1, self.table_rows - n + 1)
                        sql = (
                            f"UPDATE `{TABLE}` SET quantity = quantity + 1, "
                            f"price = price + 0.01, order_time = order_time + INTERVAL 1 SECOND "
                            f"WHERE id BETWEEN {first} AND {first + n - 1}"
                        )
                    else:
                        sql = f"DELETE FROM `{TABLE}` WHERE id BETWEEN {block} AND {block + n - 1}"
                    self.generated += cur.execute(sql)
                    self.keys.append(master_key(cur))
                    self.counts.append(self.generated)
            self.stopped = time.perf_counter()

    @property
    def end(self) -> tuple[int, int]:
        return self.keys[-1]

    def changes_at(self, key: tuple[int, int]) -> int:
        """Changes generated up to binlog position ``key`` (a transaction boundary)."""
        i = bisect.bisect_right(self.keys, key) - 1
        return self.counts[i] if i >= 0 else 0


class LogBytes:
    """Binlog positions as a byte count since the first file seen (for "bytes behind")."""

    def __init__(self, cur: Any) -> None:
        self.cur = cur
        self.sizes: dict[int, int] = {}

    def __call__(self, key: tuple[int, int]) -> int:
        index, pos = key
        if any(i not in self.sizes for i in range(min(self.sizes, default=index), index)):
            self.cur.execute("SHOW BINARY LOGS")
            self.sizes = {file_index(r[0]): int(r[1]) for r in self.cur.fetchall()}
        return sum(s for i, s in self.sizes.items() if i < index) + pos


@dataclass
class Sample:
    at: float  #: seconds since generation started
    generated: int
    captured: int
    bytes_behind: int

    @property
    def lag(self) -> int:
        return self.generated - self.captured


@dataclass
class KeepUp:
    """The outcome of one keep-up run."""

    seconds: float  #: generation time
    generated: int
    drain: float | None  #: seconds from generation stop to the stream at its end; None: timeout
    samples: list[Sample]
    batches: dict[int, dict[str, Any]]  #: Spark progress per batch id
    cpu: dict[str, float] = field(default_factory=dict)
    trigger: float = 1.0


def _stream_key(query: Any) -> tuple[int, int] | None:
    """The binlog position the stream's last finished batch ended at."""
    progress = query.lastProgress
    if not progress or not progress.get("sources"):
        return None
    end = progress["sources"][0].get("endOffset")
    if not end:
        return None
    offset = json.loads(end) if isinstance(end, str) else end
    return BinlogPosition.from_json(offset["log"]).key


def run_keep_up(
    db: EmbeddedMariaDB,
    spark: Any,
    options: dict[str, str],
    *,
    seconds: float,
    table_rows: int,
    statement_rows: int,
    trigger: float,
    sample: float,
    cpu_by_kind: Callable[[], dict[str, float]],
    drain_timeout: float = 120.0,
) -> KeepUp:
    """Generate for ``seconds`` while a stream captures from the generation's start."""
    generator = Generator(db, table_rows, statement_rows)
    with db.connect() as conn, conn.cursor() as cur:
        start_key = master_key(cur)
        cur.execute("SHOW MASTER STATUS")
        start_file = cur.fetchone()[0]
    stream_options = {
        **options,
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.file": start_file,
        "scan.startup.specific-offset.pos": str(start_key[1]),
    }
    checkpoint = Path(tempfile.mkdtemp(prefix="sparkcdc-keepup-"))
    before = cpu_by_kind()
    query = (
        spark.readStream.format("mysql-cdc")
        .options(**stream_options)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=f"{int(trigger * 1000)} milliseconds")
        .start()
    )
    generator.start()
    samples: list[Sample] = []
    batches: dict[int, dict[str, Any]] = {}
    drain: float | None = None
    try:
        with db.connect() as conn, conn.cursor() as cur:
            to_bytes = LogBytes(cur)
            start_bytes = to_bytes(start_key)

            def observe() -> tuple[int, int] | None:
                for p in query.recentProgress:
                    batches[int(p["batchId"])] = p
                key = _stream_key(query)
                now_key = master_key(cur)
                generated = generator.generated
                captured = generator.changes_at(key) if key else 0
                behind = to_bytes(now_key) - (to_bytes(key) if key else start_bytes)
                samples.append(
                    Sample(time.perf_counter() - generator.started, generated, captured, behind)
                )
                return key

            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                if generator.error is not None:
                    raise RuntimeError("generation failed") from generator.error
                if query.exception() is not None:
                    raise RuntimeError(f"the stream failed: {query.exception()}")
                time.sleep(sample)
                observe()
            generator.stop_event.set()
            generator.join()
            end = generator.end
            stop_at = time.perf_counter()
            while time.perf_counter() - stop_at < drain_timeout:
                key = observe()
                if key is not None and key >= end:
                    drain = time.perf_counter() - stop_at
                    break
                time.sleep(0.05)
    finally:
        generator.stop_event.set()
        query.stop()
        shutil.rmtree(checkpoint, ignore_errors=True)
    after = cpu_by_kind()
    cpu = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    return KeepUp(
        generator.stopped - generator.started,
        generator.generated,
        drain,
        samples,
        batches,
        cpu,
        trigger,
    )


def _percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0


def _slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t, value) points: how fast the lag grows, changes/s."""
    if len(points) < 3:
        return 0.0
    ts = [t for t, _ in points]
    vs = [v for _, v in points]
    mt, mv = statistics.fmean(ts), statistics.fmean(vs)
    den = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (v - mv) for t, v in zip(ts, vs, strict=True)) / den if den else 0.0


def report(result: KeepUp, cores: int, other_cpu: float) -> None:
    """Print rates, lag percentiles, drain time, CPU per change per process, and the verdict.

    "Keeps up" needs both: the lag does not grow during the second half of the generation
    (least-squares slope below 5 % of the generation rate) and the stream reaches the final
    position within two trigger intervals of the generation stopping."""
    during = [s for s in result.samples if s.at <= result.seconds]
    gen_rate = result.generated / result.seconds if result.seconds else float("nan")
    lags = [s.lag for s in during]
    byte_lags = [s.bytes_behind for s in during]
    second_half = [(s.at, float(s.lag)) for s in during if s.at >= result.seconds / 2]
    slope = _slope(second_half)
    captured_in_window = during[-1].captured if during else 0
    total_time = result.seconds + (result.drain or 0.0)
    batches = [p for _, p in sorted(result.batches.items()) if p["numInputRows"] > 0]
    durations = [p["durationMs"].get("triggerExecution", 0) / 1000 for p in batches]
    bounded = slope <= 0.05 * gen_rate
    drained = result.drain is not None and result.drain <= 2 * result.trigger
    verdict = "keeps up" if bounded and drained else "falls behind"
    items = [
        ("generation", f"{result.generated:,} changes in {result.seconds:.1f} s"),
        ("the server generating (wall)", f"{human(gen_rate)}/s"),
        (
            "captured by generation stop",
            f"{captured_in_window:,} = {human(captured_in_window / result.seconds)}/s",
        ),
        (
            "capture rate incl. drain",
            f"{human(result.generated / total_time)}/s"
            if result.drain is not None
            else "did not finish",
        ),
        (
            "lag, changes behind (p50 / p95 / max / at stop)",
            f"{_percentile(lags, 0.5):,} / {_percentile(lags, 0.95):,} / {max(lags, default=0):,}"
            f" / {lags[-1] if lags else 0:,}",
        ),
        (
            "lag, binlog MiB behind (p50 / p95 / max / at stop)",
            " / ".join(
                f"{v / 2**20:.1f}"
                for v in (
                    _percentile(byte_lags, 0.5),
                    _percentile(byte_lags, 0.95),
                    max(byte_lags, default=0),
                    byte_lags[-1] if byte_lags else 0,
                )
            ),
        ),
        ("lag growth, 2nd half (least squares)", f"{human(slope)} changes/s"),
        (
            "drain after generation stopped",
            f"{result.drain:.2f} s (trigger {result.trigger:g} s)"
            if result.drain is not None
            else "timed out",
        ),
        (
            "Spark batches with rows",
            f"{len(batches)}; triggerExecution p50 {statistics.median(durations):.2f} s, "
            f"max {max(durations):.2f} s"
            if durations
            else "0",
        ),
        ("other CPU (cores used by processes not ours)", f"{other_cpu:.2f}"),
    ]
    total_cpu = sum(result.cpu.values())
    for kind, cpu in sorted(result.cpu.items(), key=lambda kv: -kv[1]):
        items.append(
            (
                f"CPU {kind}",
                f"{cpu:.1f} s = {cpu / result.generated * 1e6:.2f} us per change",
            )
        )
    if total_cpu:
        items.append(("CPU all, per change", f"{total_cpu / result.generated * 1e6:.2f} us"))
        items.append(
            (
                f"capacity on {cores} cores (incl. generation)",
                f"{human(result.generated / total_cpu * cores)}/s",
            )
        )
    items.append(("verdict", verdict))
    print_kv(f"Issue 6 keep-up: {result.seconds:.0f} s of generation, local[{cores}]", items)


def keep_up(
    args: argparse.Namespace,
    db: EmbeddedMariaDB,
    memory: ProcessSampler,
    options: dict[str, str],
    table_rows: int,
    cpu_by_kind: Callable[[], dict[str, float]],
) -> None:
    """Warm up (a short run whose figures are only summarised), then the measured run."""
    spark, started = spark_session(args.cores)
    print(f"Spark session started in {started:.1f} s")
    try:
        common = {
            "table_rows": table_rows,
            "statement_rows": args.statement_rows,
            "trigger": args.trigger,
            "sample": args.sample,
            "cpu_by_kind": cpu_by_kind,
        }
        if args.warm_up > 0:
            with memory.phase("keep-up warm-up"):
                warm = run_keep_up(db, spark, options, seconds=args.warm_up, **common)
            print(
                f"warm-up: {warm.generated:,} changes in {warm.seconds:.1f} s, drain "
                f"{warm.drain if warm.drain is None else round(warm.drain, 2)} s"
            )
        with memory.phase("keep-up"):
            result = run_keep_up(db, spark, options, seconds=args.keep_up, **common)
        phase = memory.phases["keep-up"]
        other = phase.foreign_jiffies / _ticks() / phase.seconds if phase.seconds else 0.0
        report(result, args.cores, other)
    finally:
        spark.stop()


def _ticks() -> int:
    from benchmarks._common import _CLOCK_TICKS

    return int(_CLOCK_TICKS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-up",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="instead of the decode comparison: generate for SECONDS while a stream captures",
    )
    parser.add_argument(
        "--trigger", type=float, default=1.0, help="keep-up stream trigger interval, seconds"
    )
    parser.add_argument(
        "--sample", type=float, default=0.5, help="keep-up lag sampling interval, seconds"
    )
    parser.add_argument(
        "--warm-up", type=float, default=5.0, help="keep-up warm-up run, seconds (0: none)"
    )

"""Binlog decode throughput: sparkcdc against ``mariadb-binlog``, on one workload in one run.

    .venv/bin/python -m benchmarks.binlog [--changes N] [--profile] [-o key=value ...]

Loads an ``orders`` table without logging it, then logs the docs/stack-notes.md workload (80 %
updates, 10 % inserts, 10 % deletes; 500,000 row changes by default) in transactions of
``--statement-rows`` rows, recording binlog positions between the phases. The same log range
is then decoded by (1) ``mariadb-binlog`` (C reference), (2) python-mysql-replication alone,
(3) sparkcdc's ``read_changes`` with the library's row decoding (reference) and with the
compiled decoder (fast; CPU time too, for the per-core rate), (4) sparkcdc's executor path
``source.read`` (changes to Arrow; large ranges are several partitions) and (5) a Spark
``availableNow`` stream from that position into ``noop`` (partitions decoded in parallel);
also the driver's walks of the range while planning (the log split, the schema-change scan).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import binlog_keepup
from benchmarks._common import (
    _CLOCK_TICKS,
    DATABASE,
    ORDERS_COLUMNS,
    TABLE,
    Figure,
    ProcessSampler,
    StreamRun,
    _classify,
    _descendants,
    _process_table,
    add_common_arguments,
    human,
    orders_select,
    populate_orders,
    print_figures,
    print_kv,
    print_process_report,
    profile,
    require_tool,
    run_quiet,
    run_with_server,
    sequence,
    source_option_pairs,
    spark_session,
    stream_to_noop,
)
from sparkcdc.connectors.mysql.binlog.limit import MAX_LOG_PIECES, split_log
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, file_index
from sparkcdc.connectors.mysql.binlog.reader import DecoderChoice, read_changes
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.server.connection import replication_settings
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded import EmbeddedMariaDB

#: Row-change phases of the workload, in log order.
PHASES = ("inserts", "updates", "deletes")


@dataclass(frozen=True)
class Workload:
    """The logged range: positions before, between and after the phases, and row counts."""

    positions: tuple[BinlogPosition, ...]  #: len(PHASES) + 1 boundaries
    changes: dict[str, int]
    seconds: dict[str, float]

    @property
    def start(self) -> BinlogPosition:
        return self.positions[0]

    @property
    def end(self) -> BinlogPosition:
        return self.positions[-1]

    @property
    def total(self) -> int:
        return sum(self.changes.values())


@dataclass
class Decode:
    """One decoder's pass over the range: total and per-phase (seconds, changes counted)."""

    name: str
    seconds: float
    counted: int | None  #: row changes the decoder itself counted (None: cannot count)
    phase_seconds: dict[str, float]
    note: str = ""
    cpu: float | None = None  #: CPU seconds of this process, when measured


class PhaseClock:
    """Splits one timed pass over the log into per-phase times: a phase ends when the first
    event beyond its end position arrives, so one pass yields insert/update/delete rates.
    Phase times start at the first event, so connecting is in the total only."""

    def __init__(self, workload: Workload) -> None:
        self.ends = [p.key for p in workload.positions[1:]]
        self.started = time.perf_counter()
        self.first: float | None = None
        self.marks: list[float] = []

    def at(self, file: str, pos: int) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        key = (file_index(file), pos)
        while len(self.marks) < len(self.ends) - 1 and key > self.ends[len(self.marks)]:
            self.marks.append(time.perf_counter())

    def split(self, finished: float) -> dict[str, float]:
        marks = [self.first or self.started, *self.marks]
        marks += [finished] * (len(PHASES) + 1 - len(marks))
        return {name: marks[i + 1] - marks[i] for i, name in enumerate(PHASES)}


# -- workload ------------------------------------------------------------------------------


def generate(
    db: EmbeddedMariaDB, source: MySqlCdcSource, table_rows: int, changes: int, rows: int
) -> Workload:
    """Log ``changes`` row changes (10 % inserts, 80 % updates, 10 % deletes), each statement
    one autocommitted transaction of ``rows`` rows, and time the server producing them."""
    counts = {"inserts": changes // 10, "deletes": changes // 10}
    counts["updates"] = changes - counts["inserts"] - counts["deletes"]
    rng = random.Random(42)
    db.execute("FLUSH BINARY LOGS")  # a fresh file: the range is self-contained
    positions = [source.current_position()]
    done: dict[str, int] = {}
    seconds: dict[str, float] = {}
    with db.connect(DATABASE) as conn, conn.cursor() as cur:
        for phase in PHASES:
            affected = 0
            started = time.perf_counter()
            for sql in _statements(db, phase, counts[phase], rows, table_rows, rng):
                affected += cur.execute(sql)
            seconds[phase] = time.perf_counter() - started
            done[phase] = affected
            positions.append(source.current_position())
    return Workload(tuple(positions), done, seconds)


def _statements(
    db: Any, phase: str, count: int, rows: int, table_rows: int, rng: random.Random
) -> Iterator[str]:
    """SQL for one phase. Updates touch random blocks of the original rows, deletes remove
    disjoint blocks: every statement changes exactly its rows, so counts are exact."""
    blocks = [(lo, min(rows, count - lo)) for lo in range(0, count, rows)]
    if phase == "inserts":
        for lo, n in blocks:
            yield (
                f"INSERT INTO `{TABLE}` ({ORDERS_COLUMNS}) {orders_select(offset=table_rows + lo)} "
                f"FROM {sequence(db, 1, n)}"
            )
    elif phase == "updates":
        for _, n in blocks:
            first = rng.randint(1, table_rows - n + 1)
            yield (
                f"UPDATE `{TABLE}` SET quantity = quantity + 1, price = price + 0.01, "
                f"order_time = order_time + INTERVAL 1 SECOND "
                f"WHERE id BETWEEN {first} AND {first + n - 1}"
            )
    else:
        slots = rng.sample(range(table_rows // rows), len(blocks))
        for slot, (_, n) in zip(slots, blocks, strict=True):
            first = slot * rows + 1
            yield f"DELETE FROM `{TABLE}` WHERE id BETWEEN {first} AND {first + n - 1}"


# -- decoders ------------------------------------------------------------------------------


def c_reference(db: EmbeddedMariaDB, workload: Workload) -> Decode:
    """``mariadb-binlog`` decoding rows to text over the replication protocol; each phase's
    range is decoded separately as well, because its output cannot be split cheaply."""

    def decode(start: BinlogPosition, end: BinlogPosition) -> float:
        files = [
            f"{start.file.rsplit('.', 1)[0]}.{i:06d}"
            for i in range(file_index(start.file), file_index(end.file) + 1)
        ]
        argv = [
            require_tool("mariadb-binlog"),
            "--no-defaults",
            "--read-from-remote-server",
            "-h",
            db.host,
            "-P",
            str(db.port),
            "-u",
            db.root.user,
            "--base64-output=decode-rows",
            "-v",
            f"--start-position={start.pos}",
            f"--stop-position={end.pos}",
            *files,
        ]
        return run_quiet(argv, db.root.password)

    total = decode(workload.start, workload.end)
    bounds = workload.positions
    phases = {name: decode(bounds[i], bounds[i + 1]) for i, name in enumerate(PHASES)}
    return Decode("C: mariadb-binlog -v decode-rows > /dev/null", total, None, phases)


def library_reader(
    source: MySqlCdcSource, workload: Workload, server_id: int, decode_rows: bool
) -> Decode:
    """python-mysql-replication configured as read_changes configures it, without sparkcdc.

    With ``decode_rows`` False only events are read (row bodies stay undecoded): the
    protocol and framing cost, an upper bound for any decoder built on this library.
    """
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import MariadbGtidEvent, RotateEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    config = source.config
    stream = BinLogStreamReader(
        connection_settings=replication_settings(config),
        server_id=server_id,
        resume_stream=True,
        blocking=False,
        log_file=workload.start.file,
        log_pos=workload.start.pos,
        is_mariadb=False,
        only_events=[
            WriteRowsEvent,
            UpdateRowsEvent,
            DeleteRowsEvent,
            MariadbGtidEvent,
            RotateEvent,
        ],
        only_schemas=[DATABASE],
        only_tables=[TABLE],
        freeze_schema=True,
    )
    end = workload.end.key
    clock = PhaseClock(workload)
    rows = events = 0
    try:
        for event in stream:
            if isinstance(event, RotateEvent) or event.packet.log_pos == 0:
                continue
            clock.at(stream.log_file, event.packet.log_pos)
            if (file_index(stream.log_file), event.packet.log_pos) > end:
                break
            if isinstance(event, MariadbGtidEvent):
                continue
            events += 1
            if decode_rows:
                rows += len(event.rows)
    finally:
        stream.close()
    finished = time.perf_counter()
    seconds = finished - clock.started
    if decode_rows:
        return Decode(
            "python-mysql-replication, rows decoded", seconds, rows, clock.split(finished)
        )
    return Decode(
        "python-mysql-replication, events only",
        seconds,
        None,
        clock.split(finished),
        note=f"{events:,} row events ({human(events / seconds)}/s), rows not decoded",
    )


def sparkcdc_changes(
    source: MySqlCdcSource, workload: Workload, server_id: int, decoder: DecoderChoice
) -> Decode:
    """``read_changes`` to typed tuples and ``RowChange``s, with the compiled decoder
    (``fast``) or the library's row decoding plus sparkcdc's converters (``reference``).
    Also measures this process's CPU time: on a shared 2-core machine (``mariadbd`` streams
    the binlog on the other core) CPU seconds give the per-core rate."""
    clock = PhaseClock(workload)
    cpu = time.process_time()
    count = 0
    for change in read_changes(
        source.config, source.tables, workload.start, workload.end, server_id, decoder
    ):
        clock.at(change.file, change.pos)
        count += 1
    finished = time.perf_counter()
    cpu = time.process_time() - cpu
    return Decode(
        f"sparkcdc read_changes, {decoder} decoder",
        finished - clock.started,
        count,
        clock.split(finished),
        note=f"CPU {cpu:.2f} s = {human(count / cpu)}/s per core",
        cpu=cpu,
    )


def log_partitions(options: dict[str, str], workload: Workload) -> tuple[MySqlCdcSource, list[Any]]:
    """The partitions a stream starting at the workload's start would read up to its end,
    planned by the source itself (so this follows whatever a LogRead currently holds)."""
    source = MySqlCdcSource(parse_config(_specific_offset(options, workload.start)))
    start = source.initial_offset()
    end = source.latest_offset(start, None, cap=workload.end)
    return source, source.partitions(start, end)


def sparkcdc_arrow(options: dict[str, str], workload: Workload) -> tuple[Decode, int]:
    """``source.read`` of the log partition: read_changes, emit and Arrow batches, i.e. what
    a Spark executor's Python worker does, on one core without Spark."""
    source, specs = log_partitions(options, workload)
    try:
        started = time.perf_counter()
        cpu = time.process_time()
        rows = sum(b.num_rows for spec in specs for b in source.read(spec))
        cpu = time.process_time() - cpu
        seconds = time.perf_counter() - started
    finally:
        source.close()
    note = (
        f"{rows:,} changelog rows (an update is 2), {len(specs)} partition(s); "
        f"CPU {cpu:.2f} s = {human(workload.total / cpu)}/s per core"
    )
    return Decode("sparkcdc source.read (+Arrow)", seconds, None, {}, note=note, cpu=cpu), rows


def _specific_offset(options: dict[str, str], start: BinlogPosition) -> dict[str, str]:
    return {
        **options,
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.file": start.file,
        "scan.startup.specific-offset.pos": str(start.pos),
    }


# -- run -----------------------------------------------------------------------------------


def run(args: argparse.Namespace, db: EmbeddedMariaDB, memory: ProcessSampler) -> None:
    table_rows = max(args.table_rows, args.changes)  # updates and deletes need room
    with memory.phase("load"):
        load_seconds = populate_orders(db, table_rows)
    options = {
        **db.source_options(),
        "database-name": DATABASE,
        "table-name": TABLE,
        **source_option_pairs(args.option),
    }
    if args.keep_up > 0:
        binlog_keepup.keep_up(args, db, memory, options, table_rows, _cpu_by_kind)
        print_process_report(memory)
        return
    source = MySqlCdcSource(parse_config(options))
    try:
        with memory.phase("generate"):
            before = _cpu_by_kind()
            workload = generate(db, source, table_rows, args.changes, args.statement_rows)
            generation_cpu = _cpu_by_kind().get("mariadbd", 0.0) - before.get("mariadbd", 0.0)
        _print_workload(workload, table_rows, load_seconds, args.statement_rows)
        decodes: list[Decode] = []
        if db.flavor == "mariadb":  # mariadb-binlog reads MariaDB's binlog, not MySQL 8's
            with memory.phase("C mariadb-binlog"):
                decodes.append(c_reference(db, workload))
        with memory.phase("library, events only"):
            decodes.append(library_reader(source, workload, 7001, decode_rows=False))
        with memory.phase("library, rows decoded"):
            decodes.append(library_reader(source, workload, 7002, decode_rows=True))
        with memory.phase("read_changes, reference"):
            reference = sparkcdc_changes(source, workload, source.config.server_id(1), "reference")
            decodes.append(reference)
        with memory.phase("read_changes, fast"):
            fast = sparkcdc_changes(source, workload, source.config.server_id(2), "fast")
            decodes.append(fast)
        with memory.phase("planning walks"):
            decodes.extend(planning_walks(source, workload))
        if args.profile:
            print("\ncProfile of read_changes with the compiled decoder (the fast path):")
            print(
                profile(
                    lambda: sum(
                        1
                        for _ in read_changes(
                            source.config,
                            source.tables,
                            workload.start,
                            workload.end,
                            source.config.server_id(3),
                        )
                    )
                )
            )
    finally:
        source.close()
    with memory.phase("source.read (+Arrow)"):
        arrow, changelog_rows = sparkcdc_arrow(options, workload)
        decodes.append(arrow)
    if args.profile:
        print("\ncProfile (CPU time) of source.read() on the log partitions (decode + Arrow):")
        source, specs = log_partitions(options, workload)
        try:
            print(
                profile(
                    lambda: sum(b.num_rows for s in specs for b in source.read(s)),
                    22,
                    cpu_time=True,
                )
            )
        finally:
            source.close()
    spark: list[Decode] = []
    if not args.no_spark:
        spark = spark_decodes(args, options, workload, changelog_rows, memory)
        decodes.extend(spark)
    _print_decodes(workload, decodes)
    _print_issue_figures(
        workload, decodes[2], reference, fast, arrow, spark, args.cores, generation_cpu
    )
    print_process_report(memory)


def planning_walks(source: MySqlCdcSource, workload: Workload) -> list[Decode]:
    """The driver's walks of the range with ``SHOW BINLOG EVENTS`` while planning a batch
    (no rows decoded). Before schema changes were followed: one walk to split the range
    into log partitions. Now: one walk that looks for schema changes (docs/design.md,
    "Schema changes") and records the transaction boundaries the split is then cut from,
    with the same cuts (checked here)."""
    dialect = source.dialect
    started = time.perf_counter()
    low, high = source.config.server_ids
    most = min(MAX_LOG_PIECES, high - low + 1)
    walked = split_log(dialect.conn, workload.start, workload.end, max_pieces=most)
    before = time.perf_counter() - started
    started = time.perf_counter()
    change = dialect.schema_change(workload.start, workload.end, source.tables)
    cuts = dialect.split_log(workload.start, workload.end)
    now = time.perf_counter() - started
    assert change is None, change
    assert cuts == walked, (cuts, walked)
    pieces = f"{len(cuts) - 1} pieces"
    return [
        Decode("planning before: split walk", before, None, {}, pieces),
        Decode("planning now: schema scan + split", now, None, {}, f"{pieces}, same cuts"),
    ]


def _print_issue_figures(
    workload: Workload,
    library: Decode,
    reference: Decode,
    fast: Decode,
    arrow: Decode,
    spark: Sequence[Decode],
    cores: int,
    generation_cpu: float,
) -> None:
    """The figures of issue 6's done-when, all from this run."""
    n = workload.total
    fast_cpu = n / fast.cpu if fast.cpu else float("nan")
    ref_cpu = n / reference.cpu if reference.cpu else float("nan")
    generating = n / sum(workload.seconds.values())
    items = [
        ("library alone (rows decoded), wall", f"{human(n / library.seconds)}/s"),
        ("sparkcdc reference decoder, per core (CPU)", f"{human(ref_cpu)}/s"),
        ("sparkcdc fast decoder, per core (CPU)", f"{human(fast_cpu)}/s"),
        ("sparkcdc fast decoder, wall (1 reader)", f"{human(n / fast.seconds)}/s"),
        (
            "sparkcdc source.read (decode + Arrow), per core (CPU)",
            f"{human(n / arrow.cpu)}/s" if arrow.cpu else "?",
        ),
        ("fast / reference, per core", f"{fast_cpu / ref_cpu:.1f}x"),
        ("fast / library alone (wall vs wall)", f"{library.seconds / fast.seconds:.1f}x"),
        ("the server generating the workload", f"{human(generating)}/s"),
        (
            "the server generating, CPU-bound (changes / server CPU-s)",
            f"{human(n / generation_cpu)}/s" if generation_cpu else "?",
        ),
        ("peak RSS of this process (VmHWM)", _own_peak_rss()),
    ]
    if spark:
        steady = spark[-1]
        rate = n / steady.seconds
        items.append(
            (
                f"Spark availableNow backlog read, local[{cores}], warm",
                f"{human(rate)}/s = {rate / generating:.2f}x the server's generation rate "
                "(a ~2-s query: fixed costs, JIT warming; keeping up is --keep-up)",
            )
        )
    print_kv("Issue 6: fast decoder and parallel capture", items)


def _cpu_by_kind() -> dict[str, float]:
    """CPU seconds used so far by this process's descendants, per kind (JVM, Python
    workers (reaped forks count in pyspark.daemon), mariadbd)."""
    table = _process_table()
    seconds: dict[str, float] = {}
    for pid in _descendants(os.getpid(), table):
        kind = _classify(pid, table[pid].comm)
        if kind is not None and pid in table:
            seconds[kind] = seconds.get(kind, 0.0) + table[pid].jiffies / _CLOCK_TICKS
    return seconds


def _print_stream_cpu(changes: int, cpu: dict[str, float], cores: int) -> None:
    """The warm stream's CPU per process kind: unlike its wall time this does not depend on
    what else runs on the machine. ``capacity`` is the rate the pipeline (Spark JVM, Python
    workers, mariadbd serving the binlog, the driver) could sustain with ``cores`` cores to
    itself."""
    total = sum(cpu.values())
    items = [
        (kind, f"{seconds:.2f} s CPU = {seconds / changes * 1e6:.2f} us per row change")
        for kind, seconds in sorted(cpu.items(), key=lambda kv: -kv[1])
    ]
    if total:
        items.append(
            (
                f"capacity on {cores} cores (changes / CPU-s x cores)",
                f"{human(changes / total * cores)}/s",
            )
        )
    print_kv("Spark stream, 2nd run: CPU by process (load-independent)", items)


def _own_peak_rss() -> str:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return line.split(":", 1)[1].strip()
    return "?"


def spark_decodes(
    args: argparse.Namespace,
    options: dict[str, str],
    workload: Workload,
    changelog_rows: int,
    memory: ProcessSampler,
) -> list[Decode]:
    """The stream from the workload's start position into ``noop``, run twice: the first run
    pays for Python worker start-up, the second shows the steady state."""
    with memory.phase("spark start"):
        spark, start_seconds = spark_session(args.cores)
    runs: list[StreamRun] = []
    cpu: dict[str, float] = {}
    try:
        for i in range(2):
            checkpoint = Path(tempfile.mkdtemp(prefix="sparkcdc-bench-"))
            try:
                with memory.phase(f"spark stream {i + 1}"):
                    before = _cpu_by_kind()
                    runs.append(
                        stream_to_noop(spark, _specific_offset(options, workload.start), checkpoint)
                    )
                    after = _cpu_by_kind()
                    cpu = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
            finally:
                shutil.rmtree(checkpoint, ignore_errors=True)
    finally:
        spark.stop()
    _print_stream_cpu(workload.total, cpu, args.cores)
    for run_ in runs:
        if run_.rows != changelog_rows:
            print(f"WARNING: Spark saw {run_.rows:,} rows, source.read gave {changelog_rows:,}")
    cores = f"local[{args.cores}]"
    first, second = runs
    durations = ", ".join(
        f"{k} {v / 1000:.1f} s"
        for k, v in sorted(second.durations_ms.items(), key=lambda kv: -kv[1])
        if v >= 50
    )
    print_kv(
        "Spark details",
        [("session start", f"{start_seconds:.1f} s"), ("2nd stream durationMs", durations)],
    )
    return [
        Decode(
            "Spark stream, 1st, incl. session start",
            start_seconds + first.seconds,
            None,
            {},
        ),
        Decode(
            "Spark stream, 1st run",
            first.seconds,
            None,
            {},
            note=f"{first.batches} batch(es), {first.rows:,} rows out, {cores}",
        ),
        Decode(
            "Spark stream, 2nd run (warm workers)",
            second.seconds,
            None,
            {},
            note=f"{second.batches} batch(es), {second.rows:,} rows out, {cores}",
        ),
    ]


def _print_workload(workload: Workload, table_rows: int, load: float, statement: int) -> None:
    total_seconds = sum(workload.seconds.values())
    items = [
        ("table", f"{DATABASE}.{TABLE}, {table_rows:,} rows loaded unlogged in {load:.1f} s"),
        ("log range", f"{workload.start} .. {workload.end}"),
        ("binlog bytes", f"{_range_bytes(workload):,}"),
        ("transactions", f"of {statement:,} rows (one statement each)"),
    ]
    for phase in PHASES:
        n, s = workload.changes[phase], workload.seconds[phase]
        items.append((f"the server generating {phase}", f"{n:,} in {s:.2f} s = {human(n / s)}/s"))
    items.append(
        (
            "the server generating, all",
            f"{workload.total:,} in {total_seconds:.2f} s = "
            f"{human(workload.total / total_seconds)} changes/s",
        )
    )
    print_kv("Workload", items)


def _range_bytes(workload: Workload) -> int | str:
    if workload.start.file != workload.end.file:
        return "spans files"
    return workload.end.pos - workload.start.pos


def _print_decodes(workload: Workload, decodes: Sequence[Decode]) -> None:
    baseline = decodes[0]
    figures = []
    for d in decodes:
        note = d.note
        if d.counted is not None and d.counted != workload.total:
            note = f"COUNTED {d.counted:,} != {workload.total:,}; {note}"
        figures.append(Figure(d.name, workload.total, d.seconds, "changes", note))
    print_figures(
        f"Decoding {workload.total:,} row changes (rate = row changes/s; ratio to {baseline.name})",
        figures,
        figures[0],
    )
    rows = [d for d in decodes if d.phase_seconds]
    width = max(len(d.name) for d in rows)
    print(f"\nPer phase, row changes/s (ratio to {baseline.name})")
    print(f"{'decoder':<{width}}" + "".join(f"  {p:>16}" for p in PHASES))
    for d in rows:
        cells = []
        for p in PHASES:
            rate = workload.changes[p] / d.phase_seconds[p]
            ratio = rate / (workload.changes[p] / baseline.phase_seconds[p])
            cells.append(f"{human(rate):>8} ({ratio:.2f})")
        print(f"{d.name:<{width}}" + "".join(f"  {c:>16}" for c in cells))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.binlog", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--changes", type=int, default=500_000, help="row changes in the workload (500,000)"
    )
    parser.add_argument(
        "--table-rows", type=int, default=1_000_000, help="rows loaded before the workload"
    )
    parser.add_argument(
        "--statement-rows", type=int, default=1000, help="rows per statement/transaction"
    )
    parser.add_argument("--buffer-pool", default="1G", help="innodb-buffer-pool-size")
    parser.add_argument(
        "--row-metadata",
        choices=("default", "NO_LOG", "MINIMAL", "FULL"),
        default="default",
        help="binlog_row_metadata while the workload is written (default: the server's, "
        "NO_LOG on MariaDB, MINIMAL on MySQL 8.0): rows are named by the schema history "
        "either way; FULL adds names to every table map (issue 61's 10 %% comparison)",
    )
    add_common_arguments(parser)
    binlog_keepup.add_arguments(parser)
    args = parser.parse_args(argv)
    run_with_server(args, _with_row_metadata)


def _with_row_metadata(args: argparse.Namespace, db: EmbeddedMariaDB, memory: Any) -> None:
    """:func:`run` with ``--row-metadata`` set for the workload's sessions."""
    if args.row_metadata != "default":
        db.execute(f"SET GLOBAL binlog_row_metadata = '{args.row_metadata}'")
    print(f"binlog_row_metadata: {db.execute('SELECT @@GLOBAL.binlog_row_metadata')[0][0]}")
    run(args, db, memory)


if __name__ == "__main__":
    main()

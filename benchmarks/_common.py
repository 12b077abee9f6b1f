"""Shared plumbing for the benchmarks: the test table, timing, memory sampling, reporting.

Every benchmark measures sparkcdc and its C reference in the same run against the same
server and table, because on a shared 2-core machine absolute figures drift by tens of
percent between runs while ratios within one run stay meaningful.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedMySQL

DATABASE = "bench"
TABLE = "orders"

#: The ``orders`` table of docs/stack-notes.md: 7 columns, BIGINT primary key.
ORDERS_DDL = f"""
CREATE TABLE `{TABLE}` (
    id BIGINT NOT NULL PRIMARY KEY,
    order_date DATE NOT NULL,
    order_time DATETIME NOT NULL,
    quantity INT NOT NULL,
    product_id INT NOT NULL,
    price DECIMAL(10, 2) NOT NULL,
    purchaser VARCHAR(64) NOT NULL
) ENGINE=InnoDB
"""

ORDERS_COLUMNS = "id, order_date, order_time, quantity, product_id, price, purchaser"


def orders_select(seq: str = "seq", offset: int = 0) -> str:
    """Row values derived from a sequence number, so generation runs inside the server.

    Values vary per row (dates over ~4 years, prices, 100k purchasers) so that neither the
    server nor a decoder benefits from repeated values more than a real table would.
    """
    s = f"({seq} + {int(offset)})"
    return (
        f"SELECT {s}, DATE'2020-01-01' + INTERVAL ({s} % 1500) DAY, "
        f"TIMESTAMP'2020-01-01 00:00:00' + INTERVAL ({s} * 7919 % 126230400) SECOND, "
        f"1 + {s} % 10, 100 + {s} % 5000, "
        f"CAST(({s} * 37 % 1000000) / 100 AS DECIMAL(10, 2)), "
        f"CONCAT('purchaser-', {s} * 13 % 100000)"
    )


# -- servers -----------------------------------------------------------------------------


#: The servers a benchmark runs on (``--server``): MariaDB, or Oracle's MySQL 8.0.
SERVERS = ("mariadb", "mysql8")


def start_mariadb(buffer_pool: str, server: str = "mariadb") -> Any:
    """A private MariaDB (or, ``server="mysql8"``, MySQL 8.0) configured for CDC, with a
    buffer pool big enough to be warmed."""
    settings = {"innodb-buffer-pool-size": buffer_pool}
    db: Any = (
        EmbeddedMariaDB(settings=settings)
        if server == "mariadb"
        else EmbeddedMySQL(server, settings=settings)
    )
    db.start()
    try:
        db.create_database(DATABASE)
        db.execute(ORDERS_DDL, database=DATABASE)
    except BaseException:
        db.stop()
        raise
    return db


def sequence(db: Any, first: int, last: int) -> str:
    """A ``FROM`` source of the numbers ``seq`` from ``first`` to ``last``: MariaDB's
    sequence engine, elsewhere (MySQL) a cross join of digits."""
    if getattr(db, "flavor", "mariadb") == "mariadb":
        return f"seq_{first}_to_{last}"
    digits = "(" + " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10)) + ")"
    width = len(str(max(1, last - first)))
    names = [f"d{i}" for i in range(width)]
    value = " + ".join(f"{n}.d * {10**i}" for i, n in enumerate(names))
    joined = ", ".join(f"{digits} {n}" for n in names)
    return f"(SELECT {first} + {value} AS seq FROM {joined} HAVING seq <= {last}) AS numbers"


def source_block(db: EmbeddedMariaDB, tables: str, extra: str = "") -> str:
    """A pipeline file's ``source:`` block reading ``tables`` (``db.pattern``) from ``db``;
    ``extra``: more option lines, indented as options."""
    return db.pipeline_source(tables, extra)


def populate_orders(
    db: EmbeddedMariaDB, rows: int, *, first_id: int = 1, batch: int = 1_000_000
) -> float:
    """Insert ``rows`` rows with ids from ``first_id`` (:func:`sequence`); seconds taken.

    The session skips the binlog (``sql_log_bin=0``): the initial load is not part of any
    measured log range, and logging 10 M rows with FULL images would double the load time.
    """
    started = time.perf_counter()
    with db.connect(DATABASE) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_log_bin = 0")
        for lo in range(first_id, first_id + rows, batch):
            hi = min(lo + batch - 1, first_id + rows - 1)
            cur.execute(
                f"INSERT INTO `{TABLE}` ({ORDERS_COLUMNS}) {orders_select()} "
                f"FROM {sequence(db, lo, hi)}"
            )
    return time.perf_counter() - started


def warm_buffer_pool(db: EmbeddedMariaDB) -> tuple[int, float]:
    """Scan the clustered index once so measured reads come from memory; (rows, MiB)."""
    db.execute(f"ANALYZE TABLE `{TABLE}`", database=DATABASE)  # refreshes DATA_LENGTH
    ((count, _),) = db.execute(
        f"SELECT COUNT(*), SUM(LENGTH(purchaser) + quantity) FROM `{TABLE}`", database=DATABASE
    )
    ((data_length,),) = db.execute(
        "SELECT DATA_LENGTH FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (DATABASE, TABLE),
    )
    return int(count), int(data_length) / 2**20


def disk_page_reads(db: EmbeddedMariaDB) -> int:
    """``Innodb_buffer_pool_reads``: pages read from disk; a warm pool keeps it constant."""
    ((_, value),) = db.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")
    return int(value)


def require_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found on PATH (Debian package mariadb-client)")
    return found


def run_quiet(argv: Sequence[str], password: str = "") -> float:
    """Run a command with stdout to /dev/null; seconds taken. Fails loudly on errors.
    ``password``: the MySQL client's (``MYSQL_PWD``: never in the process arguments)."""
    started = time.perf_counter()
    env = {**os.environ, "MYSQL_PWD": password} if password else None
    done = subprocess.run(
        list(argv),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        env=env,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
    return elapsed


# -- Spark -------------------------------------------------------------------------------


def spark_session(cores: int, conf: dict[str, str] | None = None) -> tuple[Any, float]:
    """A local SparkSession with sparkcdc registered (``conf``: Spark settings besides
    sparkcdc's), and the seconds it took to start."""
    from sparkcdc.spark.session import local_session

    started = time.perf_counter()
    spark = local_session("sparkcdc-benchmark", master=f"local[{cores}]", conf=conf)
    return spark, time.perf_counter() - started


def last_sql_metrics(spark: Any, timeout: float = 10.0) -> dict[str, str]:
    """SQL metrics of the most recent query, as ``{"<node>: <metric>": value text}``.

    Read from Spark's SQL status store (works with the UI off) after the run, so the timed
    query is exactly the documented one, with nothing added to count rows. Listener events
    arrive asynchronously, hence the polling.
    """
    store = spark._jsparkSession.sharedState().statusStore()
    deadline = time.monotonic() + timeout
    while True:
        executions = store.executionsList()
        count = executions.length()
        if count:
            last = max((executions.apply(i) for i in range(count)), key=lambda e: e.executionId())
            if last.completionTime().isDefined() or time.monotonic() > deadline:
                break
        elif time.monotonic() > deadline:
            return {}
        time.sleep(0.1)
    values = store.executionMetrics(last.executionId())
    found = {}
    nodes = store.planGraph(last.executionId()).allNodes().iterator()
    while nodes.hasNext():
        node = nodes.next()
        metrics = node.metrics().iterator()
        while metrics.hasNext():
            metric = metrics.next()
            value = values.get(metric.accumulatorId())
            if value.isDefined():
                found[f"{node.name()}: {metric.name()}"] = str(value.get())
    return found


def metric_count(metrics: dict[str, str], node_prefix: str, name: str) -> int | None:
    """A count metric such as ``BatchScan ...: number of output rows`` ('1,234' -> 1234)."""
    for key, value in metrics.items():
        node, _, metric = key.rpartition(": ")
        if node.startswith(node_prefix) and metric == name:
            return int(value.replace(",", ""))
    return None


@dataclass
class StreamRun:
    """An ``availableNow`` stream's outcome, from Spark's own progress reports."""

    rows: int
    batches: int
    seconds: float
    durations_ms: dict[str, int]  #: ``durationMs`` summed over batches: where time went


def stream_to_noop(
    spark: Any, options: dict[str, str], checkpoint: Path, format: str = "mysql-cdc"
) -> StreamRun:
    """Run ``readStream`` with ``availableNow`` into ``noop`` until it has caught up.

    Rows come from Spark's progress reports (``numInputRows``), so the count is what Spark
    received, not what we believe we sent.
    """
    started = time.perf_counter()
    query = (
        spark.readStream.format(format)
        .options(**options)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the stream failed: {query.exception()}")
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    durations: dict[str, int] = {}
    for p in progress:
        for key, value in p["durationMs"].items():
            durations[key] = durations.get(key, 0) + int(value)
    rows = sum(int(p["numInputRows"]) for p in progress)
    return StreamRun(rows, len(progress), elapsed, durations)


# -- measurement and reporting -------------------------------------------------------------


@dataclass
class Figure:
    """One measured rate: ``count`` units in ``seconds``; compared against the baseline."""

    name: str
    count: int
    seconds: float
    unit: str = "rows"
    note: str = ""

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("nan")


def human(value: float) -> str:
    """1234567 -> '1.23 M': rates are read at a glance, three significant digits."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.3g} {suffix}"
    return f"{value:.3g}"


def print_figures(title: str, figures: Sequence[Figure], baseline: Figure) -> None:
    """A fixed-width table; ratio = rate / baseline rate (the C client of the same run)."""
    name_width = max(len(f.name) for f in figures)
    print(f"\n{title}")
    header = f"{'measurement':<{name_width}}  {'count':>10}  {'seconds':>8}  {'rate/s':>9}  ratio"
    print(header)
    print("-" * len(header))
    for f in figures:
        ratio = f.rate / baseline.rate
        line = (
            f"{f.name:<{name_width}}  {f.count:>10,}  {f.seconds:>8.2f}  "
            f"{human(f.rate):>9}  {ratio:5.2f}"
        )
        print(line + (f"  {f.note}" if f.note else ""))


def print_kv(title: str, items: Sequence[tuple[str, str]]) -> None:
    width = max(len(k) for k, _ in items)
    print(f"\n{title}")
    for key, value in items:
        print(f"  {key:<{width}}  {value}")


def profile(call: Callable[[], object], top: int = 18, *, cpu_time: bool = False) -> str:
    """cProfile ``call``; the ``top`` functions by own time, with short paths.

    ``cpu_time`` times by this process's CPU clock instead of the wall clock, so other work
    on a shared machine and waiting on sockets do not show as our time."""
    profiler = cProfile.Profile(time.process_time) if cpu_time else cProfile.Profile()
    profiler.enable()
    try:
        call()
    finally:
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    total = next((line.strip() for line in lines if "function calls" in line), "")
    if cpu_time:
        total += " (CPU time)"
    return "\n".join([total, *lines[start:]]).rstrip()


# -- processes: memory and CPU -------------------------------------------------------------

#: Process categories, in print order; the driver is this Python process itself.
CATEGORIES = ("driver python", "python workers", "jvm", "mariadbd", "postgres", "c client")
#: The server's process kind (MySQL's ``mysqld`` counts as the server, like ``mariadbd``).
SERVER_KIND = "mariadbd"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class _Proc:
    ppid: int
    comm: str
    jiffies: int  #: utime + stime + cutime + cstime (reaped children count in the parent)


def _classify(pid: int, comm: str) -> str | None:
    if pid == os.getpid():
        return "driver python"
    if comm == "java":
        return "jvm"
    if comm in ("mariadbd", "mysqld"):
        return "mariadbd"
    if comm == "postgres":
        return "postgres"
    if comm in ("mariadb", "mariadb-binlog", "mysql", "mysqlbinlog", "psql"):
        return "c client"
    if comm.startswith("python"):
        return "python workers"
    return None


def _status_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB; (0, 0) once it has exited."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
    except OSError:
        pass
    return rss, hwm


def _process_table() -> dict[int, _Proc]:
    """Every process, from /proc/<pid>/stat (the command name may contain spaces)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        jiffies = sum(int(v) for v in fields[11:15])
        table[int(entry.name)] = _Proc(int(fields[1]), comm, jiffies)
    return table


def _busy_jiffies() -> int:
    """CPU time spent by the whole machine so far (all but idle and iowait)."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    return sum(values) - values[3] - values[4]


def _descendants(root: int, table: dict[int, _Proc]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, proc in table.items():
        children.setdefault(proc.ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


@dataclass
class _Phase:
    rss_sum: dict[str, int] = field(default_factory=dict)  # KiB, summed over processes
    hwm_max: dict[str, int] = field(default_factory=dict)  # KiB, largest single process
    foreign_jiffies: int = 0  # CPU used by processes that are not ours
    seconds: float = 0.0


class ProcessSampler:
    """Samples /proc for this process and its descendants (JVM, Spark's Python workers,
    mariadbd, C clients) from a background thread: peak memory per phase, and the CPU that
    processes outside the benchmark used meanwhile.

    psutil is not a dependency, and VmHWM alone is not enough: Spark's Python workers are
    forked and may exit between phases, so RSS is also sampled and summed per category.
    Summed RSS counts pages shared after fork once per worker: an upper bound. Foreign CPU
    matters because on a shared 2-core machine another job silently halves any rate.
    """

    def __init__(self, interval: float = 0.2) -> None:
        self.interval = interval
        self.phases: dict[str, _Phase] = {}
        self._phase: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-sampler", daemon=True)
        self._last_busy = _busy_jiffies()
        self._last_ours: dict[int, int] = {}
        self._last_time = time.monotonic()

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.sample()  # closes the interval before the phase
        with self._lock:
            self._phase = name
            self.phases.setdefault(name, _Phase())
        try:
            yield
        finally:
            self.sample()
            with self._lock:
                self._phase = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        with self._lock:  # one sampler at a time: CPU deltas need consecutive samples
            table = _process_table()
            busy, now = _busy_jiffies(), time.monotonic()
            rss: dict[str, int] = {}
            hwm: dict[str, int] = {}
            ours: dict[int, int] = {}
            for pid in _descendants(os.getpid(), table):
                proc = table.get(pid)
                if proc is None:
                    continue
                ours[pid] = proc.jiffies
                category = _classify(pid, proc.comm)
                if category is None:
                    continue
                resident, peak = _status_kib(pid)
                rss[category] = rss.get(category, 0) + resident
                hwm[category] = max(hwm.get(category, 0), peak)
            ours_delta = sum(j - self._last_ours.get(pid, 0) for pid, j in ours.items())
            foreign = max(0, busy - self._last_busy - ours_delta)
            elapsed = now - self._last_time
            self._last_busy, self._last_ours, self._last_time = busy, ours, now
            if self._phase is None:
                return
            phase = self.phases[self._phase]
            phase.foreign_jiffies += foreign
            phase.seconds += elapsed
            for category, value in rss.items():
                phase.rss_sum[category] = max(phase.rss_sum.get(category, 0), value)
            for category, value in hwm.items():
                phase.hwm_max[category] = max(phase.hwm_max.get(category, 0), value)

    def report(self) -> str:
        """Per phase: peak summed RSS per category (MiB) with, in brackets, the largest
        single-process VmHWM (its peak since it started, which may predate the phase); and
        the CPU cores other processes on the machine used on average."""
        names = list(self.phases)
        width = max([len(n) for n in names] + [5])
        header = f"{'phase':<{width}}" + "".join(f"  {c:>16}" for c in CATEGORIES) + "  other CPU"
        lines = [header, "-" * len(header)]
        for name in names:
            phase = self.phases[name]
            cells = []
            for category in CATEGORIES:
                if category in phase.rss_sum:
                    total = phase.rss_sum[category] / 1024
                    single = phase.hwm_max.get(category, 0) / 1024
                    cells.append(f"{total:>6.0f} [{single:>5.0f}]")
                else:
                    cells.append("-")
            other = phase.foreign_jiffies / _CLOCK_TICKS / phase.seconds if phase.seconds else 0
            lines.append(
                f"{name:<{width}}" + "".join(f"  {c:>16}" for c in cells) + f"  {other:>5.2f}"
            )
        return "\n".join(lines)

    def worst_foreign_load(self) -> float:
        """The highest average number of cores other processes used during any phase."""
        loads = [
            p.foreign_jiffies / _CLOCK_TICKS / p.seconds
            for p in self.phases.values()
            if p.seconds > 0
        ]
        return max(loads, default=0.0)


def print_process_report(sampler: ProcessSampler) -> None:
    print(
        "\nPer phase: peak RSS MiB summed per process kind [largest single-process VmHWM];"
        "\nother CPU = cores used on average by processes outside this benchmark"
    )
    print(sampler.report())
    worst = sampler.worst_foreign_load()
    if worst > 0.2:
        print(
            f"WARNING: other processes used up to {worst:.2f} cores during a phase: the rates "
            "of that phase are depressed; rerun on an idle machine"
        )


# -- command line --------------------------------------------------------------------------


def source_option_pairs(values: Sequence[str]) -> dict[str, str]:
    """``-o key=value`` arguments: extra ``mysql-cdc`` options passed to every sparkcdc read."""
    pairs = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"-o expects key=value, got {value!r}")
        pairs[key.strip()] = text
    return pairs


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cores", type=int, default=2, help="Spark local[N] (default 2: the machine's cores)"
    )
    parser.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra mysql-cdc option for every sparkcdc read (e.g. scan.snapshot.fetch.size=4096)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile sparkcdc's Python read path in this process; print the top functions",
    )
    parser.add_argument(
        "--no-spark", action="store_true", help="skip the Spark measurements (Python/C only)"
    )
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default="mariadb",
        help="the source server: MariaDB (default) or Oracle's MySQL 8.0 (jvm/mysql)",
    )


def run_with_server(args: Any, run: Callable[[Any, Any, Any], None]) -> None:
    """Start the benchmark's MariaDB, run ``run(args, db, memory)``, always stop it, and
    print the total wall time."""
    started = time.perf_counter()
    with ProcessSampler() as memory:
        db = start_mariadb(args.buffer_pool, args.server)
        print(f"Server: {db.execute('SELECT VERSION()')[0][0]}")
        try:
            run(args, db, memory)
        finally:
            db.stop()
    print(f"\nTotal wall time {time.perf_counter() - started:.0f} s")

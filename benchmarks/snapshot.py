"""Snapshot throughput: sparkcdc against the ``mariadb`` C client, on one table in one run.

    .venv/bin/python -m benchmarks.snapshot [--rows N] [--profile] [-o key=value ...]

Loads an ``orders`` table (docs/stack-notes.md) with the server's sequence engine, warms the buffer
pool, then reads the whole table with (1) the C client, (2) sparkcdc's two chunk readers
(``scan.snapshot.reader`` native = C into Arrow buffers, classic = mysqlclient) in this
process without Spark, (3) Spark batch reads into ``noop`` with each reader and (4) a Spark
``availableNow`` stream into ``noop``, and (5) logs ``--changes`` binlog row changes on the
same table and decodes them with ``mariadb-binlog`` and with sparkcdc. Prints rows/s (row
changes/s), the ratio to the C tool, CPU time per row per process kind (load-independent,
unlike rates on a shared machine) and peak memory.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import (
    CATEGORIES,
    DATABASE,
    ORDERS_COLUMNS,
    TABLE,
    Figure,
    ProcessSampler,
    add_common_arguments,
    disk_page_reads,
    human,
    last_sql_metrics,
    metric_count,
    populate_orders,
    print_figures,
    print_kv,
    print_process_report,
    profile,
    require_tool,
    run_quiet,
    run_with_server,
    source_option_pairs,
    spark_session,
    stream_to_noop,
    warm_buffer_pool,
)
from benchmarks._common import _classify as classify_process
from benchmarks._common import _descendants as descendants
from benchmarks._common import _process_table as process_table
from benchmarks.binlog import c_reference, generate, sparkcdc_arrow
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.snapshot.reader import read_chunks, reader_for
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.snapshot.partitions import ChunkRead, PartitionSpec

TARGET_RATIO = 0.75
READERS = ("native", "classic")
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds so far per process kind (this process and its descendants, with the
    reaped children each one counts): deltas over a phase give CPU per row per kind."""
    table = process_table()
    seconds: dict[str, float] = {}
    for pid in descendants(os.getpid(), table):
        proc = table.get(pid)
        kind = proc and classify_process(pid, proc.comm)
        if proc and kind:
            seconds[kind] = seconds.get(kind, 0.0) + proc.jiffies / _TICKS
    return seconds


class CpuPerRow:
    """``with CpuPerRow() as cpu: ...`` then ``cpu.note(rows)``: us of CPU per row by kind."""

    def __enter__(self) -> CpuPerRow:
        self.start = cpu_by_kind()
        return self

    def __exit__(self, *exc: object) -> None:
        self.end = cpu_by_kind()

    def note(self, rows: int) -> str:
        kinds = [k for k in CATEGORIES if k in self.end]
        per = {k: (self.end[k] - self.start.get(k, 0.0)) * 1e6 / max(rows, 1) for k in kinds}
        short = {"driver python": "py", "python workers": "workers", "c client": "client"}
        cells = [f"{short.get(k, k)} {v:.2f}" for k, v in per.items() if v >= 0.005]
        return f"cpu us/row: {', '.join(cells)}; total {sum(per.values()):.2f}"


def c_client(db: EmbeddedMariaDB, rows: int) -> Figure:
    """The reference: the C client streaming the table (``--quick``) in batch format."""
    argv = [
        require_tool("mariadb"),
        "--no-defaults",
        "--quick",
        "-B",
        "-h",
        db.host,
        "-P",
        str(db.port),
        "-u",
        db.root.user,
        "-e",
        f"SELECT {ORDERS_COLUMNS} FROM {DATABASE}.{TABLE}",
    ]
    reads = disk_page_reads(db)
    with CpuPerRow() as cpu:
        seconds = run_quiet(argv, db.root.password)
    note = f"disk page reads {disk_page_reads(db) - reads}; {cpu.note(rows)}"
    return Figure("C client: mariadb --quick -B > /dev/null", rows, seconds, note=note)


def in_process(
    options: dict[str, str], specs: list[PartitionSpec], reader: str
) -> tuple[Figure, Figure]:
    """sparkcdc's executor code on one core without Spark, with one chunk reader: rows
    only, then rows to Arrow batches (what one Spark Python worker does for a partition).

    Separates the Python reader's own ceiling from what Spark adds on top of it.
    """
    source = MySqlCdcSource(parse_config({**options, "scan.snapshot.reader": reader}))
    chunk_reads = [s for s in specs if isinstance(s, ChunkRead)]
    config = source.config
    try:
        rows = 0
        with CpuPerRow() as cpu:
            started = time.perf_counter()
            for spec in chunk_reads:
                for batch in read_chunks(
                    config, spec.table, spec.chunks, spec.target, config.server_id(spec.reader)
                ):
                    rows += batch.num_rows
            seconds = time.perf_counter() - started
        tuples = Figure(
            f"sparkcdc read_chunks [{reader}], 1 core, no Spark",
            rows,
            seconds,
            note=cpu.note(rows),
        )
        arrow_rows = 0
        with CpuPerRow() as cpu:
            started = time.perf_counter()
            for spec in chunk_reads:
                for record_batch in source.read(spec):
                    arrow_rows += record_batch.num_rows
            seconds = time.perf_counter() - started
        arrow = Figure(
            f"sparkcdc source.read [{reader}] (+Arrow), 1 core, no Spark",
            arrow_rows,
            seconds,
            note=cpu.note(arrow_rows),
        )
    finally:
        source.close()
    return tuples, arrow


def _read_one(source: MySqlCdcSource, spec: PartitionSpec) -> Callable[[], int]:
    return lambda: sum(b.num_rows for b in source.read(spec))


def spark_batch(spark: Any, options: dict[str, str]) -> tuple[int, float]:
    """``spark.read...write.format('noop')``: (rows, seconds).

    The row count is the scan's own SQL metric, read after the run, so the timed query is
    exactly the documented one.
    """
    started = time.perf_counter()
    (
        spark.read.format("mysql-cdc")
        .options(**options)
        .load()
        .write.format("noop")
        .mode("overwrite")
        .save()
    )
    seconds = time.perf_counter() - started
    metrics = last_sql_metrics(spark)
    rows = metric_count(metrics, "BatchScan", "number of output rows")
    return (-1 if rows is None else rows), seconds


def run(args: argparse.Namespace, db: EmbeddedMariaDB, memory: ProcessSampler) -> None:
    with memory.phase("load"):
        load_seconds = populate_orders(db, args.rows)
        count, mib = warm_buffer_pool(db)
    print_kv(
        f"Table {DATABASE}.{TABLE}",
        [
            ("rows", f"{count:,}"),
            ("data length", f"{mib:,.0f} MiB (buffer pool {args.buffer_pool})"),
            ("load", f"{load_seconds:.1f} s ({count / load_seconds:,.0f} rows/s, generated)"),
        ],
    )
    options = {
        **db.source_options(),
        "database-name": DATABASE,
        "table-name": TABLE,
        **source_option_pairs(args.option),
    }

    with memory.phase("C client"):
        baseline = min((c_client(db, count) for _ in range(args.repeat)), key=lambda f: f.seconds)
    figures = [baseline]

    source = MySqlCdcSource(parse_config(options))
    try:
        specs = source.snapshot_partitions()
    finally:
        source.close()
    direct = specs[: max(1, args.direct_partitions)]
    for reader in READERS:
        with memory.phase(f"in-process {reader}"):
            figures.extend(in_process(options, direct, reader))
        if args.profile:
            profiled = MySqlCdcSource(parse_config({**options, "scan.snapshot.reader": reader}))
            print(f"\ncProfile of source.read() [{reader}] on one partition (read + Arrow):")
            try:
                print(profile(_read_one(profiled, specs[0])))
            finally:
                profiled.close()

    if not args.no_spark:
        figures.extend(spark_figures(args, options, count, memory))

    print_figures(
        f"Snapshot of {count:,} rows (default reader {reader_for(source.config)}, "
        f"{len(specs)} partitions of "
        f"<= {source.config.rows_per_partition:,} rows, chunks of {source.config.chunk_size:,})",
        figures,
        baseline,
    )
    spark_figures_ = {f.name: f for f in figures if f.name.startswith("Spark")}
    if spark_figures_:
        ratios = ", ".join(
            f"{name.removeprefix('Spark ')} {f.rate / baseline.rate:.2f}"
            for name, f in spark_figures_.items()
            if "session start" not in name
        )
        print(f"\nsparkcdc / C client: {ratios} (target >= {TARGET_RATIO})")
    if args.changes:
        binlog_on_the_same_table(db, options, count, args.changes, memory)
    print_process_report(memory)


def binlog_on_the_same_table(
    db: EmbeddedMariaDB,
    options: dict[str, str],
    table_rows: int,
    changes: int,
    memory: ProcessSampler,
) -> None:
    """The issue's binlog figure in the same run, on the same table: ``changes`` row changes
    (benchmarks.binlog's 10/80/10 mix, 1000-row statements) decoded by ``mariadb-binlog``
    and by sparkcdc's executor path (``source.read``: decode + Arrow) on one core.
    ``python -m benchmarks.binlog`` has the full comparison and the Spark keep-up run."""
    source = MySqlCdcSource(parse_config(options))
    try:
        with memory.phase("binlog: generate"):
            workload = generate(db, source, table_rows, changes, 1000)
    finally:
        source.close()
    with memory.phase("binlog: source.read"):
        arrow, _ = sparkcdc_arrow(options, workload)
    generated = sum(workload.seconds.values())
    figures = [Figure(arrow.name, workload.total, arrow.seconds, "changes", arrow.note)]
    if db.flavor == "mariadb":  # mariadb-binlog reads MariaDB's binlog, not MySQL 8's
        with memory.phase("binlog: C mariadb-binlog"):
            baseline = c_reference(db, workload)
        figures.insert(0, Figure(baseline.name, workload.total, baseline.seconds, "changes"))
    print_figures(
        f"Binlog: {workload.total:,} row changes on {TABLE} "
        f"(the server generated them at {human(workload.total / generated)}/s)",
        figures,
        figures[0],
    )


def spark_figures(
    args: argparse.Namespace, options: dict[str, str], count: int, memory: ProcessSampler
) -> list[Figure]:
    with memory.phase("spark start"):
        spark, start_seconds = spark_session(args.cores)
    checkpoint = Path(tempfile.mkdtemp(prefix="sparkcdc-bench-"))
    warm: dict[str, tuple[int, float, str]] = {}
    try:
        with memory.phase("spark batch 1st"):
            rows1, first = spark_batch(spark, options)
        for reader in READERS:
            with memory.phase(f"spark batch 2nd {reader}"), CpuPerRow() as cpu:
                runs = [
                    spark_batch(spark, {**options, "scan.snapshot.reader": reader})
                    for _ in range(args.repeat)
                ]
            rows2, second = min(runs, key=lambda r: r[1])
            warm[reader] = (rows2, second, cpu.note(rows2 * len(runs)))
        stream_options = dict(options)
        if args.stream_max_rows:
            stream_options["maxRowsPerTrigger"] = str(args.stream_max_rows)
        streams = []
        for run in (1, 2):  # the 2nd, like the 2nd batch, runs on warm JIT-compiled code
            with memory.phase(f"spark stream {run}"), CpuPerRow() as stream_cpu:
                stream = stream_to_noop(spark, stream_options, checkpoint / str(run))
            streams.append((stream, stream_cpu.note(stream.rows)))
    finally:
        spark.stop()
        shutil.rmtree(checkpoint, ignore_errors=True)
    seen = [
        ("batch 1st", rows1),
        *((f"stream {i + 1}", st.rows) for i, (st, _) in enumerate(streams)),
    ]
    seen += [(f"batch 2nd {r}", w[0]) for r, w in warm.items()]
    for what, rows in seen:
        if rows != count:
            print(f"WARNING: Spark {what} saw {rows:,} rows, the table has {count:,}")
    print_kv(
        "Spark details",
        [
            ("session start", f"{start_seconds:.1f} s"),
            *(
                (f"stream {i + 1} durationMs (summed)", _durations(st.durations_ms))
                for i, (st, _) in enumerate(streams)
            ),
        ],
    )
    cores = f"local[{args.cores}]"
    return [
        Figure("Spark batch, 1st run, incl. session start", rows1, start_seconds + first),
        Figure("Spark batch, 1st run", rows1, first, note=cores),
        *(
            Figure(f"Spark batch [{r}], 2nd run (warm JVM/workers)", n, t, note=f"{cores}; {c}")
            for r, (n, t, c) in warm.items()
        ),
        *(
            Figure(
                f"Spark stream availableNow, {which} run",
                st.rows,
                st.seconds,
                note=f"{st.batches} micro-batch(es), {cores}; {cpu_note}",
            )
            for which, (st, cpu_note) in zip(("1st", "2nd"), streams, strict=True)
        ),
    ]


def _durations(durations: dict[str, int]) -> str:
    ordered = sorted(durations.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v / 1000:.1f} s" for k, v in ordered if v >= 50)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.snapshot", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--rows", type=int, default=10_000_000, help="table rows (10,000,000)")
    parser.add_argument(
        "--buffer-pool", default="2G", help="innodb-buffer-pool-size, large enough for the table"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of the C client and warm Spark batch (best)"
    )
    parser.add_argument(
        "--direct-partitions",
        type=int,
        default=8,
        help="partitions read by the in-process (no Spark) measurement (8 = ~2 M rows)",
    )
    parser.add_argument(
        "--stream-max-rows", type=int, default=None, help="maxRowsPerTrigger for the stream"
    )
    parser.add_argument(
        "--changes",
        type=int,
        default=500_000,
        help="binlog row changes then logged on the same table and decoded (0: skip)",
    )
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    run_with_server(args, run)


if __name__ == "__main__":
    main()

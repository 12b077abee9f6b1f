"""The main job at scale: one pipeline's initial load at sizes 100x apart, to show whether
its memory stays flat and its cost linear.

    .venv/bin/python -m benchmarks.scale [--sizes 1000000,100000000]

One private MariaDB and one SparkSession, warmed by a run of ``--warm-up`` rows (not
reported: a session's first stream costs seconds more). For each size, smallest first,
``bench.orders`` is loaded again with that many rows (the load skips the binlog), then
``sparkcdc run --available-now`` (in process, default options) copies it into a new Delta
table, with a new checkpoint. Per size it prints the run's seconds and rows/s, with the ratio of its
rate to the smallest size's (1.0: linear); the batches committed; the checkpoint's size
and its last offset's; the Delta table's files and bytes. Per phase, the peak memory of
every process kind (flat: the same at every size), and the driver JVM's heap after a
full collection (its resident size also counts heap it grew into and kept).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import (
    DATABASE,
    TABLE,
    Figure,
    ProcessSampler,
    populate_orders,
    print_figures,
    print_kv,
    print_process_report,
    spark_session,
    start_mariadb,
    warm_buffer_pool,
)
from benchmarks.pipeline import pipeline


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def last_offset_bytes(checkpoint: Path) -> int:
    """Size of the newest offset file Spark wrote (what every batch writes again)."""
    offsets = [p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    return max(offsets, key=lambda p: int(p.name)).stat().st_size


def jvm_heap(spark: Any) -> str:
    """The driver JVM's heap after a full collection: live data, told apart from the heap
    the JVM merely grew into (its resident size includes both)."""
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    spark.sparkContext._jvm.java.lang.System.gc()
    mib = 2**20
    used = (runtime.totalMemory() - runtime.freeMemory()) / mib
    heap, limit = runtime.totalMemory() / mib, runtime.maxMemory() / mib
    return f"{used:,.0f} MiB live after GC; heap {heap:,.0f} MiB of max {limit:,.0f}"


def batches(checkpoint: Path) -> int:
    return sum(1 for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


def one_size(spark: Any, db: Any, rows: int, folder: Path, memory: Any) -> tuple[Figure, list[Any]]:
    """Load ``rows`` rows, run the pipeline once; its figure and report lines."""
    db.execute(f"TRUNCATE TABLE `{TABLE}`", database=DATABASE)
    with memory.phase(f"load {rows:,}"):
        load = populate_orders(db, rows)
        count, size = warm_buffer_pool(db)
    folder.mkdir()
    with memory.phase(f"pipeline {rows:,}"):
        seconds = pipeline(spark, db, folder, None)
    checkpoint = folder / "checkpoint"
    lake = folder / "lake" / DATABASE / TABLE
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{lake}`").first()
    written = spark.read.format("delta").load(str(lake)).count()
    lines = [
        ("table", f"{count:,} rows, {size:,.0f} MiB (loaded in {load:.0f} s)"),
        ("pipeline", f"{seconds:.1f} s, {written:,} rows written"),
        ("batches committed", str(batches(checkpoint))),
        (
            "checkpoint",
            f"{folder_bytes(checkpoint) / 1024:,.0f} KiB; last offset "
            f"{last_offset_bytes(checkpoint):,} bytes",
        ),
        ("Delta table", f"{detail['numFiles']:,} files, {detail['sizeInBytes'] / 2**20:,.0f} MiB"),
        ("driver JVM", jvm_heap(spark)),
    ]
    if written != rows:
        lines.append(("WARNING", f"the pipeline wrote {written:,} rows, not {rows:,}"))
    return Figure(f"pipeline, {rows:,} rows", rows, seconds), lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,100000000")
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--buffer-pool", default="2G")
    parser.add_argument("--warm-up", type=int, default=10_000)
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    started = time.perf_counter()
    with ProcessSampler() as memory:
        db = start_mariadb(args.buffer_pool)
        try:
            spark, session = spark_session(args.cores)
            print_kv("Set-up", [("spark", f"local[{args.cores}], session start {session:.1f} s")])
            figures = []
            with tempfile.TemporaryDirectory(prefix="sparkcdc-scale-") as tmp:
                one_size(spark, db, args.warm_up, Path(tmp) / "warm-up", memory)
                for rows in sizes:
                    figure, lines = one_size(spark, db, rows, Path(tmp) / str(rows), memory)
                    print_kv(f"{rows:,} rows", lines)
                    figures.append(figure)
            print_figures(
                "Initial load into Delta by size (ratio: rate against the smallest size's)",
                figures,
                figures[0],
            )
            spark.stop()
        finally:
            db.stop()
        print_process_report(memory)
    print(f"\nTotal wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

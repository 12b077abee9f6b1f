"""Many tables in one stream: what discovery, planning, the first batch and the offset
cost with 1000 captured tables, against one table holding the same rows, in one run.

    .venv/bin/python -m benchmarks.many_tables [--tables 1000] [--rows 100] [--writers native,spark]

Creates ``--tables`` tables ``bench.t0000`` ... (10 columns each: a BIGINT key, integers,
a DECIMAL, a DATETIME, strings) with ``--rows`` rows each, and the baseline ``bench.wide``
with the same columns and all those rows, in a private MariaDB. Then, in one SparkSession:

1. the snapshot: ``readStream.format("mysql-cdc")`` with ``availableNow`` into ``noop``,
   once for ``wide`` (one table) and once for ``t[0-9]+`` (all the tables: the envelope);
2. the log: one UPDATE per table, each its own transaction (and as many on ``wide``), then
   each stream again from its checkpoint.

Printed per phase: the whole query (start to caught up), the first batch's planning
(``latestOffset``, which discovers the tables and plans the chunks or the log range) and
its execution, the number of batches, the size of the largest offset Spark wrote (offsets
hold one entry per table: what O(tables) costs in bytes), and the peak memory of each
process kind.

Then the same as pipelines into Delta (``prepare``, ``start``, ``wait`` in process, one
Delta table per source table): ``prepare`` (server checks, discovery, creating the
targets), the first batch and the whole run, for the snapshot, for one UPDATE per table,
and for one UPDATE of one table (what a batch costs the tables it does not change),
with the bytes of the targets' Delta commit files, against a pipeline of ``wide`` alone;
the many tables once writing one target at a time (``concurrent-writes: 1``, the
baseline) and once four at a time (the default).
``--sink kafka`` runs the pipelines into an embedded Kafka broker instead (one upsert topic
per table; a batch is one Kafka write whatever its tables, so the baseline is ``wide``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import (
    DATABASE,
    ProcessSampler,
    StreamRun,
    print_kv,
    print_process_report,
    source_block,
    spark_session,
    stream_to_noop,
)
from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB

COLUMNS = """
    id BIGINT NOT NULL PRIMARY KEY,
    a INT NOT NULL, b INT NOT NULL, c BIGINT NOT NULL,
    price DECIMAL(10, 2) NOT NULL, at DATETIME NOT NULL,
    name VARCHAR(40) NOT NULL, note VARCHAR(80), code CHAR(8) NOT NULL, flag TINYINT NOT NULL
"""


def values_select(rows: int, offset: int = 0) -> str:
    s = f"(seq + {offset})"
    return (
        f"SELECT {s}, {s} % 1000, {s} * 7 % 100000, {s} * 31, "
        f"CAST({s} * 37 % 1000000 / 100 AS DECIMAL(10, 2)), "
        f"TIMESTAMP'2021-01-01 00:00:00' + INTERVAL ({s} * 7919 % 99999999) SECOND, "
        f"CONCAT('name-', {s}), IF({s} % 3 = 0, NULL, CONCAT('note ', {s} * 13)), "
        f"LPAD({s} % 100000, 8, '0'), {s} % 2 FROM seq_1_to_{rows}"
    )


def create_tables(db: EmbeddedMariaDB, tables: int, rows: int) -> float:
    """The captured tables and ``wide``, unlogged (a snapshot reads them); seconds."""
    started = time.perf_counter()
    conn = db.connect(DATABASE, account=db.root)
    try:
        cur = conn.cursor()
        cur.execute("SET SESSION sql_log_bin = 0")
        for i in range(tables):
            cur.execute(f"CREATE TABLE t{i:04d} ({COLUMNS}) ENGINE=InnoDB")
            cur.execute(f"INSERT INTO t{i:04d} {values_select(rows)}")
        cur.execute(f"CREATE TABLE wide ({COLUMNS}) ENGINE=InnoDB")
        cur.execute(f"INSERT INTO wide {values_select(tables * rows)}")
        conn.commit()
    finally:
        conn.close()
    return time.perf_counter() - started


def update_each(db: EmbeddedMariaDB, tables: int, changed: int | None = None) -> None:
    """One logged UPDATE per captured table (or the first ``changed`` of them), and as
    many on ``wide``, each autocommitted."""
    conn = db.connect(DATABASE, account=db.root)
    try:
        cur = conn.cursor()
        for i in range(tables if changed is None else changed):
            cur.execute(f"UPDATE t{i:04d} SET a = a + 1 WHERE id = 1")
            cur.execute(f"UPDATE wide SET a = a + 1 WHERE id = {i + 1}")
    finally:
        conn.close()


def largest_offset(checkpoint: Path) -> int:
    """Bytes of the largest offset file Spark wrote into the checkpoint."""
    files = [p for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()]
    return max(p.stat().st_size for p in files)


def delta_log_bytes(lake: Path) -> int:
    """Bytes of every Delta commit file (``_delta_log/*.json``) under ``lake``: what the
    targets' commits cost in storage, and what each MERGE's log replay reads."""
    return sum(p.stat().st_size for p in lake.glob("**/_delta_log/*.json"))


def describe(run: StreamRun, checkpoint: Path) -> str:
    plan = run.durations_ms.get("latestOffset", 0) / 1000
    execute = run.durations_ms.get("addBatch", 0) / 1000
    return (
        f"{run.seconds:.2f} s · {run.rows:,} rows in {run.batches} batches · planning "
        f"(latestOffset, all batches) {plan:.2f} s · execution (addBatch) {execute:.2f} s · "
        f"largest offset {largest_offset(checkpoint):,} bytes"
    )


#: The source option line of the pipelines: a range of ids for parallel binlog readers.
SERVER_IDS = "  server-id: 5400-5463\n"


def sink_block(folder: Path, writes: int, kafka: str | None, writer: str = "spark") -> str:
    """Delta under ``folder`` writing up to ``writes`` targets at once with ``writer``
    (``spark`` or ``native``), or, with ``kafka`` (its brokers), one upsert topic per table
    named after the folder."""
    if kafka is not None:
        return f"""\
sink:
  type: kafka
  properties.bootstrap.servers: {kafka}
  value.format: upsert
  topic-pattern: {folder.name}.{{table}}
"""
    return f"""\
sink:
  type: delta
  path: {folder / "lake"}
  concurrent-writes: {writes}
  writer: {writer}
"""


def run_pipeline(
    spark: Any,
    db: EmbeddedMariaDB,
    folder: Path,
    tables: str,
    writes: int = 4,
    kafka: str | None = None,
    writer: str = "spark",
) -> str:
    """One ``--available-now`` run of a pipeline of ``tables`` (a pattern) into Delta
    (or Kafka, see :func:`sink_block`) under ``folder``, in process; what it cost.
    ``writer`` ``native-old`` is the native writer with its rows fetched the old way (each
    table's DataFrame, unioned), not decoded from the envelope on the executors."""
    from sparkcdc.pipeline.definition import load_pipeline
    from sparkcdc.pipeline.runner import prepare
    from sparkcdc.sinks.delta import native_batch

    native_batch.DECODE_ENVELOPE = writer != "native-old"
    writer = "native" if writer == "native-old" else writer

    folder.mkdir(exist_ok=True)
    path = folder / "pipeline.yaml"
    path.write_text(
        f"""\
{source_block(db, f"{DATABASE}.{tables}", SERVER_IDS)}{sink_block(folder, writes, kafka, writer)}\
pipeline:
  name: many
  checkpoint: {folder / "checkpoint"}
  trigger-interval: available-now
""",
        encoding="utf-8",
    )
    started = time.perf_counter()
    run = prepare(load_pipeline(path), spark=spark)
    prepared = time.perf_counter()
    run.start()
    run.wait()
    ended = time.perf_counter()
    first = run.batches[0] if run.batches else None
    return (
        f"{ended - started:.1f} s · prepare {prepared - started:.1f} s · "
        + (f"first batch {first.written - first.started:.1f} s · " if first else "")
        + f"{len(run.batches)} batches · largest offset "
        f"{largest_offset(folder / 'checkpoint'):,} bytes"
        + ("" if kafka else f" · Delta commits {delta_log_bytes(folder / 'lake'):,} bytes")
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--parts", default="streams,pipelines", help="what to run")
    parser.add_argument("--sink", choices=("delta", "kafka"), default="delta")
    parser.add_argument(
        "--writers",
        default="spark",
        help="Delta writers to run the pipelines with, in one run: spark (Spark's MERGE, the "
        "old path), native (delta-rs), native-old (delta-rs, each table's rows fetched "
        "through its own DataFrame as before issue 62's envelope decoding), or several: "
        "native,native-old",
    )
    parser.add_argument(
        "--phases",
        default="snapshot,log,log-one",
        help="pipeline phases: snapshot, log (one UPDATE per table), log-one (one UPDATE)",
    )
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the one-write-at-a-time Delta run (it takes hours at 1000 tables)",
    )
    args = parser.parse_args(argv)
    writers = args.writers.split(",")
    if not writers or set(writers) - {"spark", "native", "native-old"}:
        parser.error(f"--writers: spark, native, native-old or several, not {args.writers!r}")
    kafka = EmbeddedKafka() if args.sink == "kafka" else None

    with ProcessSampler() as memory, tempfile.TemporaryDirectory(prefix="sparkcdc-many-") as tmp:
        db = EmbeddedMariaDB(settings={"innodb-buffer-pool-size": "1G"})
        db.start()
        if kafka is not None:
            kafka.start()
        try:
            db.create_database(DATABASE)
            created = create_tables(db, args.tables, args.rows)
            print_kv(
                "Source",
                [
                    (
                        f"{args.tables} tables x {args.rows} rows, and wide",
                        f"{args.tables * args.rows:,} rows each side, created in {created:.1f} s",
                    )
                ],
            )
            spark, started = spark_session(args.cores)
            spark.sparkContext.setLogLevel("ERROR")
            base = {**db.source_options(), "database-name": DATABASE, "server-id": "5400-5463"}
            streams = {
                "one table (wide)": {**base, "table-name": "wide"},
                f"{args.tables} tables (envelope)": {**base, "table-name": "t[0-9]+"},
            }
            folder = Path(tmp)
            results: list[tuple[str, str]] = []
            for phase in ("snapshot", "log") if "streams" in args.parts else ():
                if phase == "log":
                    update_each(db, args.tables)
                for i, (name, options) in enumerate(streams.items()):
                    checkpoint = folder / f"cp{i}"
                    with memory.phase(f"{phase}: {name}"):
                        run = stream_to_noop(spark, options, checkpoint)
                    results.append((f"{phase}: {name}", describe(run, checkpoint)))
            if results:
                title = f"Streams, availableNow into noop (session start {started:.1f} s)"
                print_kv(title, results)
            pipelines: dict[str, tuple[str, int, str]] = {}
            for writer in writers:
                named = "" if len(writers) == 1 else f", writer {writer}"
                pipelines[f"one table (wide){named}"] = ("wide", 4, writer)
                if not args.no_baseline:
                    baseline = f"{args.tables} tables, one write at a time (baseline){named}"
                    pipelines[baseline] = ("t[0-9]+", 1, writer)
                pipelines[f"{args.tables} tables, concurrent-writes 4{named}"] = (
                    "t[0-9]+",
                    4,
                    writer,
                )
            if kafka is not None:  # one Kafka write per batch: the baseline is wide
                pipelines = {
                    "one table (wide, the baseline)": ("wide", 1, "spark"),
                    f"{args.tables} tables": ("t[0-9]+", 1, "spark"),
                }
            servers = None if kafka is None else kafka.bootstrap_servers
            results = []
            chosen = args.phases.split(",")
            phases = [
                name
                for key, name in (
                    ("snapshot", "snapshot"),
                    ("log", "log"),
                    ("log-one", "log, one table changed"),
                )
                if key in chosen
            ]
            for phase in phases if "pipelines" in args.parts else ():
                if phase.startswith("log"):
                    update_each(db, args.tables, 1 if "one" in phase else None)
                for i, (name, (pattern, writes, writer)) in enumerate(pipelines.items()):
                    with memory.phase(f"pipeline {phase}: {name}"):
                        figure = run_pipeline(
                            spark, db, folder / f"p{i}", pattern, writes, servers, writer
                        )
                    results.append((f"{phase}: {name}", figure))
            if results:
                print_kv(f"Pipelines into {args.sink}, --available-now", results)
            spark.stop()
        finally:
            if kafka is not None:
                kafka.stop()
            db.stop()
    print_process_report(memory)


if __name__ == "__main__":
    main()

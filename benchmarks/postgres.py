"""PostgreSQL source throughput, next to PostgreSQL's own C tools, in one run.

    .venv/bin/python -m benchmarks.postgres [--rows N] [--changes N] [--profile] [--no-spark]

Starts a private PostgreSQL (``wal_level=logical``, shared_buffers large enough to hold the
table), loads ``bench.orders`` (the docs/stack-notes.md table with PostgreSQL types: bigint
key, date, timestamp, two int, numeric(10,2), varchar(64); REPLICA IDENTITY FULL) with
``--rows`` rows generated inside the server, warms the cache, then measures

* the snapshot: ``psql -c "COPY (SELECT ...) TO STDOUT (FORMAT binary)"`` into /dev/null
  (the baseline), the same in CSV (the format sparkcdc reads), sparkcdc's chunk reads
  through ``source.read`` on one core in this process, and a Spark batch into ``noop``;
* the WAL: ``--changes`` row changes (80 % updates, 10 % inserts, 10 % deletes in
  ``--statement-rows``-row statements) logged on the same table, decoded by the server
  alone (``count(*)`` over ``pg_logical_slot_peek_binary_changes``: the decoding every
  reader pays, the baseline of that block), and by sparkcdc's log partition
  (``source.read``: peek + pgoutput parsing + Arrow) on one core, wall and CPU time.

Nothing is asserted; the ratio to the baseline of the same run is the figure to compare.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._common import (
    Figure,
    ProcessSampler,
    add_common_arguments,
    print_figures,
    print_kv,
    print_process_report,
    profile,
    source_option_pairs,
    spark_session,
    stream_to_noop,
)
from sparkcdc.connectors.postgres.config import parse_config
from sparkcdc.connectors.postgres.source import PostgresCdcSource
from sparkcdc.embedded import EmbeddedPostgres
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.partitions import ChunkRead, LogRead

DATABASE = "bench"
SCHEMA = "bench"
TABLE = "orders"
SLOT = "bench_slot"
COLUMNS = "id, order_date, order_time, quantity, product_id, price, purchaser"

ORDERS_DDL = f"""
CREATE TABLE {SCHEMA}.{TABLE} (
    id BIGINT NOT NULL PRIMARY KEY,
    order_date DATE NOT NULL,
    order_time TIMESTAMP NOT NULL,
    quantity INT NOT NULL,
    product_id INT NOT NULL,
    price NUMERIC(10, 2) NOT NULL,
    purchaser VARCHAR(64) NOT NULL
)
"""


def orders_select(first: str, last: str) -> str:
    """Rows generated in the server from a series, like benchmarks._common.orders_select."""
    s = "g"
    return (
        f"SELECT {s}, DATE '2020-01-01' + ({s} % 1500)::int, "
        f"TIMESTAMP '2020-01-01' + ({s} * 7919 % 126230400) * INTERVAL '1 second', "
        f"1 + ({s} % 10)::int, 100 + ({s} % 5000)::int, "
        f"(({s} * 37 % 1000000) / 100.0)::numeric(10, 2), 'purchaser-' || ({s} * 13 % 100000) "
        f"FROM generate_series({first}::bigint, {last}::bigint) {s}"
    )


def start_server(shared_buffers: str) -> EmbeddedPostgres:
    server = EmbeddedPostgres(settings={"shared_buffers": shared_buffers})
    server.start()
    server.create_database(DATABASE)
    server.execute(f"CREATE SCHEMA {SCHEMA}", dbname=DATABASE)
    server.execute(ORDERS_DDL, dbname=DATABASE)
    server.execute(f"ALTER TABLE {SCHEMA}.{TABLE} REPLICA IDENTITY FULL", dbname=DATABASE)
    return server


def source_options(server: EmbeddedPostgres, extra: dict[str, str]) -> dict[str, str]:
    return {
        "hostname": server.host,
        "port": str(server.port),
        "username": server.user,
        "password": server.password,
        "database-name": DATABASE,
        "schema-name": SCHEMA,
        "table-name": TABLE,
        "slot.name": SLOT,
        **extra,
    }


def psql(server: EmbeddedPostgres, sql: str) -> float:
    """Seconds ``psql -c sql`` takes with its output discarded (fails loudly)."""
    env = {**os.environ, "PGPASSWORD": server.password}
    argv = [
        "psql",
        "-h",
        server.host,
        "-p",
        str(server.port),
        "-U",
        server.user,
        "-d",
        DATABASE,
        "-X",
        "-q",
        "-c",
        sql,
    ]
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"psql failed: {done.stderr.decode().strip()}")
    return elapsed


def read_specs(
    source: IncrementalSource[Any, Any], specs: Sequence[Any]
) -> tuple[int, float, float]:
    """Read partitions as an executor does (a pickled copy): rows, wall and CPU seconds."""
    executor = pickle.loads(pickle.dumps(source))
    started, cpu = time.perf_counter(), time.process_time()
    rows = 0
    for spec in specs:
        for batch in executor.read(spec):
            rows += batch.num_rows
    return rows, time.perf_counter() - started, time.process_time() - cpu


def log_changes(
    server: EmbeddedPostgres, rows: int, changes: int, statement: int
) -> tuple[float, int]:
    """80 % updates, 10 % inserts, 10 % deletes in ``statement``-row statements: seconds,
    and the changelog rows they give (an update is two)."""
    started = time.perf_counter()
    images = 0
    with server.connect(DATABASE) as conn:
        done, next_id, low = 0, rows + 1, 1
        while done < changes:
            n = min(statement, changes - done)
            kind = (done // statement) % 10
            if kind == 0:
                rows_sql = orders_select(str(next_id), str(next_id + n - 1))
                conn.execute(f"INSERT INTO {SCHEMA}.{TABLE} {rows_sql}")
                next_id += n
            elif kind == 1:
                conn.execute(
                    f"DELETE FROM {SCHEMA}.{TABLE} WHERE id >= %s AND id < %s", (low, low + n)
                )
                low += n
            else:
                conn.execute(
                    f"UPDATE {SCHEMA}.{TABLE} SET quantity = quantity + 1, purchaser = purchaser "
                    "|| 'u' WHERE id >= %s AND id < %s",
                    (low, low + n),
                )
            done += n
            images += 2 * n if kind > 1 else n
    return time.perf_counter() - started, images


def run(args: Any, server: EmbeddedPostgres, memory: ProcessSampler) -> None:
    extra = source_option_pairs(args.option)
    with memory.phase("load"):
        started = time.perf_counter()
        for first in range(1, args.rows + 1, 1_000_000):
            last = min(first + 999_999, args.rows)
            server.execute(
                f"INSERT INTO {SCHEMA}.{TABLE} {orders_select(str(first), str(last))}",
                dbname=DATABASE,
            )
        server.execute(f"VACUUM ANALYZE {SCHEMA}.{TABLE}", dbname=DATABASE)
        loaded = time.perf_counter() - started
        ((size,),) = server.execute(
            f"SELECT pg_table_size('{SCHEMA}.{TABLE}') / 1048576", dbname=DATABASE
        )
        server.execute(f"SELECT count(*) FROM {SCHEMA}.{TABLE}", dbname=DATABASE)  # warm
    print_kv(
        "Set-up",
        [
            (
                "table",
                f"{SCHEMA}.{TABLE}: {args.rows:,} rows, {size} MiB, loaded in {loaded:.1f} s",
            ),
            (
                "server",
                f"PostgreSQL on 127.0.0.1:{server.port}, shared_buffers {args.shared_buffers}",
            ),
        ],
    )

    source = PostgresCdcSource(parse_config(source_options(server, extra)))
    select = f"SELECT {COLUMNS} FROM {SCHEMA}.{TABLE}"
    figures: list[Figure] = []
    with memory.phase("snapshot: C client"):
        binary = Figure(
            "psql COPY (FORMAT binary) > /dev/null",
            args.rows,
            psql(server, f"COPY ({select}) TO STDOUT (FORMAT binary)"),
        )
        figures.append(binary)
        figures.append(
            Figure(
                "psql COPY (FORMAT csv) > /dev/null",
                args.rows,
                psql(server, f"COPY ({select}) TO STDOUT (FORMAT csv)"),
            )
        )
    with memory.phase("snapshot: source.read"):
        specs = [s for s in source.snapshot_partitions() if isinstance(s, ChunkRead)]
        rows, wall, cpu = read_specs(source, specs)
        figures.append(
            Figure(
                "sparkcdc source.read (+Arrow), 1 core, no Spark",
                rows,
                wall,
                note=f"{cpu / max(rows, 1) * 1e6:.2f} us CPU/row in Python",
            )
        )
    if args.profile:
        print(profile(lambda: read_specs(source, specs[:2]), cpu_time=True))
    spark = None
    if not args.no_spark:
        spark, _ = spark_session(args.cores)
        options = source_options(server, extra)
        for attempt in (1, 2):
            with memory.phase(f"snapshot: Spark batch #{attempt}"):
                started = time.perf_counter()
                spark.read.format("postgres-cdc").options(**options).load().write.format(
                    "noop"
                ).mode("overwrite").save()
                figures.append(
                    Figure(
                        f"Spark batch into noop, run {attempt}",
                        args.rows,
                        time.perf_counter() - started,
                    )
                )
        with memory.phase("snapshot: Spark stream"), tempfile.TemporaryDirectory() as tmp:
            outcome = stream_to_noop(spark, options, Path(tmp) / "ckpt", "postgres-cdc")
            figures.append(
                Figure(
                    "Spark availableNow stream into noop, incl. query start",
                    outcome.rows,
                    outcome.seconds,
                    note=f"{outcome.batches} batches",
                )
            )
    print_figures(f"Snapshot of {args.rows:,} rows (ratio: to psql COPY binary)", figures, binary)

    if args.changes:
        wal(args, server, source, extra, spark, memory)
    source.close()
    if spark is not None:
        spark.stop()


def wal(
    args: Any,
    server: EmbeddedPostgres,
    source: PostgresCdcSource,
    extra: dict[str, str],
    spark: Any,
    memory: ProcessSampler,
) -> None:
    latest = PostgresCdcSource(
        parse_config(source_options(server, {**extra, "scan.startup.mode": "latest-offset"}))
    )
    start = latest.initial_offset()
    with memory.phase("wal: generate"):
        generated, images = log_changes(server, args.rows, args.changes, args.statement_rows)
    with memory.phase("wal: plan"):
        started = time.perf_counter()
        end = latest.latest_offset(start, None)
        planned = time.perf_counter() - started
    specs = [s for s in latest.partitions(start, end) if isinstance(s, LogRead)]
    figures: list[Figure] = []
    with memory.phase("wal: server decode"):
        started = time.perf_counter()
        ((messages,),) = server.execute(
            "SELECT count(*) FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, "
            "'proto_version', '1', 'publication_names', %s)",
            (SLOT, SLOT),
            dbname=DATABASE,
        )
        baseline = Figure(
            "server decoding alone (count of pgoutput messages)",
            args.changes,
            time.perf_counter() - started,
            unit="changes",
            note=f"{messages:,} messages",
        )
    figures += [
        baseline,
        Figure("PostgreSQL generating the changes", args.changes, generated, unit="changes"),
        Figure("sparkcdc planning the batch (driver scan)", args.changes, planned, unit="changes"),
    ]
    with memory.phase("wal: source.read"):
        rows, wall, cpu = read_specs(latest, specs)
    changes = args.changes
    figures.append(
        Figure(
            "sparkcdc source.read (+Arrow), 1 core, no Spark",
            changes,
            wall,
            unit="changes",
            note=f"{rows:,} rows; {changes / cpu / 1000:.0f} k changes per CPU-second in Python",
        )
    )
    if rows != images:
        print(f"WARNING: the log partition gave {rows:,} rows; the changes give {images:,}")
    if args.profile:
        print(profile(lambda: read_specs(latest, specs), cpu_time=True))
    print_figures(
        f"WAL: {args.changes:,} row changes (ratio: to the server's own decoding)",
        figures,
        baseline,
    )
    latest.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows in orders")
    parser.add_argument("--changes", type=int, default=500_000, help="row changes (0: none)")
    parser.add_argument("--statement-rows", type=int, default=1000, help="rows per statement")
    parser.add_argument("--shared-buffers", default="1GB", help="the server's shared_buffers")
    add_common_arguments(parser)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with ProcessSampler() as memory:
        server = start_server(args.shared_buffers)
        try:
            run(args, server, memory)
        finally:
            server.stop()
        print_process_report(memory)
    print(f"\nTotal wall time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

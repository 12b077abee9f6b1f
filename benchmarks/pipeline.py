"""The main job's initial load: a sparkcdc pipeline into Delta (or a PostgreSQL table)
against what a Spark user does instead, on the same table in one run.

    .venv/bin/python -m benchmarks.pipeline [--rows N] [--max-rows-per-trigger N]
    .venv/bin/python -m benchmarks.pipeline --writers native,spark   # both Delta writers
    .venv/bin/python -m benchmarks.pipeline --sink postgres   # JDBC target
    .venv/bin/python -m benchmarks.pipeline --sink mariadb    # JDBC target

With ``--sink postgres`` all write into a private PostgreSQL: the baselines are Spark's
JDBC writer (``write.jdbc``, ``batchsize`` 10000) and the C clients piped into each other
(``mariadb --batch --quick`` | ``psql -c "COPY ... FROM STDIN"`` into a table with the
same primary key as the pipeline's), the pipeline with its JDBC sink. ``--sink mariadb``
does the same into a second private MariaDB: the C clients' baseline loads with
``mariadb -e "LOAD DATA LOCAL INFILE '/dev/stdin' ..."``.

Loads ``bench.orders`` (docs/stack-notes.md's table) into a private MariaDB, then, in one
SparkSession (``local[--cores]``):

* the baseline: ``spark.read.format("jdbc")`` (MariaDB's JDBC driver, ``--jdbc-partitions``
  range partitions on ``id``) written to a new Delta table;
* the pipeline: ``sparkcdc run --available-now`` (in process: ``prepare``, ``start``,
  ``wait``) of the same table into a new Delta table, default options but the read limit.

``--writers`` picks the Delta sink's writer of the pipeline: ``spark`` (the default,
Spark's Delta writer), ``native`` (delta-rs, docs/sinks-delta.md), or ``native,spark``:
one pipeline per writer in every round, after the baseline, each into its own target.

Both write the same rows; the figure is rows/s and the ratio to the baseline. Every path
runs ``--rounds`` times (default 2), each time into new targets, and the figures are the
last round's: in the first, whichever path runs first also warms the JVM (Delta's and
Parquet's writers compiled) for the others, which made the JDBC baseline look up to 3x
slower than when warm. Each round's seconds are printed too. The Delta
table's history tells how the pipeline wrote (appends of snapshot rows vs MERGEs).
"""

from __future__ import annotations

import argparse
import functools
import secrets
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._common import (
    DATABASE,
    ORDERS_COLUMNS,
    TABLE,
    Figure,
    ProcessSampler,
    populate_orders,
    print_figures,
    print_kv,
    print_process_report,
    source_block,
    spark_session,
    start_mariadb,
    warm_buffer_pool,
)
from sparkcdc.embedded import EmbeddedMariaDB


def baseline(spark: Any, db: EmbeddedMariaDB, rows: int, partitions: int, path: Path) -> float:
    """Seconds of ``spark.read.format("jdbc")`` -> ``write.format("delta")``."""
    started = time.perf_counter()
    jdbc_read(spark, db, rows, partitions).write.format("delta").save(str(path))
    return time.perf_counter() - started


def jdbc_read(spark: Any, db: EmbeddedMariaDB, rows: int, partitions: int) -> Any:
    """What a Spark user reads the table with: ``spark.read.format("jdbc")``."""
    options = db.source_options()
    return (
        spark.read.format("jdbc")
        # the jdbc:mysql scheme makes Spark quote with backticks (its MySQL dialect)
        .option("url", f"jdbc:mysql://{db.host}:{db.port}/{DATABASE}?permitMysqlScheme")
        .option("driver", "org.mariadb.jdbc.Driver")
        .option("user", options["username"])
        .option("password", options["password"])
        .option("dbtable", TABLE)
        .option("partitionColumn", "id")
        .option("lowerBound", "1")
        .option("upperBound", str(rows))
        .option("numPartitions", str(partitions))
        .option("fetchsize", "10000")
        .load()
    )


@dataclass(frozen=True)
class JdbcTarget:
    """Where a JDBC baseline and the pipeline's ``jdbc`` sink write: a JDBC URL and driver
    for Spark's writer, the sink's URL, and a login."""

    jdbc_url: str
    driver: str
    sink_url: str
    user: str
    password: str


def baseline_write_jdbc(
    spark: Any, db: EmbeddedMariaDB, rows: int, partitions: int, target: JdbcTarget
) -> float:
    """Seconds of ``spark.read.format("jdbc")`` -> ``write.jdbc`` into ``target``."""
    started = time.perf_counter()
    (
        jdbc_read(spark, db, rows, partitions)
        .write.format("jdbc")
        .option("url", target.jdbc_url)
        .option("driver", target.driver)
        .option("user", target.user)
        .option("password", target.password)
        .option("dbtable", "baseline_orders")
        .option("batchsize", "10000")
        .save()
    )
    return time.perf_counter() - started


def baseline_copy(db: EmbeddedMariaDB, pg: Any, database: str) -> float:
    """Seconds of the C clients' dump piped into ``COPY`` (the table has no NULLs, so
    ``mariadb --batch``'s escapes are PostgreSQL's text format)."""
    pg.execute(
        "CREATE TABLE copy_orders (id bigint PRIMARY KEY, order_date date, "
        "order_time timestamp, quantity integer, product_id integer, price numeric(10,2), "
        "purchaser text)",
        dbname=database,
    )
    load = [
        "psql", "-q", "-v", "ON_ERROR_STOP=1", f"--host={pg.host}", f"--port={pg.port}",
        f"--username={pg.user}", f"--dbname={database}", "-c", "COPY copy_orders FROM STDIN",
    ]  # fmt: skip
    return dump_into(db, load, {"PGPASSWORD": pg.password})


def baseline_load_data(db: EmbeddedMariaDB, target: EmbeddedMariaDB, database: str) -> float:
    """Seconds of the C client's dump piped into ``LOAD DATA LOCAL INFILE`` on ``target``
    (``mariadb --batch`` prints tab-separated text with backslash escapes, LOAD DATA's
    default format)."""
    target.execute(
        "CREATE TABLE copy_orders (id BIGINT PRIMARY KEY, order_date DATE, "
        "order_time DATETIME(6), quantity INT, product_id INT, price DECIMAL(10,2), "
        "purchaser LONGTEXT)",
        database=database,
    )
    load = [
        "mariadb", "--local-infile=1", f"--host={target.host}", f"--port={target.port}",
        f"--user={target.root.user}", f"--database={database}",
        "-e", "LOAD DATA LOCAL INFILE '/dev/stdin' INTO TABLE copy_orders",
    ]  # fmt: skip
    return dump_into(db, load, {"MYSQL_PWD": target.root.password})


def dump_into(db: EmbeddedMariaDB, load: list[str], load_env: dict[str, str]) -> float:
    """Seconds of ``mariadb --batch --quick`` dumping the table into the command ``load``
    (run with ``load_env`` added to the environment)."""
    import os
    import subprocess

    options = db.source_options()
    dump = [
        "mariadb", "--batch", "--quick", "--skip-column-names",
        f"--host={db.host}", f"--port={db.port}", f"--user={options['username']}",
        f"--database={DATABASE}", "-e", f"SELECT {ORDERS_COLUMNS} FROM {TABLE}",
    ]  # fmt: skip
    started = time.perf_counter()
    reader = subprocess.Popen(
        dump, stdout=subprocess.PIPE, env={**os.environ, "MYSQL_PWD": options["password"]}
    )
    subprocess.run(load, stdin=reader.stdout, env={**os.environ, **load_env}, check=True)
    assert reader.stdout is not None
    reader.stdout.close()
    if reader.wait() != 0:
        raise RuntimeError(f"mariadb exited with {reader.returncode}")
    return time.perf_counter() - started


def pipeline(
    spark: Any,
    db: EmbeddedMariaDB,
    folder: Path,
    max_rows: int | None,
    sink: str = "",
    writer: str = "spark",
) -> float:
    """Seconds of the pipeline's ``--available-now`` run (after ``prepare``) into Delta
    with ``writer``, or into the sink block ``sink``."""
    from sparkcdc.pipeline.definition import load_pipeline
    from sparkcdc.pipeline.runner import prepare

    limit = f"  max-rows-per-trigger: {max_rows}\n" if max_rows else ""
    sink = sink or f"  type: delta\n  path: lake\n  writer: {writer}"
    text = f"""\
{source_block(db, f"{DATABASE}.{TABLE}")}sink:
{sink}
pipeline:
  name: bench-pipeline
  checkpoint: checkpoint
  trigger-interval: available-now
{limit}"""
    path = folder / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    run = prepare(load_pipeline(path), spark=spark)
    started = time.perf_counter()
    run.start()
    run.wait()
    return time.perf_counter() - started


def history(spark: Any, path: Path) -> str:
    """The Delta table's operations, counted (``WRITE x3, MERGE x2``)."""
    operations = [
        r[0] for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("operation").collect()
    ]
    counts: dict[str, int] = {}
    for operation in operations:
        counts[operation] = counts.get(operation, 0) + 1
    return ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()))


@dataclass(frozen=True)
class Round:
    """Seconds of one round's paths, each writing a new target: the JDBC read's write, the
    C clients' (JDBC targets only), the pipeline's per Delta writer (one entry, ``""``,
    for a JDBC sink); and what each pipeline's target holds."""

    jdbc: float
    clients: float | None
    ours: dict[str, float]
    written: dict[str, int]
    how: dict[str, str] = field(default_factory=dict)


def named(writer: str) -> str:
    """`` (writer: native)`` for a Delta writer's figure, nothing for a JDBC sink's."""
    return f" (writer: {writer})" if writer else ""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--jdbc-partitions", type=int, default=4)
    parser.add_argument(
        "--max-rows-per-trigger", type=int, default=None, help="the pipeline's read limit"
    )
    parser.add_argument("--sink", choices=("delta", "postgres", "mariadb"), default="delta")
    parser.add_argument("--buffer-pool", default="2G")
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="rounds of every path in the same session, each into new targets; the figures "
        "are the last round's (the first warms the JVM for whichever path runs first)",
    )
    parser.add_argument(
        "--writers",
        default="spark",
        help="Delta writers to run the pipeline with, in this order in every round: spark "
        "(Spark's Delta writer, the default), native (delta-rs), or both (native,spark)",
    )
    args = parser.parse_args(argv)
    args.writers = args.writers.split(",")
    if not args.writers or set(args.writers) - {"spark", "native"}:
        parser.error(f"--writers: spark, native or both, not {','.join(args.writers)!r}")
    if args.sink != "delta" and args.writers != ["spark"]:
        parser.error("--writers is the Delta sink's: leave it out with --sink " + args.sink)
    started = time.perf_counter()
    with ProcessSampler() as memory:
        db = start_mariadb(args.buffer_pool)
        try:
            with memory.phase("load"):
                populate_orders(db, args.rows)
                count, size = warm_buffer_pool(db)
            spark, session = spark_session(args.cores)
            setup = [
                ("table", f"{DATABASE}.{TABLE}: {count:,} rows, {size:.0f} MiB"),
                ("spark", f"local[{args.cores}], session start {session:.1f} s"),
            ]
            into = {"postgres": _into_postgres, "mariadb": _into_mariadb}.get(
                args.sink, _into_delta
            )
            with tempfile.TemporaryDirectory() as tmp:
                rounds = into(spark, db, Path(tmp), args, memory)
            _print_rounds(args, setup, rounds)
            spark.stop()
        finally:
            db.stop()
        print_process_report(memory)
    print(f"\nTotal wall time {time.perf_counter() - started:.0f} s")


def _print_rounds(
    args: argparse.Namespace, setup: list[tuple[str, str]], rounds: list[Round]
) -> None:
    """Every round's seconds and ratio, then the last round's figures."""
    last = rounds[-1]
    target = {"postgres": "PostgreSQL", "mariadb": "MariaDB"}.get(args.sink, "Delta")
    for writer, written in last.written.items():
        setup.append(
            (
                f"pipeline's {target} table{named(writer)}",
                f"{written:,} rows{last.how.get(writer, '')}",
            )
        )
    for i, r in enumerate(rounds, 1):
        clients = "" if r.clients is None else f", C clients {r.clients:.2f} s"
        ours = ", ".join(
            f"pipeline{named(w)} {s:.2f} s: {r.jdbc / s:.2f} of the JDBC read's rate"
            for w, s in r.ours.items()
        )
        setup.append((f"round {i}", f"JDBC read {r.jdbc:.2f} s{clients}, {ours}"))
    print_kv("Set-up", setup)
    for r in rounds:
        for writer, written in r.written.items():
            if written != args.rows:
                print(
                    f"WARNING: the pipeline{named(writer)} wrote {written:,} rows, "
                    f"not {args.rows:,}"
                )
    writer = "delta" if args.sink == "delta" else "write.jdbc"
    base = Figure(
        f"spark.read.format('jdbc') ({args.jdbc_partitions} partitions) -> {writer}",
        args.rows,
        last.jdbc,
    )
    client_names = {
        "postgres": "mariadb --batch | psql COPY",
        "mariadb": "mariadb --batch | mariadb LOAD DATA LOCAL",
    }
    baselines = []
    if last.clients is not None:
        baselines.append(Figure(client_names[args.sink], args.rows, last.clients))
    print_figures(
        f"Initial load of {args.rows:,} rows into {target}, round {len(rounds)} of "
        f"{len(rounds)} (ratio: to the JDBC read)",
        [
            base,
            *baselines,
            *(
                Figure(f"sparkcdc pipeline --available-now -> {args.sink}{named(w)}", args.rows, s)
                for w, s in last.ours.items()
            ),
        ],
        base,
    )


def _into_delta(
    spark: Any, db: EmbeddedMariaDB, folder: Path, args: argparse.Namespace, memory: Any
) -> list[Round]:
    rounds = []
    for i in range(1, args.rounds + 1):
        into = folder / f"round{i}"
        into.mkdir()
        with memory.phase(f"round {i}: baseline: jdbc -> delta"):
            jdbc = baseline(spark, db, args.rows, args.jdbc_partitions, into / "jdbc")
        ours, written, how = {}, {}, {}
        for writer in args.writers:
            place = into / writer
            place.mkdir()
            with memory.phase(f"round {i}: sparkcdc pipeline -> delta, writer {writer}"):
                ours[writer] = pipeline(spark, db, place, args.max_rows_per_trigger, writer=writer)
            lake = place / "lake" / DATABASE / TABLE
            written[writer] = spark.read.format("delta").load(str(lake)).count()
            how[writer] = f"; {history(spark, lake)}"
        rounds.append(Round(jdbc, None, ours, written, how))
    return rounds


def _into_jdbc(
    spark: Any,
    db: EmbeddedMariaDB,
    folder: Path,
    args: argparse.Namespace,
    memory: Any,
    target: JdbcTarget,
    clients: tuple[str, Callable[[], float]],
    round: int,
) -> tuple[float, float, float]:
    """Seconds of ``write.jdbc``, of the C clients (``clients``: name, run) and of the
    pipeline, into ``target``."""
    with memory.phase(f"round {round}: baseline: jdbc -> write.jdbc"):
        jdbc = baseline_write_jdbc(spark, db, args.rows, args.jdbc_partitions, target)
    with memory.phase(f"round {round}: baseline: {clients[0]}"):
        copy = clients[1]()
    sink = (
        f"  type: jdbc\n  url: {target.sink_url}\n"
        f'  username: {target.user}\n  password: "{target.password}"'
    )
    into = folder / f"round{round}"
    into.mkdir()
    with memory.phase(f"round {round}: sparkcdc pipeline -> {args.sink}"):
        ours = pipeline(spark, db, into, args.max_rows_per_trigger, sink)
    return jdbc, copy, ours


def _into_postgres(
    spark: Any, db: EmbeddedMariaDB, folder: Path, args: argparse.Namespace, memory: Any
) -> list[Round]:
    from sparkcdc.embedded import EmbeddedPostgres

    pg = EmbeddedPostgres().start()
    try:
        rounds = []
        for i in range(1, args.rounds + 1):
            database = pg.create_database(f"bench_target{i}")
            target = JdbcTarget(
                f"jdbc:postgresql://{pg.host}:{pg.port}/{database}",
                "org.postgresql.Driver",
                f"postgresql://{pg.host}:{pg.port}/{database}",
                pg.user,
                pg.password,
            )
            clients = ("mariadb | psql COPY", functools.partial(baseline_copy, db, pg, database))
            jdbc, copy, ours = _into_jdbc(spark, db, folder, args, memory, target, clients, i)
            ((written,),) = pg.execute(f"SELECT count(*) FROM {TABLE}", dbname=database)
            rounds.append(Round(jdbc, copy, {"": ours}, {"": int(written)}))
        return rounds
    finally:
        pg.stop()


def _into_mariadb(
    spark: Any, db: EmbeddedMariaDB, folder: Path, args: argparse.Namespace, memory: Any
) -> list[Round]:
    target = start_mariadb(args.buffer_pool)  # its own server, as a PostgreSQL target is
    try:
        user, password = "bench_sink", "Bench-" + secrets.token_hex(8)
        target.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (user, password))
        target.execute(f"GRANT ALL ON *.* TO '{user}'@'%'")
        rounds = []
        for i in range(1, args.rounds + 1):
            database = target.create_database(f"bench_target{i}")
            jdbc_target = JdbcTarget(
                # the jdbc:mysql scheme makes Spark quote with backticks (its MySQL dialect)
                f"jdbc:mysql://{target.host}:{target.port}/{database}?permitMysqlScheme",
                "org.mariadb.jdbc.Driver",
                f"mariadb://{target.host}:{target.port}/{database}",
                user,
                password,
            )
            clients = (
                "mariadb | mariadb LOAD DATA",
                functools.partial(baseline_load_data, db, target, database),
            )
            jdbc, copy, ours = _into_jdbc(spark, db, folder, args, memory, jdbc_target, clients, i)
            ((written,),) = target.execute(f"SELECT count(*) FROM {TABLE}", database=database)
            rounds.append(Round(jdbc, copy, {"": ours}, {"": int(written)}))
        return rounds
    finally:
        target.stop()


if __name__ == "__main__":
    main()

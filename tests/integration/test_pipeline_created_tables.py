"""Tables created while a pattern pipeline runs (issue 64): with
``scan.newly-added-table.enabled`` and a ``tables`` pattern that matched ONE table at the
start, a table created under random writes gets a target equal to its source, without a
restart of the query, on MariaDB and on PostgreSQL (whose WAL shows no CREATE TABLE: the
catalog is asked, and the publication grows)."""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import PipelineRun, prepare
from sparkcdc.verify.run import verify_tables
from tests.support.pipelines import (
    at_or_after,
    committed_offsets,
    master_position,
    pipeline_file,
    snapshot_done,
    wait_until,
)

ENABLED = "scan.newly-added-table.enabled: true"


def random_writes(execute: Callable[[str, tuple[Any, ...]], object], tables: list[str]) -> None:
    """Inserts, updates and deletes at random keys of ``tables`` (id INT key, note text)."""
    rng = random.Random(64)
    for step in range(240):
        table = rng.choice(tables)
        key = rng.randrange(60)
        kind = rng.random()
        note = f"n{step}-" + "x" * rng.randrange(40)
        if kind < 0.5:
            execute(f"DELETE FROM {table} WHERE id = %s", (key,))
            execute(f"INSERT INTO {table} (id, note) VALUES (%s, %s)", (key, note))
        elif kind < 0.8:
            execute(f"UPDATE {table} SET note = %s WHERE id = %s", (note, key))
        else:
            execute(f"DELETE FROM {table} WHERE id = %s", (key,))


def delta(spark: Any, scratch: Path, namespace: str, table: str) -> dict[Any, tuple[Any, ...]]:
    rows = spark.read.format("delta").load(str(scratch / "lake" / namespace / table)).collect()
    return {r[0]: tuple(r) for r in rows}


def caught_up(run: PipelineRun, reached: Callable[[dict[str, Any]], bool], new: str) -> bool:
    """A committed offset past ``reached`` with ``new`` captured and every snapshot done."""
    if not run.active:
        raise AssertionError(f"the pipeline stopped: {run.query.exception()}")
    return any(
        reached(o) and new in o["tables"] and snapshot_done(o)
        for o in committed_offsets(run.definition.settings.checkpoint)
    )


def check_equal(run: PipelineRun, spark: Any, *tables: str) -> None:
    """``sparkcdc verify``'s verdicts: every table's target equals its source."""
    verdicts = verify_tables(spark, run.definition, run.sink, run.targets, run.probe.handle)
    assert {v.table.table: v.status for v in verdicts} == dict.fromkeys(tables, "equal")


def test_mariadb_one_table_pattern_captures_a_created_table(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE nt_first (id INT PRIMARY KEY, note TEXT)")
    execute("INSERT INTO nt_first VALUES " + ", ".join(f"({i}, 'first{i}')" for i in range(40)))
    path = pipeline_file(
        scratch, mariadb, f"{mysql_db}.nt_.*", "type: delta\npath: lake", extra_source=ENABLED
    )
    run = prepare(load_pipeline(path), spark=spark)
    assert run.envelope, "a pattern watched for created tables is read in the envelope"
    run.start()
    try:
        checkpoint = run.definition.settings.checkpoint
        wait_until(lambda: any(snapshot_done(o) for o in committed_offsets(checkpoint)), "snapshot")
        query = run.query
        execute("CREATE TABLE nt_new (id INT PRIMARY KEY, note TEXT)")
        execute("CREATE TABLE other_new (id INT PRIMARY KEY)")  # outside the pattern
        random_writes(lambda sql, args: execute(sql, args), ["nt_first", "nt_new"])
        file, pos = master_position(mariadb)
        new = f"{mysql_db}.nt_new"
        wait_until(lambda: caught_up(run, lambda o: at_or_after(o, file, pos), new), "catch-up")
        assert run.query is query, "the pipeline restarted its query"
    finally:
        run.stop()
    for table in ("nt_first", "nt_new"):
        source = {r[0]: tuple(r) for r in execute(f"SELECT * FROM {table}")}
        assert delta(spark, scratch, mysql_db, table) == source, table
    assert not (scratch / "lake" / mysql_db / "other_new").exists()
    check_equal(run, spark, "nt_first", "nt_new")


def postgres_pipeline(folder: Path, postgres: EmbeddedPostgres, database: str) -> Path:
    text = f"""\
source:
  type: postgres
  hostname: {postgres.host}
  port: {postgres.port}
  username: {postgres.user}
  password: "{postgres.password}"
  database-name: {database}
  tables: app.nt_.*
  slot.name: created_{database[-20:]}
  heartbeat.interval: 1s
  {ENABLED}
sink:
  type: delta
  path: lake
pipeline:
  name: pg-created
  checkpoint: checkpoint
  trigger-interval: 300ms
  max-rows-per-trigger: 500
"""
    path = folder / "pipeline.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_postgres_one_table_pattern_captures_a_created_table(
    spark: Any, postgres: EmbeddedPostgres, pg_db: str, scratch: Path
) -> None:
    with postgres.connect(pg_db) as conn:
        conn.execute("CREATE SCHEMA app")
        conn.execute("CREATE TABLE app.nt_first (id INT PRIMARY KEY, note TEXT)")
        conn.execute("ALTER TABLE app.nt_first REPLICA IDENTITY FULL")
        conn.execute(
            "INSERT INTO app.nt_first SELECT g, 'first' || g FROM generate_series(0, 39) g"
        )
    path = postgres_pipeline(scratch, postgres, pg_db)
    run = prepare(load_pipeline(path), spark=spark)
    assert run.envelope, "a pattern watched for created tables is read in the envelope"
    run.start()
    try:
        checkpoint = run.definition.settings.checkpoint
        wait_until(lambda: any(snapshot_done(o) for o in committed_offsets(checkpoint)), "snapshot")
        query = run.query
        with postgres.connect(pg_db) as conn:
            # created with REPLICA IDENTITY DEFAULT and written to before it is FULL: it waits
            # (warned), and its snapshot, once it is captured, reads those rows
            conn.execute("CREATE TABLE app.nt_new (id INT PRIMARY KEY, note TEXT)")
            conn.execute("INSERT INTO app.nt_new VALUES (1000, 'before full')")
            conn.execute("CREATE TABLE app.other_new (id INT PRIMARY KEY)")  # not matched
            conn.execute("ALTER TABLE app.nt_new REPLICA IDENTITY FULL")
            # renamed into the pattern: a table of another OID under a matching name
            conn.execute("CREATE TABLE app.staging (id INT PRIMARY KEY, note TEXT)")
            conn.execute("ALTER TABLE app.staging REPLICA IDENTITY FULL")
            conn.execute("INSERT INTO app.staging VALUES (1, 'staged'), (2, 'staged')")
            conn.execute("ALTER TABLE app.staging RENAME TO nt_renamed")
            conn.execute("UPDATE app.nt_renamed SET note = 'renamed' WHERE id = 2")
            random_writes(
                lambda sql, args: conn.execute(sql.replace(" nt_", " app.nt_"), args),
                ["nt_first", "nt_new"],
            )
            ((lsn,),) = conn.execute("SELECT pg_current_wal_flush_lsn()::text").fetchall()
        end = lsn_from_text(str(lsn))

        def reached(offset: dict[str, Any]) -> bool:
            return lsn_from_text(offset["log"]["lsn"]) >= end

        wait_until(lambda: caught_up(run, reached, "app.nt_new"), "catch-up")
        assert run.query is query, "the pipeline restarted its query"
        # the stream's publication (owned: made by the stream) has grown
        published = postgres.execute(
            "SELECT tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1",
            (f"created_{pg_db[-20:]}",),
            dbname=pg_db,
        )
        assert [r[0] for r in published] == ["nt_first", "nt_new", "nt_renamed"]
    finally:
        run.stop()
    for table in ("nt_first", "nt_new", "nt_renamed"):
        source = {
            r[0]: tuple(r) for r in postgres.execute(f"SELECT * FROM app.{table}", dbname=pg_db)
        }
        assert delta(spark, scratch, "app", table) == source, table
    assert not (scratch / "lake" / "app" / "other_new").exists()
    check_equal(run, spark, "nt_first", "nt_new", "nt_renamed")

"""Identifiers with backticks, quotes, spaces, SQL punctuation and non-ASCII letters in
database, table and column names, through the snapshot, the binlog and every sink: quoted
everywhere (never injected), and where a target system cannot take a name, refused up
front with the way out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.core.errors import OptionError, SparkCdcError
from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import PipelineRun, prepare
from sparkcdc.spark.kafka.source import decode_changelog_json, read_kafka
from sparkcdc.verify.run import verify_tables
from tests.support.pipelines import (
    committed_offsets,
    mariadb_sink_block,
    pipeline_file,
    postgres_sink_block,
    run_until_caught_up,
    snapshot_done,
    wait_until,
)

DATABASE = "sp ace`bt'q\"ü"
TABLE = "ord`ers 'x\" ñ"
#: Delta stores the middle two only with column mapping (set by the sink).
COLUMNS = ("i`d", "na me", "a,b;c=(d)", "qté %s%%")


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def yaml_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@pytest.fixture
def odd(mariadb: EmbeddedMariaDB) -> Any:
    mariadb.execute(f"DROP DATABASE IF EXISTS {q(DATABASE)}")
    mariadb.execute(f"CREATE DATABASE {q(DATABASE)}")
    i, n, abc, qt = (q(c) for c in COLUMNS)
    mariadb.execute(
        f"CREATE TABLE {q(TABLE)} ({i} BIGINT PRIMARY KEY, {n} VARCHAR(20), {abc} TEXT, {qt} INT)",
        database=DATABASE,
    )
    mariadb.execute(
        f"INSERT INTO {q(TABLE)} VALUES (1, 'o''ne', 'x', 1), (2, 'two`', NULL, 2)",
        database=DATABASE,
    )
    yield DATABASE
    mariadb.execute(f"DROP DATABASE IF EXISTS {q(DATABASE)}")


def source_rows(mariadb: EmbeddedMariaDB) -> dict[Any, tuple[Any, ...]]:
    found = mariadb.execute(f"SELECT * FROM {q(TABLE)}", database=DATABASE)
    return {r[0]: tuple(r) for r in found}


def change(mariadb: EmbeddedMariaDB) -> None:
    i, n, abc, _ = (q(c) for c in COLUMNS)
    for sql in (
        f"UPDATE {q(TABLE)} SET {n} = 'u`p''d', {abc} = 'y' WHERE {i} = 1",
        f"INSERT INTO {q(TABLE)} VALUES (3, 'th\"ree', ';', 3)",
        f"DELETE FROM {q(TABLE)} WHERE {i} = 2",
    ):
        mariadb.execute(sql, database=DATABASE)


def pipeline(spark: Any, mariadb: EmbeddedMariaDB, scratch: Path, sink: str) -> PipelineRun:
    extra = f"database-name: {yaml_text(DATABASE)}\ntable-name: {yaml_text(TABLE)}"
    path = pipeline_file(scratch, mariadb, "''", sink, extra_source=extra)
    text = path.read_text().replace("  tables: ''\n", "")  # and a pipeline name with quotes:
    path.write_text(text.replace("name: test-pipeline", 'name: it\'s \\ "odd"'))
    return prepare(load_pipeline(path), spark=spark)


@pytest.mark.parametrize("sink", ["delta", "jdbc-postgres", "jdbc-mariadb"])
def test_odd_names_into_delta_and_jdbc_targets(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    odd: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target_db = "odd target ` ' \" ü"  # a MariaDB target's database, as odd
    if sink == "delta":
        block = "type: delta\npath: lake\nchange-data-feed: false"
    elif sink == "jdbc-mariadb":
        mariadb.execute(f"DROP DATABASE IF EXISTS {q(target_db)}")
        mariadb.execute(f"CREATE DATABASE {q(target_db)}")
        block = mariadb_sink_block(mariadb, target_db, monkeypatch)
    else:
        block = postgres_sink_block(postgres, pg_db, monkeypatch)
    run = pipeline(spark, mariadb, scratch, block)
    run_until_caught_up(run, mariadb, lambda: change(mariadb))
    if sink == "delta":  # backticks cannot be in Delta's path identifiers: folder names say _
        folder = scratch / "lake" / DATABASE.replace("`", "_") / TABLE.replace("`", "_")
        found = spark.read.format("delta").load(str(folder)).collect()
        assert tuple(spark.read.format("delta").load(str(folder)).columns) == COLUMNS
    elif sink == "jdbc-mariadb":
        found = mariadb.execute(f"SELECT * FROM {q(TABLE)}", database=target_db)
    else:
        schema, table = (f'"{n}"' for n in (DATABASE.replace('"', '""'), TABLE.replace('"', '""')))
        with postgres.connect(pg_db) as conn:
            found = conn.execute(f"SELECT * FROM {schema}.{table}").fetchall()
    assert {r[0]: tuple(r) for r in found} == source_rows(mariadb)
    verdicts = verify_tables(spark, run.definition, run.sink, run.targets, run.probe.handle)
    assert [v.status for v in verdicts] == ["equal"]
    if sink == "jdbc-mariadb":
        mariadb.execute(f"DROP DATABASE {q(target_db)}")


def test_odd_names_into_kafka_and_what_targets_cannot_take(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    odd: str,
    kafka: EmbeddedKafka,
    topic: str,
    scratch: Path,
) -> None:
    servers = kafka.bootstrap_servers
    block = f"type: kafka\nproperties.bootstrap.servers: {servers}\nvalue.format: changelog-json"
    with pytest.raises(OptionError, match="which Kafka does not allow"):
        pipeline(spark, mariadb, scratch, block)  # topic-pattern {database}.{table}
    with pytest.raises(SparkCdcError, match="change-data-feed: false"):
        pipeline(spark, mariadb, scratch, "type: delta\npath: lake")  # CDF on by default

    run = pipeline(spark, mariadb, scratch, f"{block}\ntopic: {topic}")
    run_until_caught_up(run, mariadb, lambda: change(mariadb))
    schema = run.targets[0].table.schema
    raw = read_kafka(spark, servers, topic, streaming=False)
    state: dict[Any, tuple[Any, ...]] = {}
    sets = ("insert", "update_postimage")
    records = decode_changelog_json(raw, schema).collect()
    # replayed as sinks do: by version, a pre-image or delete before the image that sets
    for r in sorted(records, key=lambda r: (r["_commit_version"], r["_change_type"] in sets)):
        values = tuple(r[c] for c in COLUMNS)
        if r["_change_type"] in sets:
            state[values[0]] = values
        else:
            state.pop(values[0])
    assert state == source_rows(mariadb)


def pg_quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def test_odd_names_from_postgres(
    spark: Any, postgres: EmbeddedPostgres, pg_db: str, scratch: Path
) -> None:
    """The PostgreSQL source (publication, slot, COPY snapshot, pgoutput) with the same
    names in the schema, table and columns, into Delta."""
    name = f"{pg_quoted(DATABASE)}.{pg_quoted(TABLE)}"
    i, n, abc, qt = (pg_quoted(c) for c in COLUMNS)
    with postgres.connect(pg_db) as conn:
        conn.execute(f"CREATE SCHEMA {pg_quoted(DATABASE)}")
        conn.execute(
            f"CREATE TABLE {name} ({i} BIGINT PRIMARY KEY, {n} TEXT, {abc} TEXT, {qt} INT)"
        )
        conn.execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
        conn.execute(f"INSERT INTO {name} VALUES (1, 'o''ne', 'x', 1), (2, 'two`', NULL, 2)")
    path = scratch / "pipeline.yaml"
    path.write_text(
        f"""\
source:
  type: postgres
  hostname: {postgres.host}
  port: {postgres.port}
  username: {postgres.user}
  password: "{postgres.password}"
  database-name: {pg_db}
  schema-name: {yaml_text(DATABASE)}
  table-name: {yaml_text(TABLE)}
  slot.name: odd_{pg_db[-6:]}
sink:
  type: delta
  path: lake
  change-data-feed: false
pipeline:
  checkpoint: checkpoint
  trigger-interval: 300ms
""",
        encoding="utf-8",
    )
    run = prepare(load_pipeline(path), spark=spark)
    checkpoint = run.definition.settings.checkpoint
    run.start()
    try:
        wait_until(lambda: any(snapshot_done(o) for o in committed_offsets(checkpoint)), "snapshot")
        with postgres.connect(pg_db) as conn:
            conn.execute(f"UPDATE {name} SET {n} = 'u`p''d', {abc} = 'y' WHERE {i} = 1")
            conn.execute(f"INSERT INTO {name} VALUES (3, 'th\"ree', ';', 3)")
            conn.execute(f"DELETE FROM {name} WHERE {i} = 2")
        ((end,),) = postgres.execute("SELECT pg_current_wal_flush_lsn()::text", dbname=pg_db)
        wait_until(
            lambda: any(
                lsn_from_text(o["log"]["lsn"]) >= lsn_from_text(str(end))
                for o in committed_offsets(checkpoint)
            ),
            "the pipeline to catch up",
        )
    finally:
        run.stop()
    folder = scratch / "lake" / DATABASE.replace("`", "_") / TABLE.replace("`", "_")
    found = {r[0]: tuple(r) for r in spark.read.format("delta").load(str(folder)).collect()}
    expected = {r[0]: tuple(r) for r in postgres.execute(f"SELECT * FROM {name}", dbname=pg_db)}
    assert found == expected and sorted(found) == [1, 3]
    verdicts = verify_tables(spark, run.definition, run.sink, run.targets, run.probe.handle)
    assert [v.status for v in verdicts] == ["equal"]

"""PostgreSQL pipelines end to end: into Delta and into MariaDB (JDBC), with concurrent
writes during the snapshot, then ``sparkcdc verify`` at the targets' own positions."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.cli.main import main
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from sparkcdc.pipeline.status import pipeline_status
from tests.support.pipelines import (
    committed_offsets,
    mariadb_sink_block,
    snapshot_done,
    wait_until,
)
from tests.support.postgres_writes import POSTGRES_WRITES
from tests.support.random_writer import RandomWriter

SCHEMA = "shop"


def source_database(postgres: EmbeddedPostgres, database: str) -> None:
    """``shop.orders`` (2000 rows) and ``shop.prices`` (types a pipeline carries)."""
    with postgres.connect(database) as conn:
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(
            f"CREATE TABLE {SCHEMA}.orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)"
        )
        conn.execute(f"CREATE TABLE {SCHEMA}.audit (id SERIAL PRIMARY KEY, note TEXT)")
        conn.execute(
            f"CREATE TABLE {SCHEMA}.prices (sku TEXT PRIMARY KEY, price NUMERIC(12,3), "
            "at TIMESTAMPTZ, day DATE, note TEXT)"
        )
        for table in ("orders", "audit", "prices"):
            conn.execute(f"ALTER TABLE {SCHEMA}.{table} REPLICA IDENTITY FULL")
        conn.execute(
            f"INSERT INTO {SCHEMA}.orders SELECT g * 3, 'name' || g, g % 50 "
            "FROM generate_series(0, 1999) g"
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.prices VALUES ('a', 1.5, '2024-01-02 03:04:05.678901+00', "
            "'2024-02-29', repeat('x', 5000)), ('B', NULL, NULL, NULL, 'short')"
        )


def pipeline(
    folder: Path,
    postgres: EmbeddedPostgres,
    database: str,
    slot: str,
    sink: str,
    behavior: str = "lenient",
    tables: str = "orders|prices",
) -> Path:
    text = f"""\
source:
  type: postgres
  hostname: {postgres.host}
  port: {postgres.port}
  username: {postgres.user}
  password: "{postgres.password}"
  database-name: {database}
  tables: {SCHEMA}.({tables})
  slot.name: {slot}
  scan.incremental.snapshot.chunk.size: 97
  scan.incremental.snapshot.rows-per-partition: 300
sink:
{textwrap.indent(sink.strip(), "  ")}
pipeline:
  name: pg-pipeline
  checkpoint: checkpoint
  trigger-interval: 300ms
  max-rows-per-trigger: 500
  schema.change.behavior: {behavior}
"""
    path = folder / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def flush_lsn(postgres: EmbeddedPostgres, database: str) -> int:
    ((lsn,),) = postgres.execute("SELECT pg_current_wal_flush_lsn()::text", dbname=database)
    return lsn_from_text(str(lsn))


def run_with_writes(
    postgres: EmbeddedPostgres,
    database: str,
    folder: Path,
    sink: str,
    behavior: str = "lenient",
    then: Sequence[str] = (),
    tables: str = "orders|prices",
    until: Callable[[list[dict[str, Any]]], bool] = lambda offsets: True,
) -> Any:
    """Run the pipeline while random writes go on; stop the writes once the snapshot is
    committed, make a few more changes (and ``then``), and wait until the pipeline has
    passed them and its committed offsets satisfy ``until``."""
    definition = load_pipeline(
        pipeline(folder, postgres, database, slot_of(database), sink, behavior, tables)
    )
    run = prepare(definition)
    checkpoint = definition.settings.checkpoint
    writer = RandomWriter(
        lambda: postgres.connect(database, options=f"-c search_path={SCHEMA}"),
        POSTGRES_WRITES,
        seed=29,
        key_space=7000,
    )
    writer.limit = 1500  # spread over the snapshot; a longer backlog only adds catch-up time
    writer.start()
    run.start()
    try:
        wait_until(
            lambda: any(snapshot_done(o) for o in committed_offsets(checkpoint)), "the snapshot"
        )
        writer.stop()
        assert writer.transactions > 20
        with postgres.connect(database) as conn:
            conn.execute(f"UPDATE {SCHEMA}.prices SET price = 2.25 WHERE sku = 'a'")
            conn.execute(f"UPDATE {SCHEMA}.prices SET sku = 'b' WHERE sku = 'B'")
            conn.execute(f"UPDATE {SCHEMA}.prices SET day = '2025-01-01' WHERE sku = 'a'")
            for statement in then:
                conn.execute(statement)
        end = flush_lsn(postgres, database)
        wait_until(
            lambda: (
                any(lsn_from_text(o["log"]["lsn"]) >= end for o in committed_offsets(checkpoint))
                and until(committed_offsets(checkpoint))
            ),
            "the pipeline to catch up",
        )
    finally:
        run.stop()
        writer.stop()
    return definition


def audit_dropped(offset: dict[str, Any]) -> bool:
    entry = offset["tables"].get(f"{SCHEMA}.audit", {})
    return "table_dropped" in (entry.get("schema") or {})


def slot_of(database: str) -> str:
    return f"pipe_{database[-6:]}"


def drop_slot(postgres: EmbeddedPostgres, database: str) -> None:
    postgres.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
        (slot_of(database),),
        dbname=database,
    )


def source_rows(postgres: EmbeddedPostgres, database: str, sql: str) -> dict[Any, tuple[Any, ...]]:
    return {r[0]: tuple(r) for r in postgres.execute(sql, dbname=database)}


def test_postgres_to_delta_with_concurrent_writes_then_verify(
    spark: Any, postgres: EmbeddedPostgres, pg_db: str, scratch: Path
) -> None:
    source_database(postgres, pg_db)
    orders_table = f"{SCHEMA}.orders"
    try:
        # evolve: column changes, each seen in the WAL only at the table's next row change
        # (a rename is told from a drop and an add by the column's number)
        definition = run_with_writes(
            postgres,
            pg_db,
            scratch,
            "type: delta\npath: lake",
            "evolve",
            [
                f"ALTER TABLE {orders_table} ADD COLUMN note TEXT",
                f"UPDATE {orders_table} SET note = 'n' || id WHERE id < 60",
                f"ALTER TABLE {orders_table} RENAME COLUMN name TO label",
                f"UPDATE {orders_table} SET qty = qty + 1 WHERE id % 7 = 0",
                f"ALTER TABLE {orders_table} ALTER COLUMN qty TYPE BIGINT",
                f"INSERT INTO {orders_table} (id, label, qty, note) "
                "VALUES (100000, 'big', 5000000000, 'x')",
                f"ALTER TABLE {orders_table} DROP COLUMN note",
                f"DELETE FROM {orders_table} WHERE id = 3",
            ],
        )
        lake = scratch / "lake" / SCHEMA
        frame = spark.read.format("delta").load(str(lake / "orders"))
        assert frame.columns == ["id", "label", "qty"]
        assert {r[0]: tuple(r) for r in frame.collect()} == source_rows(
            postgres, pg_db, f"SELECT id, label, qty FROM {orders_table}"
        )
        prices = {
            r["sku"]: r for r in spark.read.format("delta").load(str(lake / "prices")).collect()
        }
        assert sorted(prices) == ["a", "b"]
        assert prices["a"]["price"] == Decimal("2.250") and len(prices["a"]["note"]) == 5000
        # prices had no change in the batches of orders' column changes, and the slot has
        # released the WAL from its last write on: verify reads it as of the last commit
        verdicts = verify_pipeline(definition, spark)
        assert {str(v.table): v.status for v in verdicts} == {
            f"{SCHEMA}.orders": "equal",
            f"{SCHEMA}.prices": "equal",
        }
        # Spark's commits moved the slot (a few batches late), so the server releases WAL
        ((confirmed,),) = postgres.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
            (slot_of(pg_db),),
            dbname=pg_db,
        )
        first = committed_offsets(definition.settings.checkpoint)[0]["log"]["lsn"]
        assert lsn_from_text(str(confirmed)) > lsn_from_text(first)
        # sparkcdc status, read-only, against the stopped pipeline and its server
        status = pipeline_status(definition)
        assert status.source_error is None and status.bytes_behind is not None
        assert {(t.table, t.state, t.snapshot_progress) for t in status.tables} == {
            (f"{SCHEMA}.orders", "streaming", 1.0),
            (f"{SCHEMA}.prices", "streaming", 1.0),
        }
    finally:
        drop_slot(postgres, pg_db)


def test_postgres_to_mariadb_with_concurrent_writes_then_verify(
    spark: Any,
    postgres: EmbeddedPostgres,
    pg_db: str,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    scratch: Path,
    monkeypatch: Any,
) -> None:
    source_database(postgres, pg_db)
    sink = mariadb_sink_block(mariadb, mysql_db, monkeypatch)
    try:
        # evolve: a TRUNCATE empties the target (in the batch's transaction); a DROP
        # TABLE (no trace in the WAL: the table is gone from the catalog) drops it
        definition = run_with_writes(
            postgres,
            pg_db,
            scratch,
            sink,
            "evolve",
            [
                f"INSERT INTO {SCHEMA}.audit (note) VALUES ('before its drop')",
                f"DROP TABLE {SCHEMA}.audit",
                f"INSERT INTO {SCHEMA}.prices (sku, price) VALUES ('gone', 1)",
                f"TRUNCATE {SCHEMA}.prices",
                f"INSERT INTO {SCHEMA}.prices (sku, price, note) VALUES ('a', 2.25, 'x'), "
                "('b', NULL, 'y')",
            ],
            tables="orders|prices|audit",
            until=lambda offsets: any(audit_dropped(o) for o in offsets),
        )
        assert not mariadb.execute(
            "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND "
            "table_name = 'audit'",
            (mysql_db,),
        ), "the target of the dropped table is dropped (evolve)"
        target = {
            r[0]: tuple(r)
            for r in mariadb.execute("SELECT id, name, qty FROM orders", database=mysql_db)
        }
        assert target == source_rows(postgres, pg_db, f"SELECT id, name, qty FROM {SCHEMA}.orders")
        prices = mariadb.execute("SELECT sku, price FROM prices ORDER BY sku", database=mysql_db)
        assert [tuple(p) for p in prices] == [("a", Decimal("2.250")), ("b", None)]
        verdicts = verify_pipeline(definition, spark)
        assert {str(v.table): v.status for v in verdicts} == {
            f"{SCHEMA}.orders": "equal",
            f"{SCHEMA}.prices": "equal",
        }
    finally:
        drop_slot(postgres, pg_db)


def test_validate_checks_the_source_and_leaves_it_as_it_was(
    postgres: EmbeddedPostgres, pg_db: str, scratch: Path, capsys: Any
) -> None:
    """``sparkcdc validate`` checks the server and its tables as a run does, but makes no
    slot or publication: a slot nobody reads would keep the server's WAL for ever."""
    source_database(postgres, pg_db)
    path = pipeline(scratch, postgres, pg_db, slot_of(pg_db), "type: delta\npath: lake")
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "source ok: 2 tables match and are ready for CDC" in out, out
    assert f"{SCHEMA}.orders -> " in out and f"{SCHEMA}.prices -> " in out, out
    slots = postgres.execute(
        "SELECT count(*) FROM pg_replication_slots WHERE slot_name = %s",
        (slot_of(pg_db),),
        dbname=pg_db,
    )
    assert slots == [(0,)] and postgres.execute(
        "SELECT count(*) FROM pg_publication", dbname=pg_db
    ) == [(0,)]
    assert not (scratch / "lake").exists() and not (scratch / "checkpoint").exists()
    # a publication the run may not make is refused, as the run would refuse it
    disabled = path.read_text().replace(
        "  slot.name:", "  publication.autocreate.mode: disabled\n  slot.name:"
    )
    path.write_text(disabled)
    assert main(["validate", str(path)]) == 2
    assert (
        "does not exist and 'publication.autocreate.mode' is 'disabled'" in capsys.readouterr().err
    )
    # a table the server cannot capture is refused, as a run would refuse it
    postgres.execute(f"ALTER TABLE {SCHEMA}.orders REPLICA IDENTITY DEFAULT", dbname=pg_db)
    assert main(["validate", str(path)]) == 2
    assert "REPLICA IDENTITY" in capsys.readouterr().err

"""PostgreSQL tables without REPLICA IDENTITY FULL through ``changelog-mode: upsert`` into
upsert targets (Delta with Spark's and with the native writer, JDBC PostgreSQL and
MariaDB): random writes during the snapshot and the stream, a stop while writes go on and
a restart with the backlog, then ``sparkcdc verify``.

``shop.docs`` holds large TOASTed text and jsonb values (random, so stored out of line)
that most of its random writes leave unchanged (they update other columns): the WAL then
lacks them (``_unchanged``), and every target must keep its stored value. Its writes move
no key: a key move that leaves a TOASTed value unchanged fails the read (not built;
tests/integration/test_postgres_source.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from tests.integration.test_pipeline_postgres import (
    SCHEMA,
    drop_slot,
    flush_lsn,
    pipeline,
    slot_of,
    source_rows,
)
from tests.support.pipelines import (
    committed_offsets,
    mariadb_sink_block,
    postgres_sink_block,
    snapshot_done,
    wait_until,
)
from tests.support.postgres_writes import POSTGRES_WRITES
from tests.support.random_writer import RandomWriter, WriteStatements

#: The random writer's statements on ``docs``: inserts take new large values (the
#: defaults), updates and the upsert's conflict leave them unchanged, the "move" gives two
#: rows a new ``doc`` (``meta`` unchanged).
DOCS_WRITES = WriteStatements(
    upsert="INSERT INTO docs (id, name, qty) VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
    "SET qty = docs.qty + 1",
    update="UPDATE docs SET qty = qty + 1, name = name || 'u' WHERE id = %s",
    move="UPDATE docs SET doc = big_text() WHERE id IN (%s, %s)",
    delete="DELETE FROM docs WHERE id = %s",
    audit="INSERT INTO audit (note) VALUES (%s)",
)


def default_identity_tables(postgres: EmbeddedPostgres, database: str) -> None:
    """``shop.orders`` (2000 rows), ``shop.prices`` and ``shop.audit`` (the random writer's
    second table, not captured), all REPLICA IDENTITY DEFAULT."""
    with postgres.connect(database) as conn:
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(
            f"CREATE TABLE {SCHEMA}.orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)"
        )
        conn.execute(
            f"CREATE TABLE {SCHEMA}.prices (sku TEXT PRIMARY KEY, price NUMERIC(12,3), note TEXT)"
        )
        conn.execute(f"CREATE TABLE {SCHEMA}.audit (id SERIAL PRIMARY KEY, note TEXT)")
        conn.execute(
            f"INSERT INTO {SCHEMA}.orders SELECT g * 3, 'name' || g, g % 50 "
            "FROM generate_series(0, 1999) g"
        )
        conn.execute(f"INSERT INTO {SCHEMA}.prices VALUES ('a', 1.5, 'x'), ('B', NULL, NULL)")
        # ~3.2 kB of random hex per value: past the 2 kB TOAST threshold, and random, so
        # compression cannot bring it back inline
        conn.execute(
            f"CREATE FUNCTION {SCHEMA}.big_text() RETURNS text VOLATILE LANGUAGE sql AS "
            "$$ SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 100) $$"
        )
        conn.execute(
            f"CREATE TABLE {SCHEMA}.docs (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT, "
            f"doc TEXT DEFAULT {SCHEMA}.big_text(), "
            f"meta JSONB DEFAULT jsonb_build_object('blob', {SCHEMA}.big_text(), 'n', 1))"
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.docs (id, name, qty) SELECT g, 'd' || g, g % 7 "
            "FROM generate_series(0, 199) g"
        )


def writer(
    postgres: EmbeddedPostgres, database: str, seed: int, docs: bool = False
) -> RandomWriter:
    """Random upserts, updates, key moves and deletes of ``orders`` (``docs``: upserts,
    updates that leave its TOASTed values unchanged, new ``doc`` values and deletes of
    ``docs``)."""
    found = RandomWriter(
        lambda: postgres.connect(database, options=f"-c search_path={SCHEMA}"),
        DOCS_WRITES if docs else POSTGRES_WRITES,
        seed=seed,
        key_space=300 if docs else 7000,
    )
    found.limit = 800
    return found


class Writers:
    """The random writers of ``orders`` and ``docs``, started and stopped together."""

    def __init__(self, postgres: EmbeddedPostgres, database: str, seed: int) -> None:
        self.all = [writer(postgres, database, seed), writer(postgres, database, seed, True)]

    def start(self) -> None:
        for one in self.all:
            one.start()

    def stop(self) -> None:
        for one in self.all:
            one.stop()

    @property
    def transactions(self) -> int:
        return min(one.transactions for one in self.all)


@pytest.mark.parametrize("target", ["delta", "delta-native", "jdbc", "jdbc-mariadb"])
def test_default_identity_tables_reach_upsert_targets_equal_across_a_restart(
    spark: Any,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    monkeypatch: Any,
    request: pytest.FixtureRequest,
    target: str,
) -> None:
    """``jdbc-mariadb``: the absent values kept by MariaDB's upsert (``ON DUPLICATE KEY
    UPDATE`` leaving the kept columns out), as PostgreSQL's ``ON CONFLICT`` does."""
    default_identity_tables(postgres, pg_db)
    if target.startswith("delta"):
        sink = "type: delta\npath: lake"
        if target == "delta-native":
            sink += "\nwriter: native"
    elif target == "jdbc-mariadb":
        mariadb: EmbeddedMariaDB = request.getfixturevalue("mariadb")
        database = mariadb.create_database(f"target_{pg_db[-6:]}")
        sink = mariadb_sink_block(mariadb, database, monkeypatch)
    else:
        sink = postgres_sink_block(
            postgres, postgres.create_database(f"target_{pg_db[-6:]}"), monkeypatch
        )
    path = pipeline(scratch, postgres, pg_db, slot_of(pg_db), sink, tables="orders|prices|docs")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("sink:\n", "  changelog-mode: upsert\nsink:\n", 1))
    definition = load_pipeline(path)
    assert definition.source_config.upsert
    checkpoint = definition.settings.checkpoint
    try:
        # the first run: snapshot under writes, stopped while the writes go on
        run, writes = prepare(definition), Writers(postgres, pg_db, seed=41)
        writes.start()
        run.start()
        try:
            wait_until(
                lambda: any(snapshot_done(o) for o in committed_offsets(checkpoint)),
                "the snapshot",
            )
        finally:
            run.stop()
        wait_until(lambda: writes.transactions > 40, "writes after the stop")
        writes.stop()
        # the restart: the backlog, more writes, a key move and a delete of prices
        run, writes = prepare(definition), Writers(postgres, pg_db, seed=42)
        writes.start()
        run.start()
        try:
            wait_until(lambda: writes.transactions > 40, "writes while streaming")
            writes.stop()
            with postgres.connect(pg_db) as conn:
                conn.execute(f"UPDATE {SCHEMA}.prices SET price = 2.25 WHERE sku = 'a'")
                conn.execute(f"UPDATE {SCHEMA}.prices SET sku = 'b' WHERE sku = 'B'")
                conn.execute(f"DELETE FROM {SCHEMA}.orders WHERE id = 3")
            end = flush_lsn(postgres, pg_db)
            wait_until(
                lambda: any(
                    lsn_from_text(o["log"]["lsn"]) >= end for o in committed_offsets(checkpoint)
                ),
                "the pipeline to catch up",
            )
        finally:
            run.stop()
            writes.stop()
        verdicts = verify_pipeline(definition, spark)
        assert {str(v.table): v.status for v in verdicts} == {
            f"{SCHEMA}.orders": "equal",
            f"{SCHEMA}.prices": "equal",
            f"{SCHEMA}.docs": "equal",
        }
        with postgres.connect(pg_db) as conn:
            # two values over 2 kB each, compressed or not: both stored out of line
            (smallest,) = conn.execute(
                "SELECT least(min(pg_column_size(doc)), min(pg_column_size(meta))) "
                f"FROM {SCHEMA}.docs"
            ).fetchone()
        assert smallest > 2000
        if target.startswith("delta"):
            lake = scratch / "lake" / SCHEMA / "orders"
            frame = spark.read.format("delta").load(str(lake))
            assert {r[0]: tuple(r) for r in frame.collect()} == source_rows(
                postgres, pg_db, f"SELECT id, name, qty FROM {SCHEMA}.orders"
            )
    finally:
        drop_slot(postgres, pg_db)

"""MariaDB -> PostgreSQL through a pipeline: concurrent writes during the snapshot, one
target transaction per batch, then ``verify`` (with the pipeline's recorded offset)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import committed_offsets, pipeline_file, run_while_writing

__all__ = ["orders"]


def test_mariadb_to_postgres_with_concurrent_writes_then_verify(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    monkeypatch: Any,
) -> None:
    monkeypatch.setenv("TARGET_PASSWORD", postgres.password)
    mariadb.execute(
        "CREATE TABLE prices (sku VARCHAR(20) PRIMARY KEY, price DECIMAL(12,3), at DATETIME(6))",
        database=orders,
    )
    mariadb.execute(
        "INSERT INTO prices VALUES ('a', 1.5, '2024-01-02 03:04:05.678901'), ('B', NULL, NULL)",
        database=orders,
    )
    sink = f"""
type: jdbc
url: postgresql://{postgres.host}:{postgres.port}/{pg_db}
username: {postgres.user}
password: ${{TARGET_PASSWORD}}
table-name: "{{database}}.{{table}}"
"""
    pipeline = pipeline_file(scratch, mariadb, f"{orders}.(orders|prices)", sink)
    definition = load_pipeline(pipeline)
    run = prepare(definition, spark=spark)
    writer = mariadb_writer(mariadb, orders, seed=23, key_space=7000)
    writer.limit = 1500

    def more_changes() -> None:
        mariadb.execute("UPDATE prices SET price = 2.25 WHERE sku = 'a'", database=orders)
        mariadb.execute("UPDATE prices SET sku = 'b' WHERE sku = 'B'", database=orders)

    run_while_writing(run, mariadb, writer, more_changes)
    checkpoint = definition.settings.checkpoint

    with postgres.connect(pg_db) as conn:
        target = {
            r[0]: tuple(r)
            for r in conn.execute(f'SELECT id, name, qty FROM "{orders}"."orders"').fetchall()
        }
        prices = conn.execute(f'SELECT sku, price FROM "{orders}"."prices" ORDER BY sku').fetchall()
        stored = conn.execute("SELECT pipeline, batch_id FROM sparkcdc_offsets").fetchall()
    assert target == table_state(mariadb, orders, "orders")
    assert prices == [("a", Decimal("2.250")), ("b", None)]
    assert len(stored) == 1 and stored[0][1] == len(committed_offsets(checkpoint)) - 1

    verdicts = verify_pipeline(definition, spark)
    assert {str(v.table): v.status for v in verdicts} == {
        f"{orders}.orders": "equal",
        f"{orders}.prices": "equal",
    }

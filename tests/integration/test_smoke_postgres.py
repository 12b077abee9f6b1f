"""The harness's PostgreSQL is real and supports logical replication."""

from __future__ import annotations

from sparkcdc.embedded import EmbeddedPostgres


def test_logical_replication_slot(postgres: EmbeddedPostgres, pg_db: str) -> None:
    assert postgres.execute("SHOW wal_level", dbname=pg_db) == [("logical",)]
    postgres.execute("CREATE TABLE t (id int PRIMARY KEY, v text)", dbname=pg_db)
    slot = f"slot_{pg_db}"[:63]
    postgres.execute(
        "SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (slot,), dbname=pg_db
    )
    try:
        postgres.execute("INSERT INTO t VALUES (1, 'a')", dbname=pg_db)
        changes = postgres.execute(
            "SELECT data FROM pg_logical_slot_get_changes(%s, NULL, NULL)", (slot,), dbname=pg_db
        )
        assert any("INSERT" in data and "'a'" in data for (data,) in changes)
    finally:
        postgres.execute("SELECT pg_drop_replication_slot(%s)", (slot,), dbname=pg_db)

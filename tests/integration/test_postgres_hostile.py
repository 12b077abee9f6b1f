"""A PostgreSQL source against hostile objects on the server (#63): a user's
``public.format`` that a closer signature would make win over PostgreSQL's own, and a
publication whose name pgoutput would split or fold. The harness runs PostgreSQL 15,
where only ``public``'s owner (and whom it lets) may create there; on 14 and older anyone
may, which is what makes the first one an attack, but resolution is the same on both."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sparkcdc.connectors.postgres.server.connection import arrow_connect, connect
from sparkcdc.connectors.registry import connector
from sparkcdc.embedded import EmbeddedPostgres
from sparkcdc.snapshot.driver import IncrementalSource
from tests.support.inprocess import run_batches

SLOT = "hostile_slot"
VALUE = uuid.UUID("0b6f3b8e-4c1e-4a53-9d0e-6b1f6f0a9c11")


@pytest.fixture
def database(postgres: EmbeddedPostgres, pg_db: str) -> Iterator[str]:
    postgres.execute("CREATE TABLE t (id INT PRIMARY KEY, u UUID)", dbname=pg_db)
    postgres.execute("ALTER TABLE t REPLICA IDENTITY FULL", dbname=pg_db)
    postgres.execute("INSERT INTO t VALUES (1, %s)", (VALUE,), dbname=pg_db)
    yield pg_db
    postgres.execute(
        "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = %s",
        (SLOT,),
        dbname=pg_db,
    )


def source(postgres: EmbeddedPostgres, database: str, **extra: str) -> IncrementalSource[Any, Any]:
    found = connector("postgres")
    options = {
        "hostname": postgres.host,
        "port": str(postgres.port),
        "username": postgres.user,
        "password": postgres.password,
        "database-name": database,
        "schema-name": "public",
        "table-name": "t",
        "slot.name": SLOT,
        **extra,
    }
    made: IncrementalSource[Any, Any] = found.source(found.parse_config(options))
    return made


def test_a_users_public_format_is_never_called(postgres: EmbeddedPostgres, database: str) -> None:
    postgres.execute(
        "CREATE FUNCTION public.format(text, uuid) RETURNS text LANGUAGE sql "
        "AS $$ SELECT 'hijacked' $$",
        dbname=database,
    )
    # what the attack relies on: an unqualified call takes the closer signature
    ((plain,),) = postgres.execute("SELECT format('%s', u) FROM t", dbname=database)
    assert plain == "hijacked"

    stream = source(postgres, database)
    rows: list[dict[str, Any]] = []
    run_batches(stream, None, rows.extend)
    assert [(r["id"], r["u"]) for r in rows] == [(1, str(VALUE))]

    config = stream.dialect.config  # type: ignore[attr-defined]
    with connect(config) as conn:
        ((path,),) = conn.execute("SHOW search_path").fetchall()
    chunk_reader = arrow_connect(config)
    try:
        cursor = chunk_reader.cursor()
        cursor.execute("SELECT pg_catalog.current_setting('search_path')")
        ((arrow_path,),) = cursor.fetchall()
        cursor.close()
    finally:
        chunk_reader.close()
    assert path == arrow_path == "pg_catalog, pg_temp"


@pytest.mark.parametrize("name", ["Pub,Lic", 'od"d Pub'])
def test_a_publication_name_reaches_pgoutput_whole(
    postgres: EmbeddedPostgres, database: str, name: str
) -> None:
    """pgoutput splits ``publication_names`` at commas and folds unquoted names to lower
    case: unquoted, 'Pub,Lic' would be the publications "pub" and "lic"."""
    stream = source(
        postgres, database, **{"publication.name": name, "scan.startup.mode": "latest-offset"}
    )
    start = stream.initial_offset()
    postgres.execute("INSERT INTO t VALUES (2, NULL)", dbname=database)
    rows: list[dict[str, Any]] = []
    run_batches(stream, start, rows.extend)
    assert [(r["id"], r["_change_type"]) for r in rows] == [(2, "insert")]
    found = postgres.execute("SELECT pubname FROM pg_publication", dbname=database)
    assert [r[0] for r in found] == [name]

"""TLS (``jdbc.properties.ssl*``) against a PostgreSQL that takes TCP clients over TLS only
(``hostssl`` in pg_hba.conf): the source reads its snapshot and the WAL over a verified
connection, the JDBC sink writes and reads back over one, and a clear-text or unverifiable
connection fails at once with a message that says why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.connectors.registry import connector
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedPostgres
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import SinkError
from sparkcdc.sinks.jdbc.sink import JdbcSink
from sparkcdc.sinks.write_plan import plan_of
from tests.support.inprocess import run_batches

DB = "tls_db"
SLOT = "tls_slot"


@pytest.fixture(scope="module")
def tls_postgres(certificates: Path) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(tls=(certificates / "server.pem", certificates / "server.key"))
    server.start()  # the harness's own connections ask libpq's default 'prefer': TLS
    try:
        server.create_database(DB)
        server.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", dbname=DB)
        server.execute("ALTER TABLE t REPLICA IDENTITY FULL", dbname=DB)
        server.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 300) g", dbname=DB)
        yield server
    finally:
        server.stop()


def _verified(certificates: Path, ca: str = "ca.pem") -> dict[str, str]:
    return {
        "jdbc.properties.sslmode": "verify-full",
        "jdbc.properties.sslrootcert": str(certificates / ca),
    }


def _source_options(server: EmbeddedPostgres, tls: dict[str, str]) -> dict[str, str]:
    return {
        "hostname": server.host,
        "port": str(server.port),
        "username": server.user,
        "password": server.password,
        "database-name": DB,
        "schema-name": "public",
        "table-name": "t",
        "slot.name": SLOT,
        "connect.max-retries": "0",
        **tls,
    }


def test_the_source_reads_snapshot_and_wal_over_verified_tls(
    tls_postgres: EmbeddedPostgres, certificates: Path
) -> None:
    found = connector("postgres")
    source = found.source(
        found.parse_config(_source_options(tls_postgres, _verified(certificates)))
    )
    rows: list[dict[str, Any]] = []

    def write(n: int) -> None:
        if n == 0:
            tls_postgres.execute("UPDATE t SET v = 'changed' WHERE id = 7", dbname=DB)
            tls_postgres.execute("INSERT INTO t VALUES (301, 'new')", dbname=DB)

    try:
        run_batches(source, None, rows.extend, between=write, write_batches=1)
    finally:
        source.close()
        tls_postgres.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (SLOT,),
            dbname=DB,
        )
    final: dict[int, str] = {}
    for row in rows:
        if row["_change_type"] in ("insert", "update_postimage"):
            final[row["id"]] = row["v"]
        elif row["_change_type"] == "delete":
            final.pop(row["id"])
    assert final == {**{i: f"v{i}" for i in range(1, 301)}, 7: "changed", 301: "new"}
    assert any(r["_change_type"] == "update_postimage" for r in rows)  # read from the WAL
    # every connection the server has from us now is encrypted (pg_stat_ssl)
    assert tls_postgres.execute("SELECT bool_and(ssl) FROM pg_stat_ssl") == [(True,)]


@pytest.mark.parametrize(
    ("tls", "expected"),
    [
        ({"jdbc.properties.sslmode": "disable"}, "pg_hba.conf"),
        (None, "certificate verify failed"),
        # a CA alone verifies the host name too (#63): the certificate is 127.0.0.1's
        ("ca.pem", "does not match host name"),
    ],
    ids=["clear-text", "unknown-ca", "ca-alone-checks-the-host"],
)
def test_the_source_refuses_clear_text_and_an_unverified_server(
    tls_postgres: EmbeddedPostgres,
    certificates: Path,
    tls: dict[str, str] | str | None,
    expected: str,
) -> None:
    found = connector("postgres")
    host = {}
    if isinstance(tls, str):
        tls, host = (
            {"jdbc.properties.sslrootcert": str(certificates / tls)},
            {"hostname": "localhost"},
        )
    options = _source_options(tls_postgres, tls or _verified(certificates, "other-ca.pem"))
    options.update(host)
    source = found.source(found.parse_config(options))
    try:
        with pytest.raises(SourceConfigurationError, match=expected) as info:
            source.initial_offset()
    finally:
        source.close()
    assert tls_postgres.password not in str(info.value)


def _sink(server: EmbeddedPostgres, tls: dict[str, str]) -> JdbcSink:
    return JdbcSink(
        JdbcSinkConfig.from_options(
            {
                "url": f"postgresql://{server.host}:{server.port}/{DB}",
                "username": server.user,
                "password": server.password,
                "table-name": "target_{table}",
                **tls,
            }
        ),
        "tls-pipeline",
    )


def test_the_jdbc_sink_writes_and_reads_back_over_verified_tls(
    spark: Any, tls_postgres: EmbeddedPostgres, certificates: Path
) -> None:
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL("id INT, v STRING")
    table = SinkTable(TableId("shop", "orders"), schema, ("id",))
    changes = spark.createDataFrame(
        [(1, "a", "insert", 1, None), (2, "b", "insert", 2, None), (1, "a", "delete", 3, None)],
        "id INT, v STRING, _change_type STRING, _commit_version LONG, _commit_timestamp TIMESTAMP",
    )
    sink = _sink(tls_postgres, _verified(certificates))
    sink.open(spark, [table])
    try:
        sink.write(plan_of("tls-pipeline", 0, {table.source: changes}, '{"lsn": 1}'))
    finally:
        sink.close()
    assert tls_postgres.execute("SELECT id, v FROM target_orders", dbname=DB) == [(2, "b")]
    back = _sink(tls_postgres, _verified(certificates)).snapshot(spark, table)
    assert [tuple(r) for r in back.rows.collect()] == [(2, "b")]

    for tls, expected in (
        ({"jdbc.properties.sslmode": "disable"}, "pg_hba.conf"),
        (_verified(certificates, "other-ca.pem"), "certificate verify failed"),
    ):
        with pytest.raises(SinkError, match=expected) as info:
            _sink(tls_postgres, tls).open(None, [])
        assert not info.value.lost  # not retried: waiting does not fix a refusal
        assert tls_postgres.password not in str(info.value)

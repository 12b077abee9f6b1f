"""TLS (``jdbc.properties.ssl*``) against a MariaDB that requires it: the native snapshot
reader reads over TLS and verifies the server when asked; a wrong CA or clear text fails with
a clear error; the classic reader and the binlog give the same rows over TLS; the JDBC sink
writes into it over TLS."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog.positions import current_position
from sparkcdc.connectors.mysql.binlog.reader import read_changes
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.snapshot.native_reader import connect_native
from sparkcdc.connectors.mysql.snapshot.reader import reader_for
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import SinkError
from sparkcdc.sinks.jdbc.sink import JdbcSink
from sparkcdc.sinks.write_plan import plan_of

DB = "tls_db"


@pytest.fixture(scope="module")
def tls_mariadb(certificates: Path) -> Iterator[EmbeddedMariaDB]:
    server = EmbeddedMariaDB(
        settings={
            "ssl-ca": str(certificates / "ca.pem"),
            "ssl-cert": str(certificates / "server.pem"),
            "ssl-key": str(certificates / "server.key"),
        }
    ).start()
    try:
        server.execute(f"ALTER USER '{server.cdc.user}'@'%' REQUIRE SSL")
        server.create_database(DB)
        server.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20), d DATE)", database=DB)
        server.execute(
            "INSERT INTO t SELECT seq, CONCAT('v', seq), '2024-02-29' FROM seq_1_to_500",
            database=DB,
        )
        yield server
    finally:
        server.stop()


def _options(server: EmbeddedMariaDB, **tls: str) -> dict[str, str]:
    return {
        **server.source_options(),
        "database-name": DB,
        "table-name": "t",
        **{f"jdbc.properties.{k}": v for k, v in tls.items()},
    }


def _snapshot(options: dict[str, str]) -> pa.Table:
    source = MySqlCdcSource(parse_config(options))
    try:
        batches = [b for spec in source.snapshot_partitions() for b in source.read(spec)]
        table = pa.Table.from_batches(batches, schema=source.arrow_schema())
    finally:
        source.close()
    return table.select(["id", "v", "d", "_change_type"]).sort_by("id")


def test_native_reader_reads_over_tls_and_verifies_the_server(
    tls_mariadb: EmbeddedMariaDB, certificates: Path
) -> None:
    ca = str(certificates / "ca.pem")
    verified = _options(tls_mariadb, sslMode="verify_identity", sslCa=ca)
    config = parse_config(verified)
    assert reader_for(config) == "native"
    conn = connect_native(config)
    try:
        assert conn.raw.cipher()  # the session really is encrypted
    finally:
        conn.close()

    native = _snapshot(verified)
    assert native.num_rows == 500
    classic = _snapshot({**verified, "scan.snapshot.reader": "classic"})
    assert native.equals(classic)
    assert _snapshot(_options(tls_mariadb, sslMode="required")).equals(native)


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({"sslMode": "disabled"}, "cannot log in"),  # the user requires TLS
        ({"sslMode": "verify_ca", "sslCa": "other-ca.pem"}, "certificate|SSL|TLS"),
    ],
    ids=["clear-text", "wrong-ca"],
)
def test_tls_failures_are_clear_errors(
    tls_mariadb: EmbeddedMariaDB, certificates: Path, tls: dict[str, str], message: str
) -> None:
    if "sslCa" in tls:
        tls = {**tls, "sslCa": str(certificates / tls["sslCa"])}
    config = parse_config({**_options(tls_mariadb, **tls), "connect.max-retries": "0"})
    with pytest.raises(Exception, match=message) as failure:
        connect_native(config)
    assert tls_mariadb.cdc.password not in str(failure.value)


def test_the_binlog_and_spark_read_over_tls(
    spark: Any, tls_mariadb: EmbeddedMariaDB, certificates: Path
) -> None:
    """The binlog (PyMySQL over TLS) and a Spark batch read (snapshot by the native reader
    in the Python workers) with a user that may only connect over TLS."""
    options = _options(tls_mariadb, sslMode="verify_ca", sslCa=str(certificates / "ca.pem"))
    config = parse_config(options)
    source = MySqlCdcSource(config)
    try:
        start = current_position(source.dialect.conn)
        tls_mariadb.execute("UPDATE t SET v = 'tls' WHERE id = 7", database=DB)
        end = current_position(source.dialect.conn)
        changes = list(read_changes(config, source.tables, start, end, 6201))
    finally:
        source.close()
    assert [(c.before[:2], c.after[:2]) for c in changes if c.before and c.after] == [
        ((7, "v7"), (7, "tls"))
    ]
    rows = spark.read.format("mysql-cdc").options(**options).load().collect()
    assert sorted(r["id"] for r in rows) == list(range(1, 501))
    assert {r["v"] for r in rows if r["id"] == 7} == {"tls"}


def test_the_jdbc_sink_writes_and_reads_back_over_verified_tls(
    spark: Any, tls_mariadb: EmbeddedMariaDB, certificates: Path
) -> None:
    """The JDBC sink into a MariaDB whose sink user may only connect over TLS: rows land
    and read back with the server verified; clear text and an unknown CA fail at once."""
    from pyspark.sql.types import StructType

    password = "Sink-" + secrets.token_hex(6)
    tls_mariadb.execute(
        "CREATE OR REPLACE USER 'tls_sink'@'%%' IDENTIFIED BY %s REQUIRE SSL", (password,)
    )
    tls_mariadb.execute("GRANT ALL ON *.* TO 'tls_sink'@'%'")

    def sink(**tls: str) -> JdbcSink:
        options = {
            "url": f"mariadb://{tls_mariadb.host}:{tls_mariadb.port}/{DB}",
            "username": "tls_sink",
            "password": password,
            "table-name": "target_{table}",
            **{f"jdbc.properties.{k}": v for k, v in tls.items()},
        }
        return JdbcSink(JdbcSinkConfig.from_options(options), "tls-pipeline")

    ca = str(certificates / "ca.pem")
    schema = StructType.fromDDL("id INT, v STRING")
    table = SinkTable(TableId("shop", "orders"), schema, ("id",))
    changes = spark.createDataFrame(
        [(1, "a", "insert", 1, None), (2, "b", "insert", 2, None), (1, "a", "delete", 3, None)],
        "id INT, v STRING, _change_type STRING, _commit_version LONG, _commit_timestamp TIMESTAMP",
    )
    verified = sink(sslMode="verify_identity", sslCa=ca)
    verified.open(spark, [table])
    try:
        sink_session = verified.dialect.connect()
        with sink_session.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1]  # this very session is encrypted
        sink_session.close()
        verified.write(plan_of("tls-pipeline", 0, {table.source: changes}, '{"pos": 1}'))
    finally:
        verified.close()
    assert tls_mariadb.execute("SELECT id, v FROM target_orders", database=DB) == [(2, "b")]
    back = sink(sslMode="verify_ca", sslCa=ca).snapshot(spark, table)
    assert [tuple(r) for r in back.rows.collect()] == [(2, "b")]

    for tls, expected in (
        ({"sslMode": "disabled"}, "Access denied"),
        ({"sslMode": "verify_ca", "sslCa": str(certificates / "other-ca.pem")}, "certificate"),
        ({"sslCa": str(certificates / "other-ca.pem")}, "certificate"),  # a CA alone verifies
    ):
        with pytest.raises(SinkError, match=expected) as info:
            sink(**tls).open(None, [])
        assert not info.value.lost  # not retried: waiting does not fix a refusal
        assert password not in str(info.value)

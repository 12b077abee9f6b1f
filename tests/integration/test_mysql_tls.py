"""TLS (``jdbc.properties.ssl*``) against a MariaDB that requires it: the native snapshot
reader reads over TLS and verifies the server when asked; a wrong CA or clear text fails with
a clear error; the classic reader and the binlog give the same rows over TLS."""

from __future__ import annotations

import subprocess
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
from sparkcdc.embedded import EmbeddedMariaDB

DB = "tls_db"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(directory: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN=sparkcdc {name}",
        cwd=directory,
    )  # fmt: skip


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test CA, a server certificate for 127.0.0.1 signed by it, and an unrelated CA."""
    d = tmp_path_factory.mktemp("tls")
    _ca(d, "ca")
    _ca(d, "other-ca")
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
        "-subj", "/CN=127.0.0.1",
        cwd=d,
    )  # fmt: skip
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl(
        "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.cnf",
        cwd=d,
    )  # fmt: skip
    return d


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

"""The MySQL/MariaDB bulk load sends the target no file but the one it wrote (#63): a fake
server on loopback answers the LOAD DATA LOCAL with a request for another file (a secret
of the pipeline's process), and nothing of it is sent; the batch fails saying why. An
honest request, for the statement's own file, is served."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql.types import IntegerType, StringType, StructType

from sparkcdc.core.table import TableId
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import MySqlTarget, Target
from sparkcdc.sinks.jdbc.own_files import ForeignFileRequest
from tests.support.fake_mysql import FakeMySqlServer

SCHEMA = StructType().add("id", IntegerType()).add("name", StringType())
TARGET = Target(TableId("d", "t"), "d", "t", SCHEMA, ("id",))
ROWS = [(b"1,a\n2,b\n", 2), (b"3,c\n", 1)]


def dialect(server: FakeMySqlServer) -> MySqlTarget:
    options = {"url": f"mariadb://127.0.0.1:{server.port}/d", "username": "u", "password": "p"}
    return MySqlTarget(JdbcSinkConfig.from_options(options))


def test_a_request_for_another_file_gets_nothing(tmp_path: Path) -> None:
    secret = tmp_path / "environ"
    secret.write_bytes(b"SPARKCDC_PASSWORD=hunter2\n")
    with FakeMySqlServer(wanted=str(secret)) as server:
        sink = dialect(server)
        conn = sink.connect()
        try:
            assert sink.copies_csv  # the server allows LOCAL: the bulk load is used
            with conn.cursor() as cur, pytest.raises(ForeignFileRequest) as info:
                sink.copy_csv(cur, TARGET, iter(ROWS))
            # the connection is still in step: the next statement is answered
            with conn.cursor() as cur:
                cur.execute("ROLLBACK", ())
        finally:
            conn.close()
        assert server.asked == [str(secret).encode()]
        assert bytes(server.received) == b""
    message = str(info.value)
    assert str(secret) in message and "nothing of it was sent" in message
    assert "sslCa" in message


def test_the_statements_own_file_is_sent() -> None:
    with FakeMySqlServer() as server:
        sink = dialect(server)
        conn = sink.connect()
        try:
            with conn.cursor() as cur:
                assert sink.copy_csv(cur, TARGET, iter(ROWS)) == 3
        finally:
            conn.close()
        assert bytes(server.received) == b"1,a\n2,b\n3,c\n"
        assert server.asked[0].endswith(b".csv")


def test_no_file_is_sent_outside_a_bulk_load(tmp_path: Path) -> None:
    """A server may answer any statement with a file request; outside a load there is
    nothing to send."""
    secret = tmp_path / "key"
    secret.write_bytes(b"private key")
    with FakeMySqlServer(wanted=str(secret)) as server:
        sink = dialect(server)
        conn = sink.connect()
        try:
            with conn.cursor() as cur, pytest.raises(ForeignFileRequest, match="outside a bulk"):
                cur.execute("LOAD DATA LOCAL INFILE 'x' INTO TABLE t", ())
        finally:
            conn.close()
        assert bytes(server.received) == b""

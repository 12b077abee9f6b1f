"""Where a chunk's snapshot stands in the binlog: MariaDB's exact position, or a high
watermark (servers without one: MySQL). The whole conformance suite runs again on MySQL 8.0
(tests/conformance/conftest.py), where chunks are placed by a watermark; this checks that
the option takes the path it names, on a real server, and that a MySQL chunk waits for the
batch's transactions to finish committing."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import (
    binlog_end,
    current_position,
    snapshot_position,
)
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.server.connection import connect
from sparkcdc.connectors.mysql.snapshot import consistent
from sparkcdc.connectors.mysql.snapshot.consistent import committed_up_to, placed
from sparkcdc.connectors.mysql.snapshot.native_reader import connect_native
from sparkcdc.core.errors import SourceConfigurationError, SparkCdcError
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.embedded.binlog_server import BinlogServer


def test_a_watermark_is_the_binlog_end_after_the_snapshot_opened(
    mariadb: EmbeddedMariaDB, mysql_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mysql_db)
    options = {**mariadb.source_options(), "database-name": mysql_db, "table-name": "t"}
    configs = {
        mode: parse_config({**options, "scan.snapshot.consistency": mode})
        for mode in ("auto", "exact", "watermark")
    }
    conn = connect(configs["auto"])
    try:
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        exact = snapshot_position(conn)
        assert exact is not None
        # commits after the snapshot opened: its exact position stays, the binlog grows
        mariadb.execute("INSERT INTO t VALUES (1), (2)", database=mysql_db)
        end = binlog_end(conn)
        assert end > exact
        assert placed(conn, configs["auto"], exact) == (exact, True)
        assert placed(conn, configs["exact"], exact) == (exact, True)
        assert placed(conn, configs["watermark"], exact) == (end, False)
        # a batch planned beyond the binlog's end was planned on another server
        beyond = BinlogPosition(end.file, end.pos + 1_000_000)
        with pytest.raises(SparkCdcError, match=r"before the batch's position .*new checkpoint"):
            placed(conn, configs["watermark"], beyond)
        # a server that reports no exact position (MySQL): auto takes the watermark,
        # exact refuses
        with monkeypatch.context() as patched:
            patched.setattr(consistent, "snapshot_position", lambda conn: None)
            assert placed(conn, configs["auto"], exact) == (end, False)
            with pytest.raises(SourceConfigurationError, match=r"'auto' or 'watermark'"):
                placed(conn, configs["exact"], exact)
        with conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM `{mysql_db}`.t")
            assert cur.fetchone() == (0,)  # the snapshot saw neither insert
    finally:
        conn.close()


@pytest.mark.parametrize("binlog_server", ["mysql8"], indirect=True)
@pytest.mark.parametrize("opener", [connect, connect_native], ids=["pymysql", "native"])
def test_a_mysql_chunk_waits_for_the_batch_transactions_to_commit(
    binlog_server: BinlogServer,
    flavor_db: str,
    caplog: pytest.LogCaptureFixture,
    opener: Any,
) -> None:
    """Assumption A checked: the wait returns at once for a committed position and gives
    up after ``connect.timeout``, saying so, for a GTID set that never commits; on both
    readers' connections (the native one answers in text: '0' once read every chunk as
    timed out)."""
    binlog_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=flavor_db)
    binlog_server.execute("INSERT INTO t VALUES (1)", database=flavor_db)
    options = {
        **binlog_server.source_options(),
        "database-name": flavor_db,
        "table-name": "t",
        "connect.timeout": "3s",  # the wait gives up after half of it
    }
    config = parse_config(options)
    conn = opener(config)
    try:
        now = current_position(conn)
        with caplog.at_level(logging.WARNING):
            committed_up_to(conn, config, now)
            assert not caplog.records
            ((uuid,),) = binlog_server.execute("SELECT @@server_uuid")
            ahead = BinlogPosition(now.file, now.pos, f"{now.gtid},{uuid}:1000000")
            committed_up_to(conn, config, ahead)
        assert "had not finished committing after 1 s" in caplog.text
    finally:
        conn.close()

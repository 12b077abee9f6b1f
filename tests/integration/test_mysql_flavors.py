"""Oracle's MySQL 8.0 and 5.7 through the flavour's statements: 5.7 is refused with the
reason, MySQL 8's wrong settings and missing privileges are named with MySQL's fixes, and
binlog positions carry the exact GTID set there, which the server's own GTID dump
(COM_BINLOG_DUMP_GTID) maps back to the same position and ``@@gtid_purged`` checks.
MariaDB's side of each is in test_mysql_validation.py / test_mysql_positions.py."""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from sparkcdc.connectors.mysql.binlog.gtid import MySqlGtidSet
from sparkcdc.connectors.mysql.binlog.locate import position_for_gtid
from sparkcdc.connectors.mysql.binlog.mysql_gtids import GtidIndex
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import current_position, ensure_available
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.server.connection import connect
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import PositionLostError, SourceConfigurationError
from sparkcdc.embedded import EmbeddedMySQL
from sparkcdc.embedded.binlog_server import Account, BinlogServer

MYSQL = ["mysql8", "mysql57"]


def _source(server: BinlogServer, db: str, account: Account | None = None) -> MySqlCdcSource:
    options = {**server.source_options(account), "database-name": db, "table-name": "t"}
    return MySqlCdcSource(parse_config(options))


@contextmanager
def set_globals(server: BinlogServer, **values: str) -> Iterator[None]:
    before = {name: str(server.execute(f"SELECT @@GLOBAL.{name}")[0][0]) for name in values}
    try:
        for name, value in values.items():
            server.execute(f"SET GLOBAL {name} = %s", (value,))
        yield
    finally:
        for name, value in before.items():
            server.execute(f"SET GLOBAL {name} = %s", (value,))


@pytest.mark.parametrize("binlog_server", ["mysql57"], indirect=True)
def test_mysql57_is_accepted_without_row_metadata(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    binlog_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=flavor_db)
    source = _source(binlog_server, flavor_db)
    assert source.initial_offset()["log"]["gtid"]
    source.close()


@pytest.mark.parametrize("binlog_server", ["mysql8"], indirect=True)
def test_mysql8_wrong_settings_are_named_with_their_fixes(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    binlog_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=flavor_db)
    with set_globals(
        binlog_server, binlog_row_metadata="MINIMAL", binlog_row_value_options="PARTIAL_JSON"
    ):
        source = _source(binlog_server, flavor_db)
        with pytest.raises(SourceConfigurationError) as refused:
            source.initial_offset()
        source.close()
    message = str(refused.value)
    assert "(MySQL 8.0.15) is not set up for CDC" in message
    assert "binlog_row_metadata" not in message  # MINIMAL, the default, is fine
    assert "binlog_row_value_options is PARTIAL_JSON" in message
    assert "SET GLOBAL binlog_row_value_options=''" in message
    source = _source(binlog_server, flavor_db)  # restored: it opens
    assert source.initial_offset()["log"]["gtid"]
    source.close()


@pytest.mark.parametrize("binlog_server", ["mysql8"], indirect=True)
def test_mysql8_grant_hint_is_runnable_and_per_database(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    binlog_server.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=flavor_db)
    account = Account(f"u_{secrets.token_hex(4)}", "pw-" + secrets.token_urlsafe(12))
    binlog_server.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (account.user, account.password))
    binlog_server.execute(f"GRANT SELECT ON `{flavor_db}`.* TO '{account.user}'@'%'")
    source = _source(binlog_server, flavor_db, account)
    with pytest.raises(SourceConfigurationError) as refused:
        source.arrow_schema()  # what the Spark binding asks first: discovery, validation
    source.close()
    message = str(refused.value)
    assert f"user '{account.user}'@'%' lacks REPLICATION SLAVE and REPLICATION CLIENT" in message
    assert account.password not in message
    found = re.search(r"run (GRANT .+? ON \*\.\* TO \S+), and", message)
    assert found, message
    assert found.group(1) == (
        f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{account.user}'@'%'"
    )
    binlog_server.execute(found.group(1))
    source = _source(binlog_server, flavor_db, account)  # SELECT on the one database is enough
    assert source.initial_offset()["log"]["gtid"]
    source.close()


@pytest.mark.parametrize("binlog_server", MYSQL, indirect=True)
def test_positions_carry_the_exact_gtid_set_and_resume_by_it(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    """Positions read while transactions commit hold exactly the GTIDs before them (a
    fresh walk of the binlog agrees), across binlog files; the server's GTID dump maps
    each set back to its position; idle, the set is ``@@gtid_executed``."""
    server = binlog_server
    server.execute("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)", database=flavor_db)
    config = parse_config(
        {**server.source_options(), "database-name": flavor_db, "table-name": "t"}
    )
    stop = threading.Event()
    commits = 0

    def write() -> None:
        nonlocal commits
        with server.connect(flavor_db) as conn, conn.cursor() as cur:
            while not stop.is_set():
                cur.execute("INSERT INTO t (v) VALUES (1)")
                commits += 1
                if commits % 150 == 0:
                    server.execute("FLUSH BINARY LOGS")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    conn = connect(config)
    try:
        positions: list[BinlogPosition] = []
        while len(positions) < 200 or commits < 400:
            positions.append(current_position(conn))
        stop.set()
        writer.join()
        assert len({p.file for p in positions}) > 1  # across rotations
        fresh = GtidIndex()
        sizes = {str(name): int(size) for name, size, *_ in server.execute("SHOW BINARY LOGS")}
        for p in positions[:: max(1, len(positions) // 40)]:
            assert p.gtid == str(fresh.at(conn, p.file, p.pos)), p
            GtidIndex().at(conn, p.file, p.pos)  # from the file's start, too
            assert str(GtidIndex().at(conn, p.file, p.pos)) == p.gtid
            found = position_for_gtid(conn, config, p.gtid, "mysql", 6300)
            assert found.gtid == p.gtid, p
            if found.file != p.file:  # the end of a file is the next file's first transaction
                assert found.file > p.file, (p, found)
                assert str(GtidIndex().at(conn, p.file, sizes[p.file])) == p.gtid, (p, found)
            else:
                assert found.pos == p.pos, (p, found)
        ((executed,),) = server.execute("SELECT @@GLOBAL.gtid_executed")
        assert current_position(conn).gtid == str(MySqlGtidSet.parse(str(executed)))
    finally:
        stop.set()
        conn.close()


@pytest.mark.parametrize("flavor", MYSQL)
def test_purged_transactions_are_a_lost_log_with_the_way_out(flavor: str) -> None:
    with EmbeddedMySQL(flavor) as server:
        server.create_database("shop")
        server.execute("CREATE TABLE shop.t (id INT PRIMARY KEY)")
        config = parse_config(
            {**server.source_options(), "database-name": "shop", "table-name": "t"}
        )
        conn = connect(config)
        early = current_position(conn)
        for i in range(5):
            server.execute("INSERT INTO shop.t VALUES (%s)", (i,))
        server.execute("FLUSH BINARY LOGS")
        server.execute("INSERT INTO shop.t VALUES (99)")
        newest = server.execute("SHOW MASTER STATUS")[0][0]
        server.execute(f"PURGE BINARY LOGS TO '{newest}'")
        now = current_position(conn)
        ((uuid,),) = server.execute("SELECT @@server_uuid")
        ensure_available(conn, now)  # nothing after it is purged
        with pytest.raises(PositionLostError, match="has been purged"):
            ensure_available(conn, early)  # its file is gone
        # a set that lacks purged transactions, at a position whose file is still there
        last = MySqlGtidSet.parse(now.gtid).last(str(uuid))
        lacking = BinlogPosition(now.file, now.pos, f"{uuid}:4-{last}")
        with pytest.raises(PositionLostError) as lost:
            ensure_available(conn, lacking)
        assert "@@gtid_purged" in str(lost.value) and f"{uuid}:1-3" in str(lost.value)
        assert "sparkcdc recover" in str(lost.value)  # the way out
        with pytest.raises(PositionLostError, match="lacks transactions the server has purged"):
            position_for_gtid(conn, config, f"{uuid}:1-2", "mysql", 6300)
        conn.close()

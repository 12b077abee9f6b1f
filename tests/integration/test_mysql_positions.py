"""The binlog end position and its GTID state, read cheaply once per trigger, agree with the
server's exact ``BINLOG_GTID_POS`` even while transactions commit all the time; without
commits in between no read rescans the binlog file."""

from __future__ import annotations

import threading

import pytest

from sparkcdc.connectors.mysql.binlog import positions as positions_module
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import (
    current_position,
    gtid_at,
    normalised_gtid,
)
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.server.connection import connect
from sparkcdc.embedded import EmbeddedMariaDB


def test_current_position_gtid_matches_the_server_under_commits(
    mariadb: EmbeddedMariaDB, mysql_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mariadb.execute("CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)", database=mysql_db)
    config = parse_config(
        {**mariadb.source_options(), "database-name": mysql_db, "table-name": "t"}
    )
    stop = threading.Event()
    commits = 0

    def write() -> None:
        nonlocal commits
        with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
            while not stop.is_set():
                cur.execute("INSERT INTO t (v) VALUES (1)")
                commits += 1

    rescans = 0

    def counted_gtid_at(*args: object) -> str:
        nonlocal rescans
        rescans += 1
        return gtid_at(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(positions_module, "gtid_at", counted_gtid_at)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    conn = connect(config)
    try:
        positions: list[BinlogPosition] = []
        while len(positions) < 300 or commits < 300:
            positions.append(current_position(conn))
        stop.set()
        writer.join()
        assert len({p.pos for p in positions}) > 1  # read while commits went on
        for p in positions:
            assert p.gtid == gtid_at(conn, p.file, p.pos), p
        # between commits (an idle or lightly written server) no read rescans the binlog
        rescans = 0
        idle = [current_position(conn) for _ in range(20)]
        assert rescans == 0 and idle[-1].gtid == gtid_at(conn, idle[-1].file, idle[-1].pos)
    finally:
        stop.set()
        conn.close()


def test_gtid_texts_are_normalised() -> None:
    assert normalised_gtid("7-1-3,0-1-4736") == "0-1-4736,7-1-3"
    assert normalised_gtid("") == ""
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"
    assert normalised_gtid(uuid) == uuid  # MySQL sets are left as they are

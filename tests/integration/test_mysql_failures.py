"""Failures the source must survive or report: lost connections and purged binlogs."""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.connectors.mysql.binlog.reader import read_changes_with_retries
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded import EmbeddedMariaDB
from tests.conformance.test_conformance import read_all, retried, through
from tests.support.changelog import ChangelogReplayer
from tests.support.mariadb_writes import table_state
from tests.support.tcp_proxy import CuttableProxy


def test_binlog_read_survives_killed_connections(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mysql_db)
    config = parse_config(
        {**mariadb.source_options(), "database-name": mysql_db, "table-name": "t"}
    )
    source = MySqlCdcSource(config)
    tables = source.tables
    start = source.current_position()
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        for i in range(300):
            cur.execute("INSERT INTO t VALUES (%s, 0)", (i,))
            cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (i,))
    end = source.current_position()
    source.close()
    clean = list(read_changes_with_retries(config, tables, start, end, 7101))

    proxy = CuttableProxy(mariadb.port)
    slow = parse_config(
        {
            **mariadb.source_options(),
            "port": str(proxy.port),
            "database-name": mysql_db,
            "table-name": "t",
            "connect.max-retries": "5",
        }
    )
    got = []
    try:
        for change in read_changes_with_retries(slow, tables, start, end, 7102):
            got.append(change)
            if len(got) in (100, 250, 400):  # the network fails three times mid-read
                proxy.cut()
    finally:
        proxy.close()
    assert proxy.cuts >= 3
    assert got == clean and len(clean) == 600


@pytest.mark.timeout(300)
def test_a_stalled_network_fails_reads_which_are_retried_never_hang(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """Connections that stay open but go silent (a stalled middlebox or server): every
    MySQL read (chunks, log) gives up after ``connect.timeout`` and is retried; nothing is
    lost or repeated. Without read timeouts this test hangs."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mysql_db)
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, 0)", [(i,) for i in range(3000)])
    proxy = CuttableProxy(mariadb.port, chunk=1024, pause=0.004)
    base = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "t",
        "server-id": "7200-7210",
        "scan.incremental.snapshot.chunk.size": "500",
        "connect.timeout": "2s",
        "connect.max-retries": "5",
    }
    planner = MySqlCdcSource(parse_config(base))
    executor = through(MySqlCdcSource(parse_config({**base, "port": str(proxy.port)})), planner)
    replayer = ChangelogReplayer(lambda r: r["id"], ("id", "v"))
    failures: list[BaseException] = []
    done = threading.Event()

    def freeze_repeatedly() -> None:
        for _ in range(4):
            if done.wait(0.3):
                return
            proxy.freeze()

    stalls = threading.Thread(target=freeze_repeatedly, daemon=True)
    try:
        offset = planner.initial_offset()
        stalls.start()
        for n in range(100):
            if n == 2:
                mariadb.execute("UPDATE t SET v = v + 1 WHERE id < 1500", database=mysql_db)
            end = planner.latest_offset(offset, 1000)
            if end == offset:
                if not stalls.is_alive():
                    break
                # caught up while the stalls go on (a fast machine): more changes, so
                # that reads run through every freeze
                mariadb.execute("UPDATE t SET v = v + 1 WHERE id < 20", database=mysql_db)
                continue
            specs = planner.partitions(offset, end)
            replayer.apply_batch(retried(partial(read_all, executor, specs), failures))
            offset = end
    finally:
        done.set()
        proxy.close()
        planner.close()
    assert proxy.freezes >= 2
    assert replayer.state == table_state(mariadb, mysql_db, "t")


def test_restart_after_binlog_purge_names_the_missing_file(spark: Any, tmp_path: Path) -> None:
    with EmbeddedMariaDB() as server:
        server.execute("CREATE DATABASE d")
        server.execute("CREATE TABLE d.t (id INT PRIMARY KEY)")
        server.execute("INSERT INTO d.t VALUES (1)")
        options = {**server.source_options(), "database-name": "d", "table-name": "t"}

        def run() -> Any:
            query = (
                spark.readStream.format("mysql-cdc")
                .options(**options)
                .load()
                .writeStream.format("noop")
                .option("checkpointLocation", str(tmp_path / "ckpt"))
                .trigger(availableNow=True)
                .start()
            )
            try:
                query.awaitTermination(300)
            except Exception as exc:  # awaitTermination raises the query's failure
                return exc
            return query.exception()

        assert run() is None
        old_file = server.execute("SHOW MASTER STATUS")[0][0]
        server.execute("FLUSH BINARY LOGS")
        server.execute("INSERT INTO d.t VALUES (2)")
        server.execute("FLUSH BINARY LOGS")
        newest = server.execute("SHOW MASTER STATUS")[0][0]
        # the first run's binlog readers may still be on the old file for a moment, and the
        # server does not purge a file in use: purge until it is gone
        deadline = time.monotonic() + 60
        while True:
            server.execute(f"PURGE BINARY LOGS TO '{newest}'")
            if old_file not in [row[0] for row in server.execute("SHOW BINARY LOGS")]:
                break
            assert time.monotonic() < deadline, f"{old_file} was never purged"
            time.sleep(0.5)
        error = run()
        assert error is not None
        assert f"binlog file {old_file}" in str(error) and "has been purged" in str(error)
        assert options["password"] not in str(error)

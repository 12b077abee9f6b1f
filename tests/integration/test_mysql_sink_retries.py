"""A log read that writes Arrow buffers (column sinks) survives lost connections: the
retry skips what was delivered without decoding it again, so nothing reaches a sink twice
and the columns equal a clean read's."""

from __future__ import annotations

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog.reader import read_blocks_with_retries
from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import ColumnSinks
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.server.types import arrow_type
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded import EmbeddedMariaDB
from tests.support.tcp_proxy import CuttableProxy

NAMES = ("insert", "update_preimage", "update_postimage", "delete")


def test_sink_read_survives_killed_connections(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, s VARCHAR(20))", database=mysql_db)
    config = parse_config(
        {**mariadb.source_options(), "database-name": mysql_db, "table-name": "t"}
    )
    source = MySqlCdcSource(config)
    tables = source.tables
    types = {t: [arrow_type(c) for c in table.columns] for t, table in tables.items()}
    (table_id,) = tables
    start = source.current_position()
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        for i in range(300):
            cur.execute("INSERT INTO t VALUES (%s, 0, %s)", (i, f"r{i}"))
            cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (i,))
    end = source.current_position()
    source.close()

    def read(port: int, cut: CuttableProxy | None) -> tuple[list[int], list[pa.Array]]:
        options = {
            **mariadb.source_options(),
            "port": str(port),
            "database-name": mysql_db,
            "table-name": "t",
            "connect.max-retries": "5",
        }
        sinks = ColumnSinks(types, NAMES)
        counts = []
        for block in read_blocks_with_retries(
            parse_config(options), tables, start, end, 7103, sinks=sinks
        ):
            assert block.sunk is not None
            counts.append(block.sunk)
            if cut is not None and len(counts) in (100, 250, 400):
                cut.cut()  # the network fails three times mid-read
        return counts, sinks.take(table_id)

    clean_counts, clean = read(mariadb.port, None)
    proxy = CuttableProxy(mariadb.port)
    try:
        counts, got = read(proxy.port, proxy)
    finally:
        proxy.close()
    assert proxy.cuts >= 3
    assert counts == clean_counts and sum(counts) == 900
    for a, b in zip(got, clean, strict=True):
        assert a.equals(b)

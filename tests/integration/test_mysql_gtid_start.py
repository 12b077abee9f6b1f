"""Starting from a MariaDB GTID position in a binlog with several replication domains.

The test writes in a second domain, which stays in the server's GTID state for good: it
runs on a server of its own so the shared one keeps a single domain.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sparkcdc.connectors.mysql.binlog.locate import position_for_gtid
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.embedded import EmbeddedMariaDB


@pytest.fixture(scope="module")
def own_mariadb() -> Iterator[EmbeddedMariaDB]:
    server = EmbeddedMariaDB().start()
    try:
        yield server
    finally:
        server.stop()


def _write(mariadb: EmbeddedMariaDB, db: str, domain: int, value: int) -> None:
    with mariadb.connect(db) as conn, conn.cursor() as cur:
        cur.execute(f"SET SESSION gtid_domain_id = {domain}")
        cur.execute("INSERT INTO t VALUES (%s)", (value,))
        conn.commit()


def test_multi_domain_positions_resume_exactly_or_fail_clearly(
    own_mariadb: EmbeddedMariaDB,
) -> None:
    mariadb = own_mariadb
    mysql_db = mariadb.create_database("gtid_domains")
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mysql_db)
    for i, domain in enumerate([7, 0, 7, 0], start=1):
        _write(mariadb, mysql_db, domain, i)
    ((taken,),) = mariadb.execute("SELECT @@gtid_binlog_pos")
    _write(mariadb, mysql_db, 7, 5)
    config = parse_config(
        {**mariadb.source_options(), "database-name": mysql_db, "table-name": "t"}
    )
    source = MySqlCdcSource(config)
    try:
        conn = source.dialect.conn
        at = position_for_gtid(conn, config, str(taken), "mariadb", config.server_ids[1])
        events = mariadb.execute(f"SHOW BINLOG EVENTS IN '{at.file}' FROM {at.pos} LIMIT 1")
        assert events[0][2] == "Gtid" and "7-" in events[0][5]  # the domain-7 write of 5

        # the same position without domain 7: its earlier transactions are not included,
        # so no single binlog position resumes it exactly
        without_7 = ",".join(g for g in str(taken).split(",") if not g.startswith("7-"))
        with pytest.raises(SourceConfigurationError, match=r"gtid-set.*interleave"):
            position_for_gtid(conn, config, without_7, "mariadb", config.server_ids[1])
    finally:
        source.close()

"""The harness's MariaDB is real and configured for CDC."""

from __future__ import annotations

from sparkcdc.embedded import EmbeddedMariaDB


def test_write_read_row_and_binlog_position(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1, 'één')", database=mysql_db)
    assert mariadb.execute("SELECT id, name FROM t", database=mysql_db) == [(1, "één")]

    status = mariadb.execute("SHOW MASTER STATUS")
    assert status and status[0][0].startswith("binlog.") and status[0][1] > 4
    (gtid,) = mariadb.execute("SELECT @@gtid_binlog_pos")[0]
    domain, server, seq = (int(x) for x in gtid.split("-"))
    assert (domain, server) == (0, mariadb.server_id) and seq >= 2

    settings = dict(
        mariadb.execute(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', "
            "'binlog_row_image', 'binlog_row_metadata', 'gtid_strict_mode', 'character_set_server')"
        )
    )
    assert settings == {
        "log_bin": "ON",
        "binlog_format": "ROW",
        "binlog_row_image": "FULL",
        "binlog_row_metadata": "NO_LOG",  # the server's default: no column names in events
        "gtid_strict_mode": "ON",
        "character_set_server": "utf8mb4",
    }


def test_cdc_user_has_exactly_read_and_replication_privileges(mariadb: EmbeddedMariaDB) -> None:
    with mariadb.connect(account=mariadb.cdc) as conn, conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = " ".join(row[0] for row in cur.fetchall())
        cur.execute("SHOW MASTER STATUS")
        assert cur.fetchall()
    assert "SELECT" in grants and "REPLICATION SLAVE" in grants
    assert "BINLOG MONITOR" in grants or "REPLICATION CLIENT" in grants
    for forbidden in ("INSERT", "UPDATE", "DELETE", "CREATE", "ALL PRIVILEGES"):
        assert forbidden not in grants

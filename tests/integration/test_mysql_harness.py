"""The embedded MySQL-family servers (embedded/): each flavour starts, is set up for CDC,
keeps root behind a generated password and file access in a private folder, and a MySQL
primary feeds a replica by GTID auto-position."""

from __future__ import annotations

import pymysql
import pytest

from sparkcdc.embedded import EmbeddedMySQL
from sparkcdc.embedded.binlog_server import BinlogServer

FLAVORS = ["mariadb", "mysql8", "mysql57"]


@pytest.mark.parametrize("binlog_server", FLAVORS, indirect=True)
def test_root_needs_its_generated_password_over_tcp(binlog_server: BinlogServer) -> None:
    with pytest.raises(pymysql.err.OperationalError) as refused:
        pymysql.connect(host=binlog_server.host, port=binlog_server.port, user="root")
    assert refused.value.args[0] == 1045  # access denied
    assert len(binlog_server.root.password) >= 16
    ((user,),) = binlog_server.execute("SELECT CURRENT_USER()")
    assert str(user).startswith("root@")
    roots = binlog_server.execute(
        "SELECT host FROM mysql.user WHERE user = 'root' AND "
        + (
            "authentication_string = ''"
            if binlog_server.flavor != "mariadb"
            else "(authentication_string = '' AND password = '')"
        )
    )
    assert roots == []  # no root account anywhere without a password


@pytest.mark.parametrize("binlog_server", FLAVORS, indirect=True)
def test_sql_reads_and_writes_files_only_in_a_private_folder(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    ((folder,),) = binlog_server.execute("SELECT @@secure_file_priv")
    assert str(folder).rstrip("/") == str(binlog_server.files_dir)
    assert binlog_server.files_dir.stat().st_mode & 0o077 == 0
    assert binlog_server.execute("SELECT LOAD_FILE('/etc/passwd')") == [(None,)]
    with pytest.raises(pymysql.err.MySQLError) as refused:
        binlog_server.execute("SELECT 1 INTO DUMPFILE '/tmp/sparkcdc-harness-probe'")
    assert refused.value.args[0] == 1290  # --secure-file-priv


@pytest.mark.parametrize("binlog_server", FLAVORS, indirect=True)
def test_each_flavour_is_set_up_for_cdc(binlog_server: BinlogServer) -> None:
    ((version,),) = binlog_server.execute("SELECT VERSION()")
    expected = {"mariadb": "MariaDB", "mysql8": "8.0.15", "mysql57": "5.7.19"}
    assert expected[binlog_server.flavor] in str(version)
    variables = dict(
        binlog_server.execute(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', "
            "'binlog_row_image', 'gtid_mode', 'enforce_gtid_consistency')"
        )
    )
    assert variables["log_bin"] == "ON"
    assert variables["binlog_format"] == "ROW"
    assert variables["binlog_row_image"] == "FULL"
    if binlog_server.flavor != "mariadb":
        assert variables["gtid_mode"] == "ON"
        assert variables["enforce_gtid_consistency"] == "ON"
    with binlog_server.connect(account=binlog_server.cdc) as conn, conn.cursor() as cur:
        cur.execute("SHOW GRANTS")
        grants = " ".join(str(g) for (g,) in cur.fetchall())
    client = "BINLOG MONITOR" if binlog_server.flavor == "mariadb" else "REPLICATION CLIENT"
    for privilege in ("SELECT", "REPLICATION SLAVE", client):
        assert privilege in grants
    assert "INSERT" not in grants and "SUPER" not in grants


def test_mysql8_keeps_the_defaults_users_keep(mysql8: EmbeddedMySQL) -> None:
    ((plugin, collation),) = mysql8.execute(
        "SELECT plugin, @@collation_server FROM mysql.user WHERE user = %s", (mysql8.cdc.user,)
    )
    assert (plugin, collation) == ("caching_sha2_password", "utf8mb4_0900_ai_ci")


def test_a_mysql_replica_follows_its_primary_by_gtid_auto_position() -> None:
    with EmbeddedMySQL("mysql8") as primary, EmbeddedMySQL("mysql8") as replica:
        replica.replicate_from(primary)
        primary.create_database("shop")
        primary.execute("CREATE TABLE shop.t (id INT PRIMARY KEY)")
        primary.execute("INSERT INTO shop.t VALUES (1), (2)")
        replica.catch_up(primary)
        assert replica.execute("SELECT id FROM shop.t ORDER BY id") == [(1,), (2,)]
        ((executed,),) = replica.execute("SELECT @@GLOBAL.gtid_executed")
        ((uuid,),) = primary.execute("SELECT @@server_uuid")
        assert str(uuid) in str(executed)  # the primary's transactions, under its uuid

"""The server set-up the README and docs/ show, run against the servers the tests use: the
SQL as it is written (the user's name made unique, so runs do not meet), then what the
sources need from it checked as that user; the ``my.cnf`` settings are the ones the test
MariaDB runs with. tests/unit/test_docs.py finds the blocks and checks every other kind."""

from __future__ import annotations

import configparser
import re
import uuid

import pymysql

from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from tests.unit.test_docs import PAGES, Block, blocks

SQL = [b for page in PAGES for b in blocks(page) if b.lang == "sql"]
INI = [b for page in PAGES for b in blocks(page) if b.lang == "ini"]


def _postgres(block: Block) -> bool:
    return "postgres" in block.page.name


def statements(text: str) -> list[str]:
    """The statements of a block, comments removed."""
    text = re.sub(r"--[^\n]*", "", text)
    return [s.strip() for s in text.split(";") if s.strip()]


def test_the_mysql_set_up_gives_a_user_that_can_capture(mariadb: EmbeddedMariaDB) -> None:
    mysql_blocks = [b for b in SQL if not _postgres(b)]
    assert len(mysql_blocks) >= 2, "the README and docs/mariadb-mysql.md show the grants"
    for block in mysql_blocks:
        user = f"cdc_{uuid.uuid4().hex[:8]}"
        for statement in statements(block.text):
            mariadb.execute(statement.replace("'cdc'", f"'{user}'"))
        try:
            with (
                pymysql.connect(
                    host=mariadb.host, port=mariadb.port, user=user, password="change-me"
                ) as conn,
                conn.cursor() as cur,
            ):
                cur.execute("SHOW MASTER STATUS")  # REPLICATION CLIENT
                assert cur.fetchone() is not None, block.where
                cur.execute("SHOW GRANTS")
                grants = " ".join(row[0] for row in cur.fetchall())
                assert "REPLICATION SLAVE" in grants and "SELECT" in grants, block.where
        finally:
            mariadb.execute(f"DROP USER IF EXISTS '{user}'@'%'")


def test_the_my_cnf_settings_are_the_test_servers(mariadb: EmbeddedMariaDB) -> None:
    assert INI, "docs/mariadb-mysql.md shows the server's settings"
    for block in INI:
        config = configparser.ConfigParser()
        config.read_string(block.text)
        for key, value in config["mysqld"].items():
            rows = mariadb.execute(f"SHOW GLOBAL VARIABLES LIKE '{key}'")
            assert rows, f"{block.where}: no server variable {key}"
            shown = str(rows[0][1])
            if key == "log_bin":  # the binlog's base name: any name turns it on
                assert shown == "ON", block.where
            elif key != "server_id":
                assert shown.upper() == value.upper(), f"{block.where}: {key} is {shown}"


def test_the_postgres_set_up_gives_a_role_that_can_capture(
    postgres: EmbeddedPostgres, pg_db: str
) -> None:
    pg_blocks = [b for b in SQL if _postgres(b)]
    assert pg_blocks, "docs/postgres.md shows the set-up"
    with postgres.connect(pg_db) as conn:
        conn.execute("CREATE TABLE public.orders (id int PRIMARY KEY, item text)")
        for block in pg_blocks:
            role = f"cdc_{uuid.uuid4().hex[:8]}"
            for statement in statements(block.text):
                conn.execute(re.sub(r"\bcdc\b", role, statement))
            identity = conn.execute(
                "SELECT relreplident FROM pg_class WHERE oid = 'public.orders'::regclass"
            ).fetchone()
            assert identity == ("f",), block.where  # REPLICA IDENTITY FULL
            can = conn.execute(
                "SELECT rolreplication, has_table_privilege(%s, 'public.orders', 'SELECT') "
                "FROM pg_roles WHERE rolname = %s",
                (role, role),
            ).fetchone()
            assert can == (True, True), block.where
            published = conn.execute(
                "SELECT count(*) FROM pg_publication_tables WHERE tablename = 'orders'"
            ).fetchone()
            assert published == (1,), block.where
            conn.execute("DROP PUBLICATION IF EXISTS shop_orders")
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")

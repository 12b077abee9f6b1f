"""A JDBC sink killed (SIGKILL) right after its CREATE TABLE of a new target
(``SPARKCDC_CRASH_AT=jdbc-target-created``, core/crash_points.py): the restart finds the
target with its columns' comments (``include-comments.enabled``) and marked as a sink's.
MariaDB commits each DDL statement at once, so the comments and the mark are in that one
statement; PostgreSQL undoes the uncommitted create and the restart makes it again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from sparkcdc.core.comments import Comments
from sparkcdc.core.crash_points import CRASH_AT, JDBC_TARGET_CREATED
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import TARGET_MARK
from sparkcdc.sinks.jdbc.sink import JdbcSink
from tests.support.runs import ROOT

#: Opens a JDBC sink on the target of :func:`commented_table` in a process of its own
#: (the options, password included, through the environment: never in its arguments).
OPEN = """
import json, os
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.sink import JdbcSink
from tests.integration.test_jdbc_target_crash import commented_table
options = json.loads(os.environ["TARGET_OPTIONS"])
JdbcSink(JdbcSinkConfig.from_options(options), "crash").open(None, [commented_table()])
"""
COMMENTS = {"name": "who ordered it: 100% sure, it's 'quoted'", "qty": "how many"}


def commented_table() -> SinkTable:
    schema = StructType(
        [
            StructField("id", LongType(), False),
            StructField("name", StringType()),
            StructField("qty", IntegerType()),
        ]
    )
    comments = Comments("the orders", tuple(COMMENTS.items()))
    return SinkTable(TableId("shop", "orders"), schema, ("id",), comments=comments)


def target_comments(server: EmbeddedMariaDB | EmbeddedPostgres, database: str) -> dict[str, str]:
    """The target's column comments and its table comment (under ``""``)."""
    if isinstance(server, EmbeddedPostgres):
        rows = server.execute(
            "SELECT a.attname, col_description(a.attrelid, a.attnum) FROM pg_attribute a "
            "WHERE a.attrelid = 'public.crash_orders'::regclass AND a.attnum > 0 UNION ALL "
            "SELECT '', obj_description('public.crash_orders'::regclass, 'pg_class')",
            dbname=database,
        )
    else:
        rows = server.execute(
            "SELECT COLUMN_NAME, COLUMN_COMMENT FROM information_schema.COLUMNS WHERE "
            "TABLE_SCHEMA = %s AND TABLE_NAME = 'crash_orders' UNION ALL SELECT '', "
            "TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = 'crash_orders'",
            (database, database),
            database=database,
        )
    return {str(n): str(c) for n, c in rows if c}


@pytest.mark.parametrize("family", ["mariadb", "postgresql"])
def test_a_target_created_right_before_a_crash_keeps_its_comments_and_mark(
    family: str, request: pytest.FixtureRequest, scratch: Path
) -> None:
    if family == "mariadb":
        server: EmbeddedMariaDB | EmbeddedPostgres = request.getfixturevalue("mariadb")
        database = request.getfixturevalue("mysql_db")
        user, password = f"crash_{uuid.uuid4().hex[:6]}", "Crash-" + uuid.uuid4().hex[:10]
        server.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))
        server.execute(f"GRANT ALL ON `{database}`.* TO '{user}'@'%'")
    else:
        postgres: EmbeddedPostgres = request.getfixturevalue("postgres")
        server, database = postgres, request.getfixturevalue("pg_db")
        user, password = postgres.user, postgres.password
    options = {
        "url": f"{family}://{server.host}:{server.port}/{database}",
        "username": user,
        "password": password,
        "table-name": "crash_{table}",
    }
    env = {**os.environ, "TARGET_OPTIONS": json.dumps(options), CRASH_AT: JDBC_TARGET_CREATED}
    done = subprocess.run(
        [sys.executable, "-c", OPEN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]

    sink = JdbcSink(JdbcSinkConfig.from_options(options), "crash")
    try:
        sink.open(None, [commented_table()])  # the restart
    finally:
        sink.close()
    # the table's comment is the sink's mark (the source's table comment is not kept)
    assert target_comments(server, database) == {**COMMENTS, "": TARGET_MARK}


def test_a_comment_longer_than_mariadb_keeps_is_cut_not_refused(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """A PostgreSQL source's column comment may be longer than MySQL/MariaDB's 1024
    characters; the sink's strict session would refuse the one CREATE TABLE holding it,
    and the target could never be created: it is cut (and said) instead."""
    long = "é" * 1500
    schema = StructType([StructField("id", LongType(), False), StructField("name", StringType())])
    comments = Comments(None, (("name", long),))
    table = SinkTable(TableId("shop", "orders"), schema, ("id",), comments=comments)
    user, password = f"long_{uuid.uuid4().hex[:6]}", "Long-" + uuid.uuid4().hex[:10]
    mariadb.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))
    mariadb.execute(f"GRANT ALL ON `{mysql_db}`.* TO '{user}'@'%'")
    options = {
        "url": f"mariadb://{mariadb.host}:{mariadb.port}/{mysql_db}",
        "username": user,
        "password": password,
        "table-name": "crash_{table}",
    }
    sink = JdbcSink(JdbcSinkConfig.from_options(options), "long")
    try:
        sink.open(None, [table])
    finally:
        sink.close()
    assert target_comments(mariadb, mysql_db) == {"name": long[:1024], "": TARGET_MARK}

"""Capture without row metadata (issue 61): the servers run at their defaults (MariaDB
``binlog_row_metadata=NO_LOG``, MySQL 8.0 ``MINIMAL``), so row events carry no column
names, and every row is decoded by column position with the table's columns as of its
position: the schema history, which is the offsets' columns advanced by the binlog's DDL
(docs/design.md, "Schema changes"). Each kind of DDL the history must follow is followed
by a row whose columns are checked; a restart from a checkpoint taken before a run of
ALTERs replays the same rows; a start at an older position is refused across a change;
with ``FULL`` the event's names are a cross-check that stops a wrong history."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SchemaError
from sparkcdc.embedded.binlog_server import BinlogServer
from tests.conftest import on_flavors
from tests.support.inprocess import run_batches

mariadb = on_flavors("mariadb", "mysql8", "mysql57")

#: What each flavour's server ships (and the harness keeps).
DEFAULT_METADATA = {"mariadb": "NO_LOG", "mysql": "MINIMAL"}


def source(server: BinlogServer, database: str, tables: str, **extra: str) -> MySqlCdcSource:
    options = {
        **server.source_options(),
        "database-name": database,
        "table-name": tables,
        "server-id": "6300-6310",
        **extra,
    }
    return MySqlCdcSource(parse_config(options))


def row_metadata(server: BinlogServer) -> str:
    return str(server.execute("SELECT @@GLOBAL.binlog_row_metadata")[0][0]).upper()


def images(rows: list[dict[str, Any]], table: str = "t") -> list[tuple[str, dict[str, Any]]]:
    """The envelope's rows of ``table``: (change type, the image as its own columns)."""
    return [
        (r["_change_type"], json.loads(r["after"] or r["before"]))
        for r in rows
        if r["table_name"] == table
    ]


@contextmanager
def row_metadata_set(server: BinlogServer, value: str) -> Iterator[None]:
    before = row_metadata(server)
    server.execute(f"SET GLOBAL binlog_row_metadata = '{value}'")
    try:
        yield
    finally:
        server.execute(f"SET GLOBAL binlog_row_metadata = '{before}'")


def is_mariadb(server: BinlogServer) -> bool:
    return "mariadb" in str(server.execute("SELECT VERSION()")[0][0]).lower()


def is_mysql57(server: BinlogServer) -> bool:
    return str(server.execute("SELECT VERSION()")[0][0]).startswith("5.7.")


def test_the_servers_write_no_column_names(mariadb: BinlogServer) -> None:
    if is_mysql57(mariadb):  # no such setting: never any names
        assert not mariadb.execute("SHOW VARIABLES LIKE 'binlog_row_metadata'")
        return
    flavor = "mariadb" if is_mariadb(mariadb) else "mysql"
    assert row_metadata(mariadb) == DEFAULT_METADATA[flavor]


#: (statement, the row written after it, its image as the stream must decode it). Every
#: statement keeps each column's binlog type at some other position or swaps names of
#: equal types, so a decoder that took names from anywhere but the history would misplace
#: values.
COLUMN_DDL = [
    (
        "ALTER TABLE t ADD COLUMN c INT FIRST",
        "INSERT INTO t VALUES (7, 2, 20, 200)",
        {"c": 7, "id": 2, "a": 20, "b": 200},
    ),
    (
        "ALTER TABLE t ADD COLUMN c INT AFTER id",
        "INSERT INTO t VALUES (2, 7, 20, 200)",
        {"id": 2, "c": 7, "a": 20, "b": 200},
    ),
    ("ALTER TABLE t DROP COLUMN a", "INSERT INTO t VALUES (2, 200)", {"id": 2, "b": 200}),
    (
        "ALTER TABLE t MODIFY a INT AFTER b",
        "INSERT INTO t VALUES (2, 200, 20)",
        {"id": 2, "b": 200, "a": 20},
    ),
    (
        "ALTER TABLE t MODIFY b BIGINT FIRST",
        "INSERT INTO t VALUES (200, 2, 20)",
        {"b": 200, "id": 2, "a": 20},
    ),
    (
        "ALTER TABLE t CHANGE a z INT",
        "INSERT INTO t VALUES (2, 20, 200)",
        {"id": 2, "z": 20, "b": 200},
    ),
    (
        "ALTER TABLE t CHANGE a a INT AFTER b",
        "INSERT INTO t VALUES (2, 200, 20)",
        {"id": 2, "b": 200, "a": 20},
    ),
    (
        "ALTER TABLE t RENAME COLUMN a TO tmp; ALTER TABLE t RENAME COLUMN b TO a; "
        "ALTER TABLE t RENAME COLUMN tmp TO b",
        "INSERT INTO t VALUES (2, 20, 200)",
        {"id": 2, "b": 20, "a": 200},
    ),
    (
        "ALTER TABLE t CHANGE a tmp INT; ALTER TABLE t CHANGE b a INT; "
        "ALTER TABLE t CHANGE tmp b INT",
        "INSERT INTO t VALUES (2, 20, 200)",
        {"id": 2, "b": 20, "a": 200},
    ),
]


@pytest.mark.parametrize(("ddl", "insert", "image"), COLUMN_DDL, ids=[d for d, _, _ in COLUMN_DDL])
def test_a_row_after_a_column_change_decodes_to_its_columns(
    mariadb: BinlogServer, mysql_db: str, ddl: str, insert: str, image: dict[str, Any]
) -> None:
    """Rows before and after the change, in one read of the envelope (two tables)."""
    if is_mysql57(mariadb):  # no RENAME COLUMN there: the same rename by CHANGE
        ddl = re.sub(r"RENAME COLUMN (\w+) TO (\w+)", r"CHANGE \1 \2 INT", ddl)
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)", database=mysql_db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY)", database=mysql_db)
    cdc = source(mariadb, mysql_db, "t|u")
    rows: list[dict[str, Any]] = []
    try:
        offset = run_batches(cdc, None, rows.extend)
        for statement in ("INSERT INTO t VALUES (1, 10, 100)", *ddl.split("; "), insert):
            mariadb.execute(statement, database=mysql_db)
        run_batches(cdc, offset, rows.extend)
    finally:
        cdc.close()
    assert images(rows) == [("insert", {"id": 1, "a": 10, "b": 100}), ("insert", image)]


def test_table_ddl_around_a_captured_table_is_followed(
    mariadb: BinlogServer, mysql_db: str
) -> None:
    """DDL of other tables and other databases (one with a table of the same name, whose
    columns differ), CREATE TABLE ... LIKE / AS SELECT, partition DDL and a TRUNCATE:
    the captured tables' rows around them decode to their own columns, and tables created
    while the stream runs are captured with the columns they were created with."""
    other = mariadb.create_database(f"{mysql_db}_o")
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)", database=mysql_db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY)", database=mysql_db)
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, x VARCHAR(4))", database=other)
    cdc = source(
        mariadb,
        mysql_db,
        "t|u|t_like|t_sel",
        **{"scan.newly-added-table.enabled": "true", "truncate.handling.mode": "skip"},
    )
    rows: list[dict[str, Any]] = []
    script = [
        (mysql_db, "INSERT INTO t VALUES (1, 10, 100)"),
        (other, "ALTER TABLE t ADD COLUMN y INT FIRST"),  # the other database's t
        (other, "INSERT INTO t VALUES (5, 1, 'o')"),
        (mysql_db, f"ALTER TABLE {other}.t DROP COLUMN x"),  # named from here
        (mysql_db, "INSERT INTO t VALUES (2, 20, 200)"),
        (mysql_db, "CREATE TABLE t_like LIKE t"),
        (mysql_db, "INSERT INTO t_like VALUES (3, 30, 300)"),
        (mysql_db, "ALTER TABLE u PARTITION BY HASH(id) PARTITIONS 2"),
        (mysql_db, "INSERT INTO u VALUES (4)"),
        (mysql_db, "ALTER TABLE u REMOVE PARTITIONING"),
        (mysql_db, "TRUNCATE TABLE t"),
        (mysql_db, "INSERT INTO t VALUES (6, 60, 600)"),
        (mysql_db, "INSERT INTO u VALUES (5)"),
    ]
    if is_mariadb(mariadb):  # MySQL 8.0.15 refuses CREATE ... SELECT with GTIDs on
        script[7:7] = [
            (mysql_db, "CREATE TABLE t_sel (PRIMARY KEY (id)) AS SELECT id, b, a FROM t"),
            (mysql_db, "INSERT INTO t_sel VALUES (9, 900, 90)"),
        ]
    try:
        offset = run_batches(cdc, None, rows.extend)
        for database, statement in script:
            mariadb.execute(statement, database=database)
        run_batches(cdc, offset, rows.extend)
    finally:
        cdc.close()
    assert images(rows) == [
        ("insert", {"id": 1, "a": 10, "b": 100}),
        ("insert", {"id": 2, "a": 20, "b": 200}),
        ("insert", {"id": 6, "a": 60, "b": 600}),
    ]
    assert [i for _, i in images(rows, "u")] == [{"id": 4}, {"id": 5}]
    assert {json.dumps(i, sort_keys=True) for _, i in images(rows, "t_like")} == {
        json.dumps({"id": 3, "a": 30, "b": 300}, sort_keys=True)
    }
    if is_mariadb(mariadb):
        by_key = {i["id"]: i for _, i in images(rows, "t_sel")}
        assert list(by_key[9].items()) == [("id", 9), ("b", 900), ("a", 90)]
        assert by_key[2] == {"id": 2, "b": 200, "a": 20}


def test_a_restart_before_a_run_of_alters_replays_the_same_rows(
    mariadb: BinlogServer, mysql_db: str
) -> None:
    """A checkpoint taken before several ALTERs: a new query from it (a restart, a replay)
    decodes every row with the columns it was written with, and the replayed rows rebuild
    the table as it is."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(8))", database=mysql_db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY)", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1, 10, 'x')", database=mysql_db)
    first: list[dict[str, Any]] = []
    cdc = source(mariadb, mysql_db, "t|u")
    try:
        checkpoint = run_batches(cdc, None, first.extend)
    finally:
        cdc.close()
    script = [
        "INSERT INTO t VALUES (2, 20, 'y')",
        "ALTER TABLE t ADD COLUMN c INT FIRST",
        "UPDATE t SET c = 1, a = 11 WHERE id = 1",
        "ALTER TABLE t CHANGE a b2 INT",
        "ALTER TABLE t CHANGE b a VARCHAR(8)",
        "INSERT INTO t VALUES (3, 3, 30, 'z')",
        "ALTER TABLE t DROP COLUMN c, MODIFY b2 BIGINT AFTER a",
        "DELETE FROM t WHERE id = 2",
        "INSERT INTO t VALUES (4, 'w', 40)",
        "ALTER TABLE t CHANGE a a VARCHAR(16) FIRST",
        "UPDATE t SET a = 'v' WHERE id = 3",
        "UPDATE t SET b2 = b2 + 1",  # every key's last image in the table's last shape
    ]
    for statement in script:
        mariadb.execute(statement, database=mysql_db)
    runs: list[list[tuple[str, dict[str, Any]]]] = []
    for _ in range(2):  # the run after the checkpoint, then its replay
        rows: list[dict[str, Any]] = []
        cdc = source(mariadb, mysql_db, "t|u")
        try:
            run_batches(cdc, checkpoint, rows.extend)
        finally:
            cdc.close()
        runs.append(images(rows))
    assert runs[0] == runs[1]
    replayed = {i["id"]: i for _, i in images(first)}
    for kind, image in runs[0]:
        if kind == "delete":
            replayed.pop(image["id"])
        elif kind != "update_preimage":
            replayed[image["id"]] = image
    table = [
        dict(zip(("a", "id", "b2"), r, strict=True))
        for r in mariadb.execute("SELECT a, id, b2 FROM t ORDER BY id", database=mysql_db)
    ]
    assert [replayed[k] for k in sorted(replayed)] == table
    assert [list(replayed[k]) for k in sorted(replayed)] == [["a", "id", "b2"]] * 3


def test_a_start_at_an_older_position_is_refused_across_a_column_change(
    mariadb: BinlogServer, mysql_db: str
) -> None:
    """``specific-offset`` before a change: the columns then are not today's, and no
    offset holds them, so the start is refused with the statement and how to start; from
    after the change it starts and decodes the rows there."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)", database=mysql_db)
    file, pos = mariadb.execute("SHOW MASTER STATUS")[0][:2]
    mariadb.execute("INSERT INTO t VALUES (1, 10, 100)", database=mysql_db)
    mariadb.execute("ALTER TABLE t CHANGE a tmp INT", database=mysql_db)
    after_file, after_pos = mariadb.execute("SHOW MASTER STATUS")[0][:2]
    mariadb.execute("INSERT INTO t VALUES (2, 20, 200)", database=mysql_db)
    at = {"scan.startup.mode": "specific-offset"}
    cdc = source(
        mariadb,
        mysql_db,
        "t",
        **at,
        **{"scan.startup.specific-offset.file": file, "scan.startup.specific-offset.pos": str(pos)},
    )
    try:
        with pytest.raises(SchemaError) as refused:
            cdc.initial_offset()
    finally:
        cdc.close()
    message = str(refused.value)
    assert f"table {mysql_db}.t changed its columns after it" in message
    assert "CHANGE a tmp INT" in message and "'initial'" in message
    cdc = source(
        mariadb,
        mysql_db,
        "t",
        **at,
        **{
            "scan.startup.specific-offset.file": after_file,
            "scan.startup.specific-offset.pos": str(after_pos),
        },
    )
    rows: list[dict[str, Any]] = []
    try:
        run_batches(cdc, None, rows.extend)
    finally:
        cdc.close()
    assert [{k: r[k] for k in ("id", "tmp", "b")} for r in rows] == [{"id": 2, "tmp": 20, "b": 200}]


@pytest.mark.parametrize("mariadb", ["mariadb", "mysql8"], indirect=True)  # 5.7: no metadata
def test_full_row_metadata_is_a_cross_check_of_the_history(
    mariadb: BinlogServer, mysql_db: str
) -> None:
    """With FULL, a history that names a position otherwise than the event (here: columns
    renamed with the binlog off, so no statement tells the history) stops the read, naming
    both names; the rows before it were decoded."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)", database=mysql_db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY)", database=mysql_db)
    with row_metadata_set(mariadb, "FULL"):
        cdc = source(mariadb, mysql_db, "t|u")
        rows: list[dict[str, Any]] = []
        try:
            offset = run_batches(cdc, None, rows.extend)
            mariadb.execute("INSERT INTO t VALUES (1, 10, 100)", database=mysql_db)
            offset = run_batches(cdc, offset, rows.extend)
            assert images(rows) == [("insert", {"id": 1, "a": 10, "b": 100})]
            with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
                cur.execute("SET SESSION sql_log_bin = 0")
                for ddl in ("a tmp", "b a", "tmp b"):
                    cur.execute(f"ALTER TABLE t CHANGE {ddl} INT")
                cur.execute("SET SESSION sql_log_bin = 1")
                cur.execute("INSERT INTO t VALUES (2, 20, 200)")
                conn.commit()
            with pytest.raises(SchemaError) as stopped:
                run_batches(cdc, offset, rows.extend)
        finally:
            cdc.close()
    message = str(stopped.value)
    assert "column 2 is b in the binlog's row metadata, a in the schema history" in message


def test_an_unparseable_statement_stops_the_stream_naming_it(
    mariadb: BinlogServer, mysql_db: str
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT)", database=mysql_db)
    cdc = source(mariadb, mysql_db, "t")
    try:
        offset = run_batches(cdc, None, lambda rows: None)
        mariadb.execute("ALTER TABLE t ADD COLUMN (b INT, c INT)", database=mysql_db)
        mariadb.execute("INSERT INTO t VALUES (1, 1, 2, 3)", database=mysql_db)
        with pytest.raises(SchemaError, match="not followed") as stopped:
            run_batches(cdc, offset, lambda rows: None)
    finally:
        cdc.close()
    assert "ADD COLUMN (b INT, c INT)" in str(stopped.value)

"""Which columns an ALTER gives values in existing rows without logging them
(binlog/ddl_rewrites.py): those rows are read again, so the rule must never miss one; a
needless read only costs time."""

from __future__ import annotations

import pytest

from sparkcdc.connectors.mysql.binlog.ddl_columns import alter_table
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.table import TableId

TABLE = CapturedTable(
    TableId("shop", "t"),
    (
        MySqlColumn("id", 1, "bigint", "bigint(20)", nullable=False, primary_key=True),
        MySqlColumn("b", 2, "varchar", "varchar(20)", charset="utf8mb4"),
        MySqlColumn("d", 3, "int", "int(11)"),
        MySqlColumn("p", 4, "decimal", "decimal(10,2)", precision=10, scale=2),
        MySqlColumn("u", 5, "int", "int(10) unsigned", unsigned=True),
        MySqlColumn("e", 6, "enum", "enum('a','b')", charset="utf8mb4"),
        MySqlColumn("n", 7, "int", "int(11)", nullable=False),
        MySqlColumn("tm", 8, "time", "time(3)", datetime_precision=3),
        MySqlColumn("big", 9, "decimal", "decimal(40,2)", precision=40, scale=2),
        MySqlColumn("flag", 10, "tinyint", "tinyint(1)"),
        MySqlColumn("tx", 11, "text", "text", charset="utf8mb4"),
        MySqlColumn("ts", 12, "timestamp", "timestamp"),
        MySqlColumn("dt", 13, "datetime", "datetime(3)", datetime_precision=3),
    ),
    ("id",),
    "id",
)


def rewritten(clauses: str) -> tuple[str, ...]:
    result = alter_table(f"ALTER TABLE t {clauses}", TABLE, "utf8mb4")
    assert result.changed
    return result.rewritten


@pytest.mark.parametrize(
    "clause",
    [
        "ADD COLUMN c INT",
        "ADD COLUMN c INT NULL",
        "ADD COLUMN c INT DEFAULT NULL",
        "ADD COLUMN c VARCHAR(5) CHARACTER SET latin1 COLLATE latin1_bin NULL COMMENT 'x'",
        "ADD COLUMN c TIMESTAMP NULL",
        "ADD COLUMN c INT INVISIBLE AFTER b",
    ],
)
def test_an_added_column_null_in_every_row_is_not_a_rewrite(clause: str) -> None:
    assert rewritten(clause) == ()


@pytest.mark.parametrize(
    "clause",
    [
        "ADD COLUMN c INT NOT NULL DEFAULT 5",
        "ADD COLUMN c INT DEFAULT 5",
        "ADD COLUMN c INT NOT NULL",  # the implicit default, 0
        "ADD COLUMN c VARCHAR(3) DEFAULT ''",
        "ADD COLUMN c DATETIME DEFAULT CURRENT_TIMESTAMP",
        "ADD COLUMN c TIMESTAMP",  # NOT NULL DEFAULT CURRENT_TIMESTAMP on older MariaDB
        "ADD COLUMN c INT DEFAULT (d * 2)",
        "ADD COLUMN c INT AS (d + 1) VIRTUAL",
        "ADD COLUMN c INT GENERATED ALWAYS AS (d + 1) STORED",
        "ADD COLUMN c INT AUTO_INCREMENT UNIQUE",
        "ADD COLUMN c ENUM('x','y') NOT NULL",  # the first label
    ],
)
def test_an_added_column_with_a_value_in_the_rows_there_is_a_rewrite(clause: str) -> None:
    assert rewritten(clause) == ("c",)


@pytest.mark.parametrize(
    "clause",
    [
        "MODIFY d BIGINT",
        "MODIFY d INT COMMENT 'why'",
        "MODIFY u BIGINT",  # unsigned into a larger signed integer
        "MODIFY p DECIMAL(12,4)",
        "MODIFY b VARCHAR(40)",
        "MODIFY b TEXT",
        "MODIFY b VARCHAR(20) COLLATE utf8mb4_bin",  # the same characters, compared anew
        "CHANGE b bb VARCHAR(20)",
        "RENAME COLUMN b TO bb",
        "MODIFY e ENUM('a','b','c')",
        "MODIFY n INT NOT NULL DEFAULT 1",
        "ALTER COLUMN d SET DEFAULT 4, ADD COLUMN c INT",
        "MODIFY d BIGINT DEFAULT 4 COMMENT 'x'",
        "MODIFY big DECIMAL(42,2)",  # read as text: the same digits
        "MODIFY dt DATETIME(6)",
        "MODIFY ts TIMESTAMP NULL",
        "MODIFY tx MEDIUMTEXT",
    ],
)
def test_a_retype_that_keeps_every_value_is_not_a_rewrite(clause: str) -> None:
    assert rewritten(clause) == ()


@pytest.mark.parametrize(
    ("clause", "column"),
    [
        ("MODIFY d INT NOT NULL", "d"),  # NULLs become 0 outside strict mode
        ("MODIFY d SMALLINT", "d"),
        ("MODIFY d INT UNSIGNED", "d"),  # negatives become 0
        ("MODIFY u INT", "u"),  # the largest unsigned values do not fit
        ("MODIFY p DECIMAL(10,1)", "p"),  # rounded
        ("MODIFY p DECIMAL(9,2)", "p"),
        ("MODIFY p DOUBLE", "p"),
        ("MODIFY d VARCHAR(20)", "d"),  # as text
        ("MODIFY b VARCHAR(5)", "b"),  # cut outside strict mode
        ("MODIFY b TINYTEXT", "b"),
        ("MODIFY b VARCHAR(20) CHARACTER SET latin1", "b"),  # converted
        ("CHANGE b bb VARCHAR(10)", "bb"),
        ("MODIFY e ENUM('b','a')", "e"),  # the same labels, other numbers
        ("MODIFY e ENUM('a')", "e"),
        ("MODIFY d DATETIME", "d"),
        ("MODIFY e ENUM('A','B')", "e"),  # labels by case
        ("MODIFY d INT AS (id + 1) STORED", "d"),  # computed anew
        ("MODIFY d INT GENERATED ALWAYS AS (id * 2) VIRTUAL", "d"),
        ("MODIFY d INT AUTO_INCREMENT UNIQUE", "d"),  # 0 and NULL renumbered
        ("MODIFY tm TIME(6)", "tm"),  # read as text with its digits
        ("MODIFY big DECIMAL(42,4)", "big"),  # read as text: '1.50' becomes '1.5000'
        ("MODIFY flag TINYINT(4)", "flag"),  # read as a boolean before
        ("MODIFY d TINYINT(1)", "d"),
        ("MODIFY tx TEXT(100)", "tx"),  # the server picks TINYTEXT
        ("MODIFY ts TIMESTAMP", "ts"),  # NOT NULL on MariaDB before 10.10
    ],
)
def test_a_retype_that_may_change_values_is_a_rewrite(clause: str, column: str) -> None:
    assert rewritten(clause) == (column,)


def test_rewrites_follow_the_column_through_the_statement() -> None:
    assert rewritten("ADD COLUMN c INT DEFAULT 1, RENAME COLUMN c TO cc") == ("cc",)
    assert rewritten("MODIFY d SMALLINT, DROP COLUMN d") == ()
    assert rewritten("DROP COLUMN d, ADD COLUMN d INT DEFAULT 2") == ("d",)
    assert rewritten("ADD COLUMN c INT DEFAULT 1, MODIFY c BIGINT") == ("c",)
    assert rewritten("ADD COLUMN c INT, ADD COLUMN f INT NOT NULL FIRST") == ("f",)
    assert rewritten("ADD COLUMN c INT, ALTER COLUMN c SET DEFAULT 5") == ("c",)

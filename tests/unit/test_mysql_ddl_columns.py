"""ALTER TABLE statements applied to a captured table's columns (binlog/ddl_columns.py):
the columns a later table map must show, and the statements that cannot be followed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog.ddl_columns import (
    UnfollowableStatement,
    alter_table,
    statement_tables,
)
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn, arrow_type
from sparkcdc.core.table import TableId

TABLE = CapturedTable(
    TableId("shop", "t"),
    (
        MySqlColumn("id", 1, "bigint", "bigint(20)", nullable=False, primary_key=True),
        MySqlColumn("b", 2, "varchar", "varchar(20)", charset="utf8mb4"),
        MySqlColumn("d", 3, "int", "int(11)"),
    ),
    ("id",),
    "id",
)


def shape(statement: str) -> list[tuple[str, str, pa.DataType, bool]]:
    result = alter_table(statement, TABLE, "utf8mb4")
    assert result.changed
    columns = result.table.columns
    assert [c.ordinal for c in columns] == list(range(1, len(columns) + 1))
    return [(c.name, c.column_type, arrow_type(c), c.nullable) for c in columns]


def test_add_with_positions_and_drop_in_one_statement() -> None:
    assert shape(
        "ALTER TABLE shop.t ADD COLUMN c DECIMAL(10,2) UNSIGNED NOT NULL DEFAULT 0 AFTER b, "
        "DROP COLUMN d, ADD `x y` TINYINT(1) FIRST"
    ) == [
        ("x y", "tinyint(1)", pa.bool_(), True),
        ("id", "bigint(20)", pa.int64(), False),
        ("b", "varchar(20)", pa.string(), True),
        ("c", "decimal(10,2) unsigned", pa.decimal128(10, 2), False),
    ]


def test_change_modify_and_rename_keep_or_move_the_column() -> None:
    assert shape("/* tool */ alter table t change b bb text character set latin1 first") == [
        ("bb", "text", pa.string(), True),
        ("id", "bigint(20)", pa.int64(), False),
        ("d", "int(11)", pa.int32(), True),
    ]
    assert shape("ALTER TABLE t MODIFY d BIGINT UNSIGNED, RENAME COLUMN b TO bb")[1:] == [
        ("bb", "varchar(20)", pa.string(), True),
        ("d", "bigint unsigned", pa.decimal128(20, 0), True),
    ]


def test_new_column_types_as_information_schema_names_them() -> None:
    columns = alter_table(
        "ALTER TABLE t ADD e ENUM('x','it''s') NOT NULL, ADD f DATETIME(3), ADD g JSON, "
        "ADD h BOOLEAN, ADD i TIMESTAMP(6) NULL, ADD j VARBINARY(8), ADD k REAL, "
        "ADD l VARCHAR(4) COLLATE latin1_swedish_ci",
        TABLE,
        "utf8mb4",
    ).table.columns[3:]
    found = {c.name: (c.data_type, c.column_type, c.charset) for c in columns}
    assert found == {
        "e": ("enum", "enum('x','it''s')", "utf8mb4"),
        "f": ("datetime", "datetime(3)", None),
        "g": ("longtext", "longtext", "utf8mb4"),  # MariaDB's JSON
        "h": ("tinyint", "tinyint(1)", None),
        "i": ("timestamp", "timestamp(6)", None),
        "j": ("varbinary", "varbinary(8)", None),
        "k": ("double", "double", None),
        "l": ("varchar", "varchar(4)", "latin1"),
    }
    assert columns[0].labels == ("x", "it's") and columns[1].fsp == 3


@pytest.mark.parametrize(
    "statement",
    [
        "ALTER TABLE t ADD INDEX ix (d)",
        "ALTER TABLE t ALTER COLUMN d SET DEFAULT 3",
        "ALTER TABLE t ENGINE=InnoDB",
        "ALTER TABLE t ADD COLUMN IF NOT EXISTS d INT",
        "ALTER TABLE t DROP COLUMN IF EXISTS nope",
    ],
)
def test_statements_that_leave_the_columns_alone(statement: str) -> None:
    assert not alter_table(statement, TABLE, "utf8mb4").changed


@pytest.mark.parametrize(
    ("statement", "reason"),
    [
        ("ALTER TABLE t ADD COLUMN (p INT, q INT)", "cannot parse"),
        ("ALTER TABLE t CONVERT TO CHARACTER SET latin1", "cannot parse"),
        ("ALTER TABLE t DROP id", "key column id"),
        ("ALTER TABLE t MODIFY id INT", "key column id"),
        ("ALTER TABLE t RENAME COLUMN id TO pk", "key column id"),
        ("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, d)", "DROP PRIMARY KEY"),
        ("ALTER TABLE t ADD b INT", "column b is there already"),
        ("ALTER TABLE t DROP COLUMN nope", "no column nope"),
    ],
)
def test_what_cannot_be_followed_says_why(statement: str, reason: str) -> None:
    with pytest.raises(UnfollowableStatement, match=reason):
        alter_table(statement, TABLE, "utf8mb4")


def test_the_altered_table_is_named_even_when_the_statement_cannot_be_parsed() -> None:
    assert statement_tables("alter table t add d int", "shop") == [("shop", "t")]
    assert statement_tables("ALTER TABLE other.t ADD COLUMN (a INT)", "shop") == [("other", "t")]
    assert statement_tables("/* c */ ALTER ONLINE TABLE `a``b`.`c d` FORCE", "x") == [
        ("a`b", "c d")
    ]
    assert statement_tables("CREATE INDEX ix ON t (d)", "shop") == []


@pytest.mark.parametrize(
    ("statement", "renamed", "dropped"),
    [
        ("ALTER TABLE t RENAME COLUMN b TO c", {"b": "c"}, ()),
        ("ALTER TABLE t CHANGE b c VARCHAR(30)", {"b": "c"}, ()),
        ("ALTER TABLE t CHANGE b b VARCHAR(30)", {}, ()),  # a retyped column, not a move
        ("ALTER TABLE t MODIFY d BIGINT FIRST", {}, ()),
        ("ALTER TABLE t DROP COLUMN d, ADD COLUMN e INT", {}, ("d",)),
        # a column dropped and added again is a new column: its old values are gone
        ("ALTER TABLE t DROP COLUMN d, ADD COLUMN d INT", {}, ("d",)),
        # renames chain within a statement; a column added and renamed is simply added
        (
            "ALTER TABLE t RENAME COLUMN b TO c, RENAME COLUMN c TO e, ADD f INT, "
            "RENAME COLUMN f TO g",
            {"b": "e"},
            (),
        ),
        ("ALTER TABLE t RENAME COLUMN d TO b2, DROP COLUMN b", {"d": "b2"}, ("b",)),
    ],
)
def test_renames_and_drops_are_told_apart_from_adds(
    statement: str, renamed: dict[str, str], dropped: tuple[str, ...]
) -> None:
    """The columns after a statement cannot tell a rename from a drop and an add; a target
    that mirrors the table (``evolve``) renames and drops from what the statement says."""
    moves = alter_table(statement, TABLE, "utf8mb4").moves
    assert dict(moves.renamed) == renamed
    assert moves.dropped == dropped


@pytest.mark.parametrize(
    "clause",
    [
        "PARTITION BY HASH(id) PARTITIONS 4",
        "PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES "
        "LESS THAN MAXVALUE)",
        "REMOVE PARTITIONING",
        "ADD PARTITION (PARTITION p2 VALUES LESS THAN (20))",
        "REORGANIZE PARTITION p1 INTO (PARTITION p1a VALUES LESS THAN (15))",
        "COALESCE PARTITION 2",
        "REBUILD PARTITION p0",
        "ANALYZE PARTITION ALL",
    ],
)
def test_repartitioning_leaves_the_columns_alone(clause: str) -> None:
    result = alter_table(f"/* tool */ ALTER TABLE shop.t {clause}", TABLE, "utf8mb4")
    assert not result.changed and result.table == TABLE


@pytest.mark.parametrize(
    "clause",
    ["DROP PARTITION p0", "TRUNCATE PARTITION p0, p1", "EXCHANGE PARTITION p0 WITH TABLE other"],
)
def test_partition_ddl_that_removes_rows_is_not_followed(clause: str) -> None:
    with pytest.raises(UnfollowableStatement, match="PARTITION removes or replaces rows"):
        alter_table(f"ALTER TABLE t {clause}", TABLE, "utf8mb4")


def test_a_column_named_like_a_partition_keyword_is_a_column() -> None:
    assert [c[0] for c in shape("ALTER TABLE t ADD partition_no INT")][-1] == "partition_no"


def test_a_read_tells_statements_that_change_a_captured_tables_columns() -> None:
    from sparkcdc.connectors.mysql.binlog.ddl_columns import changes_columns

    captured = {("shop", "t"): TABLE}
    assert changes_columns("BEGIN", "shop", captured) is None
    assert changes_columns("ALTER TABLE t ADD INDEX (d)", "shop", captured) is None
    assert (
        changes_columns("ALTER TABLE t PARTITION BY HASH(id) PARTITIONS 2", "shop", captured)
        is None
    )
    assert changes_columns("ALTER TABLE other.t DROP COLUMN b", "shop", captured) is None
    assert changes_columns("ALTER TABLE t CHANGE b d2 VARCHAR(20)", "shop", captured) is TABLE
    assert changes_columns("/* x */ ALTER TABLE `shop`.`t` DROP d", "other", captured) is TABLE
    assert changes_columns("ALTER TABLE t ADD COLUMN (a INT, c INT)", "shop", captured) is TABLE

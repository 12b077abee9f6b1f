"""A captured table's columns change, or it is truncated, dropped or renamed, while the
stream reads it: the stream stops at the change with its position and the way out, never
drops a new column, decodes a changed type into the old one or keeps removed rows
(silently wrong rows)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SchemaError
from sparkcdc.embedded import EmbeddedMariaDB
from tests.support.inprocess import run_batches


def source(mariadb: EmbeddedMariaDB, database: str) -> MySqlCdcSource:
    options = {
        **mariadb.source_options(),
        "database-name": database,
        "table-name": "t",
        "server-id": "6200-6210",
    }
    return MySqlCdcSource(parse_config(options))


@pytest.mark.parametrize(
    ("ddl", "expected"),
    [
        ("ADD COLUMN c INT", r"columns new: c\b"),
        ("ADD COLUMN c INT FIRST", r"columns new: c\b"),
        ("DROP COLUMN name", r"columns gone: name\b"),
        ("CHANGE name label VARCHAR(32)", r"columns new: label; gone: name\b"),
        ("MODIFY qty BIGINT", r"column qty: binlog type 8 \(captured as int"),
        ("MODIFY qty INT UNSIGNED", r"column qty: binlog type 3 unsigned"),
        ("MODIFY price DECIMAL(12,4)", r"column price: DECIMAL\(12,4\) in the binlog"),
        ("MODIFY name TEXT", None),  # still text: the same values, nothing to stop for
        ("ADD INDEX (qty)", None),  # no column change
    ],
)
def test_a_column_change_stops_the_stream_at_its_position(
    mariadb: EmbeddedMariaDB, mysql_db: str, ddl: str, expected: str | None
) -> None:
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), qty INT, price DECIMAL(10,2))",
        database=mysql_db,
    )
    mariadb.execute("INSERT INTO t VALUES (1, 'a', 1, 1.50)", database=mysql_db)
    cdc = source(mariadb, mysql_db)
    rows: list[dict[str, Any]] = []
    try:
        offset = run_batches(cdc, None, rows.extend)  # the snapshot
        mariadb.execute("UPDATE t SET qty = 2 WHERE id = 1", database=mysql_db)
        offset = run_batches(cdc, offset, rows.extend)  # a change under the old schema
        assert [r["qty"] for r in rows] == [1, 1, 2]
        mariadb.execute(f"ALTER TABLE t {ddl}", database=mysql_db)
        mariadb.execute("INSERT INTO t (id) VALUES (2)", database=mysql_db)
        if expected is None:
            run_batches(cdc, offset, rows.extend)
            assert rows[-1]["id"] == 2
            return
        with pytest.raises(SchemaError) as stopped:
            run_batches(cdc, offset, rows.extend)
        message = str(stopped.value)
        assert f"the columns of {mysql_db}.t changed while captured" in message
        assert re.search(expected, message), message
        assert "binlog " in message and "new checkpoint" in message
    finally:
        cdc.close()


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("TRUNCATE TABLE t", r"TRUNCATE of {db}\.t .*would keep the rows it removed"),
        ("DROP TABLE t", r"DROP of {db}\.t "),
        ("RENAME TABLE t TO t_old", r"RENAME of {db}\.t .*missed under its new name"),
        ("ALTER TABLE t RENAME TO t_old", r"RENAME of {db}\.t "),
        ("TRUNCATE TABLE other", None),
    ],
)
def test_a_truncate_drop_or_rename_stops_the_stream(
    mariadb: EmbeddedMariaDB, mysql_db: str, statement: str, expected: str | None
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mysql_db)
    mariadb.execute("CREATE TABLE other (id INT PRIMARY KEY)", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1), (2)", database=mysql_db)
    cdc = source(mariadb, mysql_db)
    try:
        offset = run_batches(cdc, None, lambda rows: None)
        mariadb.execute(statement, database=mysql_db)
        if expected is None:
            run_batches(cdc, offset, lambda rows: None)
            return
        with pytest.raises(SchemaError, match=expected.format(db=mysql_db)) as stopped:
            run_batches(cdc, offset, lambda rows: None)
        assert "binlog " in str(stopped.value) and "new checkpoint" in str(stopped.value)
    finally:
        cdc.close()

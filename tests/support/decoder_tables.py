"""Tables and random values of every type the compiled row decoder covers, for the
differential tests (fast decoder == reference decoder)."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pymysql
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB


@dataclass(frozen=True)
class ColumnType:
    """A column definition and the values to write into it (None = NULL)."""

    sql: str
    values: st.SearchStrategy[Any]
    narrow: bool = True  #: small enough for 1000-column tables (row size limits)


def _decimal(p: int, s: int) -> st.SearchStrategy[Any]:
    bound = Decimal(10) ** (p - s) - Decimal(1).scaleb(-s)
    return st.decimals(min_value=-bound, max_value=bound, places=s, allow_nan=False)


def _time(fsp: int) -> st.SearchStrategy[str]:
    limit = (838 * 3600 + 59 * 60 + 58) * 1_000_000

    def text(micros: int) -> str:
        sign = "-" if micros < 0 else ""
        seconds, fraction = divmod(abs(micros), 1_000_000)
        h, rest = divmod(seconds, 3600)
        return f"{sign}{h:02d}:{rest // 60:02d}:{rest % 60:02d}.{fraction:06d}"

    small = st.integers(-2_000_000, 2_000_000)  # around zero: the sign/fraction edge
    return st.one_of(small, st.integers(-limit, limit)).map(text)


def _text(max_size: int, codec: str | None = None) -> st.SearchStrategy[str]:
    alphabet = st.characters(codec=codec) if codec else st.characters(exclude_categories=["Cs"])
    return st.text(alphabet=alphabet, max_size=max_size)


_DATETIMES = st.datetimes(datetime(1000, 1, 1), datetime(9999, 12, 30))
_TIMESTAMPS = st.one_of(
    st.just("0000-00-00 00:00:00"),
    st.datetimes(datetime(1970, 1, 2), datetime(2038, 1, 18)),
)
_POINTS = st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)).map(
    lambda xy: struct.pack("<IBIdd", 0, 1, 1, *xy)
)
_JSON = st.dictionaries(
    st.text(max_size=5), st.one_of(st.integers(-1000, 1000), st.text(max_size=8)), max_size=4
).map(json.dumps)
_SET_LABELS = [f"l{i}" for i in range(10)]

COLUMN_TYPES: list[ColumnType] = [
    ColumnType("TINYINT", st.integers(-128, 127)),
    ColumnType("TINYINT UNSIGNED", st.integers(0, 255)),
    ColumnType("SMALLINT", st.integers(-(2**15), 2**15 - 1)),
    ColumnType("SMALLINT UNSIGNED", st.integers(0, 2**16 - 1)),
    ColumnType("MEDIUMINT", st.integers(-(2**23), 2**23 - 1)),
    ColumnType("MEDIUMINT UNSIGNED", st.integers(0, 2**24 - 1)),
    ColumnType("INT", st.integers(-(2**31), 2**31 - 1)),
    ColumnType("INT UNSIGNED", st.integers(0, 2**32 - 1)),
    ColumnType("BIGINT", st.integers(-(2**63), 2**63 - 1)),
    ColumnType("BIGINT UNSIGNED", st.integers(0, 2**64 - 1)),
    ColumnType("BOOLEAN", st.integers(-128, 127)),
    ColumnType("DECIMAL(65,30)", _decimal(65, 30)),
    ColumnType("DECIMAL(40,0)", _decimal(40, 0)),
    ColumnType("DECIMAL(38,10)", _decimal(38, 10)),
    ColumnType("DECIMAL(10,2)", _decimal(10, 2)),
    ColumnType("DECIMAL(5,5)", _decimal(5, 5)),
    ColumnType("DECIMAL(19,9)", _decimal(19, 9)),
    ColumnType("DECIMAL(1,0)", _decimal(1, 0)),
    ColumnType("FLOAT", st.floats(width=32, allow_nan=False, allow_infinity=False)),
    ColumnType("DOUBLE", st.floats(allow_nan=False, allow_infinity=False)),
    ColumnType("BIT(1)", st.integers(0, 1)),
    ColumnType("BIT(12)", st.integers(0, 2**12 - 1)),
    ColumnType("BIT(64)", st.integers(0, 2**64 - 1)),
    ColumnType(
        "DATE", st.one_of(st.just("0000-00-00"), st.dates(date(1000, 1, 1), date(9999, 12, 31)))
    ),
    ColumnType("TIME", _time(0)),
    ColumnType("TIME(1)", _time(1)),
    ColumnType("TIME(3)", _time(3)),
    ColumnType("TIME(6)", _time(6)),
    ColumnType("DATETIME", st.one_of(st.just("0000-00-00 00:00:00"), _DATETIMES)),
    ColumnType("DATETIME(2)", _DATETIMES),
    ColumnType("DATETIME(6)", _DATETIMES),
    ColumnType("TIMESTAMP NULL", _TIMESTAMPS),
    ColumnType("TIMESTAMP(3) NULL", _TIMESTAMPS),
    ColumnType("TIMESTAMP(6) NULL", _TIMESTAMPS),
    ColumnType("YEAR", st.one_of(st.just(0), st.integers(1901, 2155))),
    ColumnType("CHAR(10)", _text(10)),
    ColumnType("VARCHAR(50)", _text(50), narrow=False),
    ColumnType("VARCHAR(300)", _text(300), narrow=False),
    ColumnType("TEXT", _text(400)),
    ColumnType("TINYTEXT", _text(60)),
    ColumnType("MEDIUMTEXT", _text(100)),
    ColumnType("VARCHAR(20) CHARACTER SET latin1", _text(20, "cp1252")),
    ColumnType("CHAR(5) CHARACTER SET latin1", _text(5, "cp1252")),
    ColumnType("VARCHAR(10) CHARACTER SET ascii", _text(10, "ascii")),
    ColumnType("BINARY(4)", st.binary(max_size=4)),
    ColumnType("VARBINARY(16)", st.binary(max_size=16)),
    ColumnType("VARBINARY(300)", st.binary(max_size=300), narrow=False),
    ColumnType("BLOB", st.binary(max_size=500)),
    ColumnType("TINYBLOB", st.binary(max_size=50)),
    ColumnType("ENUM('small','medium','large')", st.sampled_from(["small", "medium", "large"])),
    ColumnType(
        "SET('c','a','b')",
        st.lists(st.sampled_from(["a", "b", "c"]), unique=True).map(",".join),
    ),
    ColumnType(
        "SET(" + ",".join(f"'{x}'" for x in _SET_LABELS) + ")",
        st.lists(st.sampled_from(_SET_LABELS), unique=True).map(",".join),
    ),
    ColumnType("JSON", _JSON),
    ColumnType("POINT", _POINTS),
    ColumnType("GEOMETRY", _POINTS),
]


def column_values(types: list[ColumnType]) -> st.SearchStrategy[list[Any]]:
    """One row's values for ``types``; each may be NULL."""
    return st.tuples(*(st.one_of(st.none(), t.values) for t in types)).map(list)


def create_table_sql(name: str, types: list[ColumnType]) -> str:
    """Columns c0..cN after an INT primary key ``id``. Wide tables use MyISAM: InnoDB's
    row-size limit (half a page) is too small for 1000 columns; the binlog is the same."""
    if len(types) > 100:
        types = [t if t.narrow else COLUMN_TYPES[0] for t in types]
    columns = ", ".join(f"c{i} {t.sql}" for i, t in enumerate(types))
    engine = " ENGINE=MyISAM" if len(types) > 12 else ""
    return f"CREATE TABLE `{name}` (id INT PRIMARY KEY, {columns}){engine} DEFAULT CHARSET=utf8mb4"


def captured_table(mariadb: EmbeddedMariaDB, database: str, table: str) -> CapturedTable:
    """The table as discovery would capture it (columns from information_schema)."""
    with mariadb.connect() as conn, conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(
            "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        columns = tuple(MySqlColumn.from_information_schema(r) for r in cur.fetchall())
    return CapturedTable(TableId(database, table), columns, ("id",), "id")


def position(mariadb: EmbeddedMariaDB) -> BinlogPosition:
    file, pos = mariadb.execute("SHOW MASTER STATUS")[0][:2]
    return BinlogPosition(str(file), int(pos))

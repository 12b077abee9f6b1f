"""Every supported MySQL type read by snapshot (mysqlclient) and binlog (python-mysql-replication)
gives the same Arrow arrays, equal to the values written.

The rows cover each type's extremes, NULLs, zero dates, negative and fractional TIME, emoji,
latin1 text, 0x00-padded BINARY and empty SETs: the cases where the two drivers disagree.
"""

from __future__ import annotations

import json
import os
import secrets
import struct
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pymysql

from sparkcdc.connectors.mysql.binlog.table_names import name_columns
from sparkcdc.connectors.mysql.server.types import (
    MySqlColumn,
    arrow_type,
    binlog_converter,
    restore_empty_sets,
    snapshot_conversions,
    snapshot_converter,
    snapshot_select_expression,
)
from sparkcdc.embedded import EmbeddedMariaDB

UTC = timezone.utc
SRC = str(Path(__file__).resolve().parents[2] / "src")

DDL = """
CREATE TABLE all_types (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  bo BOOLEAN, t1 TINYINT(1),
  d65 DECIMAL(65,30), d10 DECIMAL(10,2), fl FLOAT, db DOUBLE,
  b1 BIT(1), b12 BIT(12),
  dt DATE, tm TIME, tm6 TIME(6), dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
  ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, yr YEAR,
  c CHAR(10), vc VARCHAR(50), tx TEXT, l1 VARCHAR(20) CHARACTER SET latin1,
  bn BINARY(4), vb VARBINARY(16), bl BLOB,
  en ENUM('small','medium','large'), st SET('c','a','b'), js JSON,
  pt POINT, geo GEOMETRY
) DEFAULT CHARSET=utf8mb4
"""

# fmt: off
COLUMNS = [
    "id", "ti", "tiu", "si", "siu", "mi", "miu", "i", "iu", "bi", "biu", "bo", "t1", "d65", "d10",
    "fl", "db", "b1", "b12", "dt", "tm", "tm6", "dtm", "dtm3", "dtm6", "ts", "ts6", "yr", "c",
    "vc", "tx", "l1", "bn", "vb", "bl", "en", "st", "js", "pt", "geo",
]
# fmt: on

POINT_WKT = "POINT(1.5 -2.25)"
POINT = struct.pack("<IBIdd", 4326, 1, 1, 1.5, -2.25)  # SRID (LE) + WKB
LINE = struct.pack("<IBII4d", 0, 1, 2, 2, 0.0, 0.0, 1.0, 1.0)
SQUARE = struct.pack("<IBIII10d", 0, 1, 3, 1, 5, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0)
BIG = "9" * 35 + "." + "9" * 30
JSON_DOC = '{"k": [1, 2.50, "é😀"],  "n": null}'  # MariaDB keeps JSON text as written
FLOAT_MAX = struct.unpack("<f", struct.pack("<f", 3.4028234e38))[0]
FLOAT_123456789 = struct.unpack("<f", struct.pack("<f", 123456789.0))[0]


def row(**values: Any) -> dict[str, Any]:
    """A row for COLUMNS; unnamed columns are NULL."""
    assert set(values) <= set(COLUMNS), set(values) - set(COLUMNS)
    return {name: values.get(name) for name in COLUMNS}


# What each INSERT writes (SQL literals) and what every read path must return (canonical).
# fmt: off
INSERTS: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {
    1: (  # minimums
        row(
            id=1, ti=-128, tiu=0, si=-32768, siu=0, mi=-8388608, miu=0, i=-2147483648, iu=0,
            bi=-(2**63), biu=0, bo=0, t1=0, d65="-" + BIG, d10="-99999999.99",
            fl=-3.4028234e38, db=-1.7976931348623157e308, b1=0, b12=0, dt="1000-01-01",
            tm="-838:59:59", tm6="-838:59:58.999999", dtm="1000-01-01 00:00:00",
            dtm3="1000-01-01 00:00:00.000", dtm6="1000-01-01 00:00:00.000001",
            ts="1970-01-01 00:00:01", ts6="1970-01-01 00:00:01.000001", yr=1901,
            c="", vc="", tx="", l1="", bn=b"", vb=b"", bl=b"", en="small", st="", js="[]",
            pt="POINT(0 0)", geo="LINESTRING(0 0,1 1)",
        ),
        row(
            id=1, ti=-128, tiu=0, si=-32768, siu=0, mi=-8388608, miu=0, i=-2147483648, iu=0,
            bi=-(2**63), biu=Decimal(0), bo=False, t1=False, d65="-" + BIG,
            d10=Decimal("-99999999.99"), fl=-FLOAT_MAX, db=-1.7976931348623157e308, b1=False,
            b12=b"\x00\x00", dt=date(1000, 1, 1), tm="-838:59:59", tm6="-838:59:58.999999",
            dtm=datetime(1000, 1, 1), dtm3=datetime(1000, 1, 1),
            dtm6=datetime(1000, 1, 1, 0, 0, 0, 1), ts=datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
            ts6=datetime(1970, 1, 1, 0, 0, 1, 1, tzinfo=UTC), yr=1901, c="", vc="", tx="",
            l1="", bn=b"\x00" * 4, vb=b"", bl=b"", en="small", st="", js="[]",
            pt=struct.pack("<IBIdd", 0, 1, 1, 0.0, 0.0), geo=LINE,
        ),
    ),
    2: (  # maximums, emoji, latin1, binary with 0x00 inside and at the end
        row(
            id=2, ti=127, tiu=255, si=32767, siu=65535, mi=8388607, miu=16777215,
            i=2147483647, iu=4294967295, bi=2**63 - 1, biu=2**64 - 1, bo=1, t1=5, d65=BIG,
            d10="99999999.99", fl=3.4028234e38, db=1.7976931348623157e308, b1=1, b12=0xFFF,
            dt="9999-12-31", tm="838:59:59", tm6="838:59:58.999999",
            dtm="9999-12-31 23:59:59", dtm3="9999-12-31 23:59:59.999",
            dtm6="9999-12-31 23:59:59.999999", ts="2038-01-19 03:14:07",
            ts6="2038-01-19 03:14:07.999999", yr=2155, c="héllo 😀", vc="emoji 😀🎉 ok",
            tx="ünïcödé " * 50 + "𝄞", l1="café é", bn=b"\xff\x00\x01\x00", vb=b"\x00\xff\x00",
            bl=bytes(range(256)), en="large", st="a,c", js=JSON_DOC, pt=POINT_WKT,
            geo="POLYGON((0 0,1 0,1 1,0 1,0 0))",
        ),
        row(
            id=2, ti=127, tiu=255, si=32767, siu=65535, mi=8388607, miu=16777215,
            i=2147483647, iu=4294967295, bi=2**63 - 1, biu=Decimal(2**64 - 1), bo=True,
            t1=True, d65=BIG, d10=Decimal("99999999.99"), fl=FLOAT_MAX,
            db=1.7976931348623157e308, b1=True, b12=b"\x0f\xff", dt=date(9999, 12, 31),
            tm="838:59:59", tm6="838:59:58.999999", dtm=datetime(9999, 12, 31, 23, 59, 59),
            dtm3=datetime(9999, 12, 31, 23, 59, 59, 999000),
            dtm6=datetime(9999, 12, 31, 23, 59, 59, 999999),
            ts=datetime(2038, 1, 19, 3, 14, 7, tzinfo=UTC),
            ts6=datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC), yr=2155, c="héllo 😀",
            vc="emoji 😀🎉 ok", tx="ünïcödé " * 50 + "𝄞", l1="café é",
            bn=b"\xff\x00\x01\x00", vb=b"\x00\xff\x00", bl=bytes(range(256)), en="large",
            st="c,a", js=JSON_DOC, pt=POINT, geo=SQUARE,
        ),
    ),
    3: (row(id=3), row(id=3)),  # NULL in every nullable column
    4: (  # zero dates (inserted with sql_mode=''), YEAR 0000, negative fractional TIME
        row(
            id=4, t1=-1, d65="0.000000000000000000000000000001", d10="-0.01", fl=123456789,
            db=0.30000000000000004, b1=1, b12=0b100000000001, dt="0000-00-00",
            tm="-00:00:01", tm6="-00:00:00.000001", dtm="0000-00-00 00:00:00",
            dtm3="0000-00-00 00:00:00.000", dtm6="0000-00-00 00:00:00.000000",
            ts="0000-00-00 00:00:00", ts6="0000-00-00 00:00:00.000000", yr=0, bn=b"ab",
            en="", st="b",
        ),
        row(
            id=4, t1=True, d65="0.000000000000000000000000000001", d10=Decimal("-0.01"),
            fl=FLOAT_123456789, db=0.30000000000000004, b1=True, b12=b"\x08\x01",
            tm="-00:00:01", tm6="-00:00:00.000001", yr=0, bn=b"ab\x00\x00", en="", st="b",
        ),
    ),
    5: (  # fractional seconds, negative TIME(6) with a fraction, a DST-ambiguous wall time
        row(
            id=5, tm="12:30:00", tm6="-12:34:56.123456", dtm="2024-10-27 02:30:00",
            dtm3="2024-02-29 12:34:56.789", dtm6="2024-02-29 12:34:56.5",
            ts="2024-03-31 01:30:00", ts6="2024-03-31 01:30:00.25", d10="0.50", st="b,a,c",
        ),
        row(
            id=5, tm="12:30:00", tm6="-12:34:56.123456", dtm=datetime(2024, 10, 27, 2, 30),
            dtm3=datetime(2024, 2, 29, 12, 34, 56, 789000),
            dtm6=datetime(2024, 2, 29, 12, 34, 56, 500000),
            ts=datetime(2024, 3, 31, 1, 30, tzinfo=UTC),
            ts6=datetime(2024, 3, 31, 1, 30, 0, 250000, tzinfo=UTC), d10=Decimal("0.50"),
            st="c,a,b",
        ),
    ),
}
# fmt: on

UPDATE_SQL = (
    "UPDATE all_types SET st = '', tm6 = '-00:00:00.5', ts6 = '2000-01-01 00:00:00.000001', "
    "c = 'ü', b12 = b'101', biu = 1 WHERE id = 5"
)
UPDATED_5 = {
    **INSERTS[5][1],
    "st": "",
    "tm6": "-00:00:00.500000",
    "ts6": datetime(2000, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    "c": "ü",
    "b12": b"\x00\x05",
    "biu": Decimal(1),
}


def columns_of(mariadb: EmbeddedMariaDB, database: str, table: str) -> list[MySqlColumn]:
    with mariadb.connect() as conn, conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(
            "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND "
            "TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
            (database, table),
        )
        return [MySqlColumn.from_information_schema(r) for r in cur.fetchall()]


def binlog_position(mariadb: EmbeddedMariaDB) -> tuple[str, int]:
    file, pos = mariadb.execute("SHOW MASTER STATUS")[0][:2]
    return str(file), int(pos)


def insert(mariadb: EmbeddedMariaDB, database: str, values: Mapping[str, Any]) -> None:
    """INSERT one row; spatial columns from WKT, BIT from ints, the rest as parameters."""
    names, marks, args = [], [], []
    for name, value in values.items():
        if value is None:
            continue
        names.append(name)
        if name == "pt" and value == POINT_WKT:
            marks.append("ST_GeomFromText(%s, 4326)")
        elif name in ("pt", "geo"):
            marks.append("ST_GeomFromText(%s)")
        else:
            marks.append("%s")
        args.append(value)
    sql = f"INSERT INTO all_types ({', '.join(names)}) VALUES ({', '.join(marks)})"
    with mariadb.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # lets row 4 hold zero dates
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.execute(sql, args)


def snapshot_rows(
    mariadb: EmbeddedMariaDB, database: str, columns: list[MySqlColumn]
) -> dict[int, dict[str, Any]]:
    """Read the table as the snapshot reader does and convert to canonical values."""
    import MySQLdb

    conn = MySQLdb.connect(
        host=mariadb.host,
        port=mariadb.port,
        user=mariadb.cdc.user,
        password=mariadb.cdc.password,
        database=database,
        charset="utf8mb4",
        conv=snapshot_conversions(),
    )
    try:
        cur = conn.cursor()
        cur.execute("SET time_zone = '+00:00'")
        select = ", ".join(snapshot_select_expression(c) for c in columns)
        cur.execute(f"SELECT {select} FROM all_types ORDER BY id")
        converters = [snapshot_converter(c) for c in columns]
        rows: dict[int, dict[str, Any]] = {}
        for raw in cur.fetchall():
            values = {
                c.name: v if f is None else f(v)
                for c, f, v in zip(columns, converters, raw, strict=True)
            }
            rows[values["id"]] = values
        return rows
    finally:
        conn.close()


def binlog_images(
    mariadb: EmbeddedMariaDB,
    database: str,
    columns: list[MySqlColumn],
    start: tuple[str, int],
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(event kind, image name, canonical values) for every row image of ``all_types``."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    converters = {c.name: binlog_converter(c, UTC) for c in columns}
    stream = BinLogStreamReader(
        connection_settings={
            "host": mariadb.host,
            "port": mariadb.port,
            "user": mariadb.cdc.user,
            "password": mariadb.cdc.password,
        },
        server_id=7000 + secrets.randbelow(2000),
        is_mariadb=False,
        resume_stream=True,
        log_file=start[0],
        log_pos=start[1],
        blocking=False,
        only_events=[WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent],
        only_schemas=[database],
    )
    try:
        for event in stream:
            kind = type(event).__name__
            name_columns(event.table_map[event.table_id].columns, columns)  # no row metadata
            for r in event.rows:
                for image in ("values", "before_values", "after_values"):
                    if image in r:
                        nones = r[image.replace("values", "none_sources")]
                        raw = restore_empty_sets(dict(r[image]), nones)
                        yield kind, image, canonical(raw, converters)
    finally:
        stream.close()


def canonical(raw: Mapping[str, Any], converters: Mapping[str, Any]) -> dict[str, Any]:
    return {n: raw[n] if f is None else f(raw[n]) for n, f in converters.items()}


def assert_same_arrays(
    columns: list[MySqlColumn], label: str, *tables: tuple[str, list[dict[str, Any]]]
) -> None:
    """Per column, the Arrow arrays built from every table are equal (and typed right)."""
    for col in columns:
        arrays = {
            name: pa.array([r[col.name] for r in rows], type=arrow_type(col))
            for name, rows in tables
        }
        (first_name, first), *others = arrays.items()
        for name, array in others:
            assert array.equals(first), (
                f"{label}: column {col.name} ({col.column_type}) differs: "
                f"{first_name}={first.to_pylist()} {name}={array.to_pylist()}"
            )


def test_all_types_snapshot_and_binlog_agree(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute(DDL, database=mysql_db)
    columns = columns_of(mariadb, mysql_db, "all_types")
    assert [c.name for c in columns] == COLUMNS
    start = binlog_position(mariadb)
    for written, _ in INSERTS.values():
        insert(mariadb, mysql_db, written)

    expected = [INSERTS[k][1] for k in sorted(INSERTS)]
    snapshot = snapshot_rows(mariadb, mysql_db, columns)
    assert sorted(snapshot) == sorted(INSERTS)
    assert_same_arrays(
        columns, "inserted rows", ("expected", expected), ("snapshot", list(snapshot.values()))
    )

    mariadb.execute(UPDATE_SQL, database=mysql_db)
    mariadb.execute("DELETE FROM all_types WHERE id = 2", database=mysql_db)
    images = list(binlog_images(mariadb, mysql_db, columns, start))

    inserted = [v for kind, _, v in images if kind == "WriteRowsEvent"]
    assert [v["id"] for v in inserted] == sorted(INSERTS)
    assert_same_arrays(
        columns,
        "inserted rows",
        ("expected", expected),
        ("snapshot", [snapshot[k] for k in sorted(INSERTS)]),
        ("binlog", inserted),
    )
    updates = [(image, v) for kind, image, v in images if kind == "UpdateRowsEvent"]
    assert [image for image, _ in updates] == ["before_values", "after_values"]
    deletes = [v for kind, _, v in images if kind == "DeleteRowsEvent"]
    assert_same_arrays(
        columns,
        "update and delete images",
        ("expected", [INSERTS[5][1], UPDATED_5, INSERTS[2][1]]),
        ("binlog", [updates[0][1], updates[1][1], *deletes]),
    )

    final = snapshot_rows(mariadb, mysql_db, columns)
    assert_same_arrays(
        columns,
        "final snapshot",
        ("expected", [INSERTS[1][1], INSERTS[3][1], INSERTS[4][1], UPDATED_5]),
        ("snapshot", [final[k] for k in sorted(final)]),
    )


# A reader in another process whose local zone is Europe/Berlin: TIMESTAMPs must not shift.
ZONE_READER = """
import json, os, sys, time
time.tzset()
from datetime import timezone
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent
import MySQLdb
from sparkcdc.connectors.mysql.server.types import (
    MySqlColumn, binlog_converter, snapshot_conversions, snapshot_converter,
)
from sparkcdc.connectors.mysql.binlog.table_names import name_columns
args = json.loads(sys.argv[1])
columns = [MySqlColumn(**c) for c in args["columns"]]
out = {"local_offset": time.strftime("%z", time.localtime(1719835200)), "binlog": [],
       "snapshot": []}
convs = {c.name: binlog_converter(c, timezone.utc) for c in columns}
stream = BinLogStreamReader(
    connection_settings=args["settings"], server_id=args["server_id"], is_mariadb=False,
    resume_stream=True, log_file=args["file"], log_pos=args["pos"], blocking=False,
    only_events=[WriteRowsEvent], only_schemas=[args["db"]],
)
for event in stream:
    name_columns(event.table_map[event.table_id].columns, columns)  # no row metadata
    for r in event.rows:
        out["binlog"].append(
            {n: (f(r["values"][n]) if f else r["values"][n]).isoformat() for n, f in convs.items()
             if n != "id"})
stream.close()
s = args["settings"]
conn = MySQLdb.connect(host=s["host"], port=s["port"], user=s["user"], password=s["password"],
                       database=args["db"], charset="utf8mb4", conv=snapshot_conversions())
cur = conn.cursor()
cur.execute("SET time_zone = '+00:00'")
cur.execute("SELECT ts, ts6, dtm6 FROM t ORDER BY id")
sconvs = [snapshot_converter(c) for c in columns[1:]]
for row in cur.fetchall():
    out["snapshot"].append(
        {c.name: (f(v) if f else v).isoformat() for c, f, v in zip(columns[1:], sconvs, row)})
print(json.dumps(out))
"""


def test_timestamps_exact_under_non_utc_session_and_process_zones(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """Rows written by a +02:00 session (Berlin summer time; the embedded server has no
    named-zone tables) and read by a process in Europe/Berlin keep their UTC instants;
    DATETIME stays the wall-clock text that was written."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, "
        "dtm6 DATETIME(6))",
        database=mysql_db,
    )
    columns = columns_of(mariadb, mysql_db, "t")
    start = binlog_position(mariadb)
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+02:00'")
        cur.execute(
            "INSERT INTO t VALUES (1, '2024-07-01 14:00:00', '2024-07-01 14:00:00.123456', "
            "'2024-07-01 14:00:00.123456'), (2, '1970-01-01 02:00:01', "
            "'2038-01-19 05:14:07.999999', '2038-01-19 05:14:07.999999')"
        )
    args = {
        "columns": [asdict(c) for c in columns],
        "settings": {
            "host": mariadb.host,
            "port": mariadb.port,
            "user": mariadb.cdc.user,
            "password": mariadb.cdc.password,
        },
        "server_id": 7000 + secrets.randbelow(2000),
        "file": start[0],
        "pos": start[1],
        "db": mysql_db,
    }
    env = {**os.environ, "TZ": "Europe/Berlin", "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", ZONE_READER, json.dumps(args)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["local_offset"] == "+0200"  # the reader really ran in Berlin summer time
    expected = [
        {
            "ts": "2024-07-01T12:00:00+00:00",
            "ts6": "2024-07-01T12:00:00.123456+00:00",
            "dtm6": "2024-07-01T14:00:00.123456",
        },
        {
            "ts": "1970-01-01T00:00:01+00:00",
            "ts6": "2038-01-19T03:14:07.999999+00:00",
            "dtm6": "2038-01-19T05:14:07.999999",
        },
    ]
    assert out["binlog"] == expected
    assert out["snapshot"] == expected

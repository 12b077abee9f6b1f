"""MySQL 8.0's and 5.7's types through the source: what a snapshot reads equals what the
binlog gives, value for value, for inserts, updates' both images and deletes; JSON (MySQL's
binary format in row events: every value type, nested, large, opaque temporal and decimal
values) equals the server's own JSON text, which 5.7 prints otherwise than 8.0 (integral
doubles, U+001F). MariaDB's side: test_mysql_types_roundtrip.py."""

from __future__ import annotations

import json
import pickle
import random
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog.reader import read_changes
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded.binlog_server import BinlogServer
from tests.support.inprocess import run_batches

COLUMNS = """
  id INT PRIMARY KEY,
  js JSON,
  tiu TINYINT UNSIGNED, biu BIGINT UNSIGNED, mi MEDIUMINT, d65 DECIMAL(65,30), d5 DECIMAL(5,2),
  fl FLOAT, db DOUBLE,
  b1 BIT(1), b17 BIT(17), b64 BIT(64),
  dt DATE, tm3 TIME(3), tm6 TIME(6), dtm DATETIME, dtm1 DATETIME(1), dtm4 DATETIME(4),
  dtm6 DATETIME(6), ts2 TIMESTAMP(2) NULL, ts6 TIMESTAMP(6) NULL, yr YEAR,
  c CHAR(5), vc VARCHAR(40), tx TEXT, bn BINARY(3), vb VARBINARY(10), lb LONGBLOB,
  en ENUM('x','y','zz'), st SET('a','b','c'),
  pt POINT, geo GEOMETRY, ls LINESTRING,
  gv INT AS (tiu * 2) VIRTUAL, gs VARCHAR(50) AS (CONCAT(vc, '!')) STORED,
  gj VARCHAR(20) AS (JSON_UNQUOTE(JSON_EXTRACT(js, '$.k'))) VIRTUAL
"""

#: Every JSON value type: object, array, literals, integers signed and unsigned at their
#: bounds, doubles (integral ones too: 5.7 prints them without ``.0``), strings with escapes,
#: control characters and emoji, nesting, a large document (> 64 KiB, MySQL's large format),
#: opaque values (DATETIME, DATE, TIME, DECIMAL cast into JSON; binary strings, BIT and a
#: geometry stored as ``base64:typeN``).
JSON_VALUES = [
    "'{}'",
    "'[]'",
    "'null'",
    "'true'",
    "'false'",
    "'0'",
    "'-9223372036854775808'",
    "'18446744073709551615'",
    "'-1.5e300'",
    "'0.1'",
    "'3.0'",
    "'[-0.0, 100.0, 1e15, 1e16, 123456789012345680000, 1.5e-7, 0.0001]'",
    "JSON_ARRAY(CAST(X'011e1f207f' AS CHAR CHARACTER SET utf8mb4))",
    "JSON_OBJECT('bin', CAST(X'00FF' AS BINARY), 'bit', b'101', 'blob', X'', 'pt', POINT(1, 2))",
    "'\"\"'",
    '\'"a \\\\"quoted\\\\" é😀\\\\n"\'',
    """'{"k": "v", "n": {"deep": [1, [2, [3, {"x": null}]]], "b": true}, "e": []}'""",
    """'[1, "two", 3.5, null, false, {"a": -1}]'""",
    "JSON_OBJECT('big', REPEAT('x', 70000), 'arr', JSON_ARRAY(1, 2, 3))",
    "JSON_ARRAY(CAST('2024-02-29 12:34:56.789' AS DATETIME(3)), CAST('2024-02-29' AS DATE),"
    " CAST('-12:34:56.5' AS TIME(1)), CAST('12345.6789' AS DECIMAL(10,4)))",
    "JSON_OBJECT('k', 'gen')",
]

#: One row per JSON value; other columns cycle through their cases (NULL included).
OTHER_VALUES: dict[str, list[str]] = {
    "tiu": ["0", "255", "NULL"],
    "biu": ["0", "18446744073709551615", "NULL"],
    "mi": ["-8388608", "8388607", "NULL"],
    "d65": ["'-99999999999999999999999999999999999.999999999999999999999999999999'", "0", "NULL"],
    "d5": ["'-999.99'", "'0.50'", "NULL"],
    "fl": ["-3.4028234e38", "0.1", "NULL"],
    "db": ["-1.7976931348623157e308", "0.30000000000000004", "NULL"],
    "b1": ["b'0'", "b'1'", "NULL"],
    "b17": ["b'10000000000000001'", "0", "NULL"],
    "b64": ["18446744073709551615", "1", "NULL"],
    "dt": ["'1000-01-01'", "'9999-12-31'", "NULL"],
    "tm3": ["'-838:59:58.999'", "'00:00:00.001'", "NULL"],
    "tm6": ["'-00:00:00.000001'", "'838:59:58.999999'", "NULL"],
    "dtm": ["'1000-01-01 00:00:00'", "'9999-12-31 23:59:59'", "NULL"],
    "dtm1": ["'2024-02-29 12:34:56.7'", "'1000-01-01 00:00:00.1'", "NULL"],
    "dtm4": ["'2024-02-29 12:34:56.7891'", "'9999-12-31 23:59:59.9999'", "NULL"],
    "dtm6": ["'2024-02-29 23:59:59.999999'", "'1000-01-01 00:00:00.000001'", "NULL"],
    "ts2": ["'1970-01-01 00:00:01.01'", "'2038-01-19 03:14:07.99'", "NULL"],
    "ts6": ["'2024-03-31 01:30:00.25'", "'2038-01-19 03:14:07.999999'", "NULL"],
    "yr": ["1901", "2155", "NULL"],
    "c": ["'a'", "'héllo'", "NULL"],
    "vc": ["''", "'emoji 😀🎉'", "NULL"],
    "tx": ["REPEAT('ü', 3000)", "''", "NULL"],
    "bn": ["X'FF00'", "X'000102'", "NULL"],
    "vb": ["X''", "X'00FF00'", "NULL"],
    "lb": ["REPEAT(X'00FF', 40000)", "X'01'", "NULL"],
    "en": ["'x'", "'zz'", "NULL"],
    "st": ["''", "'c,a'", "NULL"],
    "pt": ["ST_GeomFromText('POINT(1.5 -2.25)')", "ST_GeomFromText('POINT(0 0)', 4326)", "NULL"],
    "geo": [
        "ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 1,0 0))')",
        "ST_GeomFromText('LINESTRING(0 0,1 1)')",
        "NULL",
    ],
    "ls": ["ST_GeomFromText('LINESTRING(0 0,1 1,2 0)')", "NULL", "NULL"],
}


def _insert(server: BinlogServer, db: str, first_id: int) -> None:
    names = ["id", "js", *OTHER_VALUES]
    with server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION time_zone = '+00:00'")
        for i, js in enumerate([*JSON_VALUES, "NULL"]):
            others = [values[i % len(values)] for values in OTHER_VALUES.values()]
            cur.execute(
                f"INSERT INTO types ({', '.join(names)}) VALUES "
                f"({first_id + i}, {js}, {', '.join(others)})"
            )


def _read(source: MySqlCdcSource, specs: list[Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    shipped = pickle.dumps(source)
    for spec in specs:
        executor = pickle.loads(shipped)
        for batch in executor.read(pickle.loads(pickle.dumps(spec))):
            rows.extend(pa.Table.from_batches([batch]).to_pylist())
    return rows


#: The servers whose binlogs hold binary JSON, each printing it its own way.
MYSQL_FLAVORS = ["mysql8", "mysql57"]


@pytest.mark.parametrize("binlog_server", MYSQL_FLAVORS, indirect=True)
def test_mysql_types_read_the_same_from_snapshot_and_binlog(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    server, db = binlog_server, flavor_db
    server.execute(f"CREATE TABLE types ({COLUMNS})", database=db)
    _insert(server, db, 0)
    options = {
        **server.source_options(),
        "database-name": db,
        "table-name": "types",
        "scan.incremental.snapshot.chunk.size": "7",
    }
    snapshot = MySqlCdcSource(parse_config(options))
    from_snapshot = _read(snapshot, snapshot.snapshot_partitions())
    snapshot.close()
    stream = MySqlCdcSource(parse_config({**options, "scan.startup.mode": "latest-offset"}))
    start = stream.initial_offset()
    _insert(server, db, 1000)
    server.execute(
        "UPDATE types SET tiu = tiu + 0, vc = CONCAT(IFNULL(vc, ''), 'u'), "
        "js = JSON_SET(IFNULL(js, '{}'), '$.added', 1) WHERE id >= 1000 AND id < 1003",
        database=db,
    )
    server.execute("DELETE FROM types WHERE id >= 1003", database=db)
    from_log: list[dict[str, Any]] = []
    run_batches(stream, start, from_log.extend)
    stream.close()

    names = [f.name for f in snapshot.arrow_schema() if not f.name.startswith("_")]
    inserted = {r["id"] - 1000: r for r in from_log if r["_change_type"] == "insert"}
    snapped = {r["id"]: r for r in from_snapshot}
    assert sorted(inserted) == sorted(snapped) == list(range(len(JSON_VALUES) + 1))
    differing = [
        (i, name, inserted[i][name], snapped[i][name])
        for i in snapped
        for name in names
        if name != "id" and inserted[i][name] != snapped[i][name]
    ]
    assert not differing, f"(row, column, binlog, snapshot): {differing[:5]}"

    # JSON is the server's own text of the document, whichever way it was read
    server_text = dict(server.execute("SELECT id, CAST(js AS CHAR) FROM types", database=db))
    for i, row in snapped.items():
        assert row["js"] == server_text.get(i), i
        if row["js"] is not None:
            json.loads(row["js"], strict=False)  # and JSON (5.7 leaves U+001F raw)

    # an update's images and a delete's image are the rows as they were
    updated = [r for r in from_log if r["_change_type"] == "update_postimage"]
    before = [r for r in from_log if r["_change_type"] == "update_preimage"]
    assert [r["id"] for r in updated] == [1000, 1001, 1002]
    for old, new in zip(before, updated, strict=True):
        assert {k: old[k] for k in names} == {k: inserted[old["id"] - 1000][k] for k in names}
        assert new["vc"] == (old["vc"] or "") + "u"
        document = json.loads(new["js"], strict=False)
        # '{}' gains the key; '[]', 'null' stay
        if isinstance(json.loads(old["js"], strict=False), dict):
            assert document["added"] == 1
        assert new["gs"] == new["vc"] + "!"  # stored generated columns follow
    deleted = {r["id"]: r for r in from_log if r["_change_type"] == "delete"}
    assert sorted(deleted) == list(range(1003, 1000 + len(JSON_VALUES) + 1))
    for i, row in deleted.items():
        assert {k: row[k] for k in names if k != "id"} == {
            k: snapped[i - 1000][k] for k in names if k != "id"
        }


def _random_documents(seed: int, count: int) -> list[str]:
    """SQL expressions of JSON documents stressing the text: doubles of every magnitude,
    strings with every control character, decimals of many scales, nesting."""
    rng = random.Random(seed)

    def number() -> str:
        choice = rng.random()
        if choice < 0.4:
            return repr(rng.uniform(-1, 1) * 10 ** rng.randint(-320, 308))
        if choice < 0.6:
            return repr(float(rng.randint(-(10**17), 10**17)))
        if choice < 0.8:
            return str(rng.randint(-(2**63), 2**64 - 1))
        digits = rng.randint(1, 30)
        scale = rng.randint(0, min(digits, 20))
        value = rng.randint(-(10**digits) + 1, 10**digits - 1)
        return f"CAST({value}e-{scale} AS DECIMAL({digits},{scale}))"

    def text() -> str:
        pieces = [chr(rng.randint(0, 0x20)), '"', "\\", "é", "😀", "\u007f", "\u2028", "a"]
        value = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        return "CAST(X'" + value.encode().hex() + "' AS CHAR CHARACTER SET utf8mb4)"

    def document(depth: int) -> str:
        kind = rng.random()
        if depth > 2 or kind < 0.4:
            return rng.choice([number, text])()
        items = [document(depth + 1) for _ in range(rng.randint(0, 4))]
        if kind < 0.7:
            return f"JSON_ARRAY({', '.join(items)})"
        pairs = [f"{text()}, {item}" for item in items]
        return f"JSON_OBJECT({', '.join(pairs)})"

    return [f"JSON_ARRAY({document(0)})" for _ in range(count)]


@pytest.mark.parametrize("binlog_server", MYSQL_FLAVORS, indirect=True)
def test_binlog_json_is_the_server_text_of_random_documents(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    server, db = binlog_server, flavor_db
    server.execute("CREATE TABLE docs (id INT PRIMARY KEY, js JSON)", database=db)
    config = parse_config({**server.source_options(), "database-name": db, "table-name": "docs"})
    stream = MySqlCdcSource(config)
    table = stream.tables
    start = stream.dialect.current_position()
    documents = _random_documents(seed=59, count=300)
    with server.connect(db) as conn, conn.cursor() as cur:
        for i, document in enumerate(documents):
            cur.execute(f"INSERT INTO docs VALUES ({i}, {document})")
    end = stream.dialect.current_position()
    stream.close()
    logged = {
        change.after[0]: change.after[1]
        for change in read_changes(config, table, start, end, 6400)
        if change.after is not None
    }
    server_text = dict(server.execute("SELECT id, CAST(js AS CHAR) FROM docs", database=db))
    differing = [(i, logged[i], server_text[i]) for i in server_text if logged[i] != server_text[i]]
    assert not differing, differing[:3]

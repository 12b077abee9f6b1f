"""PostgreSQL's own texts of every mapped type, through both read paths, on a real server.

With SESSION_SETTINGS applied:

(a) COLUMNS_QUERY + column_from_row describe each column as expected (domains, nested
    domains, arrays of domains, enums, collations);
(b) the output-function text of each value (the text-format result of a plain SELECT,
    and the same text through ``COPY ... TO STDOUT (FORMAT csv)`` read by pyarrow.csv as
    the snapshot reads it) gives the same typed values per value (value_parser) and per
    column (text_to_arrow);
(c) pgoutput sends exactly that text for each inserted row (parse_message on
    ``pg_logical_slot_peek_binary_changes``), so the snapshot and the log agree.

Note ``col::text`` is *not* the output function's text for every type: bool casts to
'true', bpchar to its value without padding, inet to its text with the netmask. The tests
read the untouched output text instead.
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from sparkcdc.connectors.postgres.server.types import (
    COLUMNS_QUERY,
    SESSION_SETTINGS,
    PgColumn,
    PgType,
    PgValueError,
    UnorderableKeyError,
    arrow_type,
    column_from_row,
    key_sort_function,
    text_to_arrow,
    value_parser,
)
from sparkcdc.connectors.postgres.wal.pgoutput import (
    UNCHANGED,
    Begin,
    Commit,
    Delete,
    Insert,
    Relation,
    TypeMessage,
    Update,
    parse_message,
)
from sparkcdc.embedded import EmbeddedPostgres
from tests.unit.test_postgres_types import canonical, per_value

SCHEMA = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (a int4, b text);
CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);
CREATE DOMAIN amount AS numeric(10,2);
CREATE DOMAIN amount2 AS amount CHECK (VALUE >= 0);
CREATE DOMAIN intlist AS int4[];
CREATE DOMAIN ctext AS text COLLATE "C";
CREATE COLLATION public."C" (locale = 'C');
CREATE TABLE types (
    id int4 PRIMARY KEY,
    b bool, i2 int2, i4 int4, i8 int8, o oid, f4 float4, f8 float8,
    n numeric, n102 numeric(10,2), n3838 numeric(38,38), n40 numeric(40,5),
    nneg numeric(5,-2), m money, t text, vc varchar(10), bp bpchar(5), nm name, ch "char",
    js json, jb jsonb, x xml, u uuid, ip inet, cid cidr, mac macaddr, mac8 macaddr8,
    bt bit(4), vb varbit, tm time(3), ttz timetz, iv interval, d date, ts timestamp,
    ts3 timestamp(3), tstz timestamptz, by bytea, pt point, bx box, rng int4range,
    mr int4multirange, tsv tsvector, tsq tsquery, lsn pg_lsn,
    mo mood, pr pair, dpos posint, damt amount, damt2 amount2, dlist intlist, dct ctext,
    a_i4 int4[], a_t text[], a_n numeric(10,2)[], a_dpos posint[], a_damt amount[],
    a_tstz timestamptz[], a_ts timestamp[], a_by bytea[], a_d date[], a_f4 float4[],
    a_f8 float8[], a_bx box[], a_b bool[], a_mo mood[], a_js jsonb[], a_pr pair[],
    t_c text COLLATE "C", t_pc text COLLATE public."C"
);
"""

NUMERIC_10_2 = ((10 << 16) | 2) + 4


def scalar(name: str, category: str, declared: str, typmod: int = -1, kind: str = "b") -> PgType:
    return PgType(name, kind, category, typmod, None, declared)


def array(element: PgType, declared: str, delimiter: str = ",") -> PgType:
    element = PgType(
        element.name, element.kind, element.category, element.typmod, None, element.declared,
        delimiter,
    )  # fmt: skip
    return PgType("_" + element.name, "b", "A", element.typmod, element, declared, delimiter)


INT4 = scalar("int4", "N", "integer")
NUMERIC = scalar("numeric", "N", "numeric(10,2)", NUMERIC_10_2)
TIMESTAMPTZ = scalar("timestamptz", "D", "timestamp with time zone")

#: column -> (type, collation) as COLUMNS_QUERY must describe it; arrow type after.
EXPECTED: dict[str, tuple[PgType, str | None, pa.DataType]] = {
    "id": (INT4, None, pa.int32()),
    "b": (scalar("bool", "B", "boolean"), None, pa.bool_()),
    "i2": (scalar("int2", "N", "smallint"), None, pa.int16()),
    "i4": (INT4, None, pa.int32()),
    "i8": (scalar("int8", "N", "bigint"), None, pa.int64()),
    "o": (scalar("oid", "N", "oid"), None, pa.int64()),
    "f4": (scalar("float4", "N", "real"), None, pa.float32()),
    "f8": (scalar("float8", "N", "double precision"), None, pa.float64()),
    "n": (scalar("numeric", "N", "numeric"), None, pa.string()),
    "n102": (NUMERIC, None, pa.decimal128(10, 2)),
    "n3838": (
        scalar("numeric", "N", "numeric(38,38)", ((38 << 16) | 38) + 4),
        None,
        pa.decimal128(38, 38),
    ),
    "n40": (scalar("numeric", "N", "numeric(40,5)", ((40 << 16) | 5) + 4), None, pa.string()),
    "nneg": (
        scalar("numeric", "N", "numeric(5,-2)", ((5 << 16) | (-2 & 0x7FF)) + 4),
        None,
        pa.string(),
    ),
    "m": (scalar("money", "N", "money"), None, pa.string()),
    "t": (scalar("text", "S", "text"), "C.UTF-8", pa.string()),
    "vc": (scalar("varchar", "S", "character varying(10)", 14), "C.UTF-8", pa.string()),
    "bp": (scalar("bpchar", "S", "character(5)", 9), "C.UTF-8", pa.string()),
    "nm": (scalar("name", "S", "name"), "C", pa.string()),
    "ch": (scalar("char", "Z", '"char"'), None, pa.string()),
    "tm": (scalar("time", "D", "time(3) without time zone", 3), None, pa.string()),
    "iv": (scalar("interval", "T", "interval"), None, pa.string()),
    "d": (scalar("date", "D", "date"), None, pa.date32()),
    "ts": (scalar("timestamp", "D", "timestamp without time zone"), None, pa.timestamp("us")),
    "ts3": (
        scalar("timestamp", "D", "timestamp(3) without time zone", 3),
        None,
        pa.timestamp("us"),
    ),
    "tstz": (TIMESTAMPTZ, None, pa.timestamp("us", tz="UTC")),
    "by": (scalar("bytea", "U", "bytea"), None, pa.binary()),
    "bx": (PgType("box", "b", "G", -1, None, "box", ";"), None, pa.string()),
    "rng": (scalar("int4range", "R", "int4range", kind="r"), None, pa.string()),
    "mr": (scalar("int4multirange", "R", "int4multirange", kind="m"), None, pa.string()),
    "mo": (scalar("mood", "E", "mood", kind="e"), None, pa.string()),
    "pr": (scalar("pair", "C", "pair", kind="c"), None, pa.string()),
    "dpos": (scalar("int4", "N", "posint"), None, pa.int32()),
    "damt": (scalar("numeric", "N", "amount", NUMERIC_10_2), None, pa.decimal128(10, 2)),
    "damt2": (scalar("numeric", "N", "amount2", NUMERIC_10_2), None, pa.decimal128(10, 2)),
    "dlist": (array(INT4, "intlist"), None, pa.list_(pa.int32())),
    "dct": (scalar("text", "S", "ctext"), "C", pa.string()),
    "a_i4": (array(INT4, "integer[]"), None, pa.list_(pa.int32())),
    "a_t": (array(scalar("text", "S", "text"), "text[]"), "C.UTF-8", pa.list_(pa.string())),
    "a_n": (array(NUMERIC, "numeric(10,2)[]"), None, pa.list_(pa.decimal128(10, 2))),
    "a_dpos": (array(INT4, "posint[]"), None, pa.list_(pa.int32())),
    "a_damt": (array(NUMERIC, "amount[]"), None, pa.list_(pa.decimal128(10, 2))),
    "a_tstz": (
        array(TIMESTAMPTZ, "timestamp with time zone[]"),
        None,
        pa.list_(pa.timestamp("us", tz="UTC")),
    ),
    "a_bx": (
        array(scalar("box", "G", "box"), "box[]", delimiter=";"),
        None,
        pa.list_(pa.string()),
    ),
    "a_ts": (
        array(
            scalar("timestamp", "D", "timestamp without time zone"), "timestamp without time zone[]"
        ),
        None,
        pa.list_(pa.timestamp("us")),
    ),
    "a_by": (array(scalar("bytea", "U", "bytea"), "bytea[]"), None, pa.list_(pa.binary())),
    "a_d": (array(scalar("date", "D", "date"), "date[]"), None, pa.list_(pa.date32())),
    "a_f4": (array(scalar("float4", "N", "real"), "real[]"), None, pa.list_(pa.float32())),
    "a_f8": (
        array(scalar("float8", "N", "double precision"), "double precision[]"),
        None,
        pa.list_(pa.float64()),
    ),
    "a_b": (array(scalar("bool", "B", "boolean"), "boolean[]"), None, pa.list_(pa.bool_())),
    "a_js": (array(scalar("jsonb", "U", "jsonb"), "jsonb[]"), None, pa.list_(pa.string())),
    "a_mo": (array(scalar("mood", "E", "mood", kind="e"), "mood[]"), None, pa.list_(pa.string())),
    "a_pr": (array(scalar("pair", "C", "pair", kind="c"), "pair[]"), None, pa.list_(pa.string())),
    "t_c": (scalar("text", "S", "text"), "C", pa.string()),
    "t_pc": (scalar("text", "S", "text"), "public.C", pa.string()),
}

#: Rows: 1 all NULL, 2 ordinary values, 3 tricky ones, 4 extremes.
ROWS = [
    "INSERT INTO types (id) VALUES (1)",
    """INSERT INTO types VALUES (2,
        true, -32768, 2147483647, -9223372036854775808, 4294967295, 1.1, 0.1,
        12.340, 12345678.90, 0.12345678901234567890123456789012345678,
        123456789012345678901234567890123.45678, 12345, 1.5,
        'héllo wörld ✓ 🎉', 'abc', 'a', 'name', 'x',
        '{"a": [1, 2.50, "x"]}', '{"b": 1, "a": [1, 2.50]}', '<a b="1">t</a>',
        'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '192.168.0.1/24', '10.0.0.0/8',
        '08:00:2b:01:02:03', '08:00:2b:01:02:03:04:05', B'1010', B'101',
        '12:34:56.789', '12:34:56.5+05:30', '1 year 2 mons 3 days 04:05:06.5',
        '2024-02-29', '2024-02-29 23:59:59.999999', '2024-02-29 23:59:59.9999',
        '2024-02-29 23:59:59.5+05:30', '\\x00ff10', '(1.5,2)', '(1,1),(0,0)', '[1,10)',
        '{[1,3),[5,7)}', 'a fat cat', 'fat & cat', '16/B374D848',
        'happy', ROW(1, 'a b'), 5, 12.5, 7, '{1,2}', 'z',
        '{1,NULL,3}', '{a,b}', '{1.50,NULL}', '{1,2}', '{3.25}',
        '{"2024-01-01 10:00:00+00",NULL}', '{"2024-01-01 10:00:00.5"}', '{"\\\\x0102"}',
        '{2020-01-01}', '{1.5}', '{0.1}', '{(1,1),(0,0);(2,2),(1,1)}', '{t,f,NULL}',
        '{sad,happy}', ARRAY['{"a": 1}'::jsonb, '[]'], ARRAY[ROW(1, 'x y')::pair, NULL],
        'abc', 'abc')""",
    """INSERT INTO types (id, f4, f8, n, n102, n3838, t, vc, bp, ch, js, jb, d, ts, tstz, by,
            a_t, a_f4, a_f8, a_d, a_tstz, a_by, a_n, a_i4, dlist, a_mo, a_bx, t_c, iv, x)
        VALUES (3, 'NaN', '-Infinity', 'NaN', -0.05, -0.00000000000000000000000000000000000001,
        E'quote " comma , brace { } backslash \\\\ tab \\t newline \\n end', '', E'a\\t',
        'é', 'null', '"str"', 'infinity', '-infinity', 'infinity', '\\x',
        ARRAY['a,b', 'c"d', NULL, 'NULL', 'null', '', '  x', '{}', E'\\\\', 'é', E'\\t'],
        '{NaN,Infinity,-Infinity,-0,1e-45}', '{NaN,-0,5e-324}', '{infinity,-infinity,NULL}',
        '{infinity,"2000-01-01 00:00:00+00"}', '{NULL,"\\\\x"}', '{}', '{}', '{}', '{}',
        '{}', '', '-1 year -2 mons +3 days -04:05:06', '<?xml version="1.0"?><a/>')""",
    """INSERT INTO types (id, b, i2, i4, f4, f8, n, n102, d, ts, tstz, ts3, o, bp, a_i4)
        VALUES (4, false, 32767, -2147483648, 3.4028235e38, 5e-324, '-Infinity',
        -99999999.99, '0001-01-01', '0001-01-01 00:00:00', '-infinity',
        '9999-12-31 23:59:59.999', 0, 'abcde', '{-2147483648}')""",
]


@pytest.fixture
def conn(postgres: EmbeddedPostgres, pg_db: str) -> Iterator[Any]:
    with postgres.connect(pg_db) as connection:
        for name, value in SESSION_SETTINGS.items():
            connection.execute("SELECT pg_catalog.set_config(%s, %s, false)", (name, value))
        yield connection


def output_texts(conn: Any, sql: str) -> tuple[list[str], list[list[str | None]]]:
    """Column names and every value's output-function text (the text-format result)."""
    with conn.cursor() as cur:
        cur.execute(sql)
        names = [d.name for d in cur.description]
        result = cur.pgresult
        rows = [
            [
                None if (raw := result.get_value(r, c)) is None else bytes(raw).decode("utf-8")
                for c in range(result.nfields)
            ]
            for r in range(result.ntuples)
        ]
    return names, rows


def copy_texts(conn: Any, sql: str, names: Sequence[str]) -> dict[str, pa.Array]:
    """The snapshot's way: COPY (...) TO STDOUT (FORMAT csv) read by pyarrow.csv as text."""
    buffer = io.BytesIO()
    with conn.cursor() as cur, cur.copy(f"COPY ({sql}) TO STDOUT (FORMAT csv)") as copy:
        for chunk in copy:
            buffer.write(chunk)
    table = pacsv.read_csv(
        io.BytesIO(buffer.getvalue()),
        read_options=pacsv.ReadOptions(column_names=list(names)),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names},
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
            null_values=[""],
        ),
    )
    return {n: table.column(n).combine_chunks() for n in names}


def columns_of(conn: Any, table: str) -> list[PgColumn]:
    oid = conn.execute("SELECT %s::regclass::oid", (table,)).fetchone()[0]
    rows = conn.execute(COLUMNS_QUERY, ([oid],)).fetchall()
    assert [int(r[0]) for r in rows] == [oid] * len(rows)
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)
    return [column_from_row(r) for r in rows]


def test_types_through_both_paths(conn: Any) -> None:
    conn.execute(SCHEMA)
    # (a) the catalog
    columns = {c.name: c for c in columns_of(conn, "types")}
    for name, (pg_type, collation, arrow) in EXPECTED.items():
        column = columns[name]
        assert column.type == pg_type, name
        assert (column.collation, column.deterministic) == (collation, True), name
        assert arrow_type(column) == arrow, name
    assert not columns["id"].nullable and columns["b"].nullable
    for name, column in columns.items():  # everything not listed reads as text
        if name not in EXPECTED:
            assert arrow_type(column) == pa.string(), name

    # (c) the log sees the rows inserted from now on
    slot = f"types_{conn.info.dbname}"[:63]  # slots are per cluster
    conn.execute("CREATE PUBLICATION types_pub FOR TABLE types")
    conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    try:
        for insert in ROWS:
            conn.execute(insert)
        select = "SELECT * FROM types ORDER BY id"
        names, rows = output_texts(conn, select)
        assert names == list(columns)
        copied = copy_texts(conn, select, names)

        # (b) per value == per column, from the SELECT's and from COPY's texts
        for i, name in enumerate(names):
            texts = [row[i] for row in rows]
            assert copied[name].to_pylist() == texts, name
            expected = per_value(texts, columns[name])
            got = text_to_arrow(copied[name], columns[name])
            assert got.type == expected.type, name
            assert canonical(got.to_pylist()) == canonical(expected.to_pylist()), name
            string_mode = text_to_arrow(copied[name], columns[name], "string")
            expected_string = per_value(texts, columns[name], "string")
            assert canonical(string_mode.to_pylist()) == canonical(expected_string.to_pylist())

        by_id = {row[0]: row for row in rows}
        assert by_id["2"][names.index("b")] == "t"  # not 'true' as b::text would say
        assert by_id["3"][names.index("bp")] == "a\t   "  # padded, not 'a\t'
        assert by_id["2"][names.index("tstz")] == "2024-02-29 18:29:59.5+00"
        assert by_id["2"][names.index("iv")] == "P1Y2M3DT4H5M6.5S"
        assert by_id["3"][names.index("f4")] == "NaN"
        a_t = value_parser(columns["a_t"])
        assert a_t is not None
        assert a_t(str(by_id["3"][names.index("a_t")])) == [
            "a,b", 'c"d', None, "NULL", "null", "", "  x", "{}", "\\", "é", "\t",
        ]  # fmt: skip

        # (c) pgoutput's text is the same text
        messages = [
            parse_message(data)
            for (data,) in conn.execute(
                "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, "
                "'proto_version', '1', 'publication_names', 'types_pub')",
                (slot,),
            )
        ]
    finally:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    relations = [m for m in messages if isinstance(m, Relation)]
    assert [c.name for c in relations[0].columns] == names
    assert [c.key for c in relations[0].columns] == [n == "id" for n in names]
    assert {m.name for m in messages if isinstance(m, TypeMessage)} >= {"mood", "pair"}
    inserts = [m for m in messages if isinstance(m, Insert)]
    assert [m.new for m in inserts] == [tuple(row) for row in rows]
    assert sum(isinstance(m, Begin) for m in messages) == len(ROWS)
    assert sum(isinstance(m, Commit) for m in messages) == len(ROWS)


BAD = [
    ("d", "date", "'0044-03-15 BC'", "years 1 to 9999"),
    ("d", "date", "'10000-01-01'", "years 1 to 9999"),
    ("ts", "timestamp", "'0001-12-31 23:00:00 BC'", "years 1 to 9999"),
    ("ts", "timestamp", "'10000-01-01 00:00:00'", "years 1 to 9999"),
    ("tstz", "timestamptz", "'0044-03-15 10:00:00+00 BC'", "years 1 to 9999"),
    ("n", "numeric(10,2)", "'NaN'", "decimal.handling.mode"),
    ("a", "int4[]", "'[0:1]={1,2}'", "explicit bounds"),
    ("a", "int4[]", "'{{1,2},{3,4}}'", "multi-dimensional"),
    ("an", "numeric(10,2)[]", "'{1,NaN}'", "decimal.handling.mode"),
]


@pytest.mark.parametrize(("name", "sql_type", "literal", "words"), BAD)
def test_unrepresentable_server_values_are_refused(
    conn: Any, name: str, sql_type: str, literal: str, words: str
) -> None:
    conn.execute(f"CREATE TABLE bad (id int PRIMARY KEY, {name} {sql_type})")
    conn.execute(f"INSERT INTO bad VALUES (1, NULL), (2, {literal})")
    column = columns_of(conn, "bad")[1]
    _, rows = output_texts(conn, "SELECT * FROM bad ORDER BY id")
    texts = [row[1] for row in rows]
    parse = value_parser(column)
    assert parse is not None and texts[1] is not None
    with pytest.raises(PgValueError, match=words):
        parse(texts[1])
    with pytest.raises(PgValueError, match=words):
        text_to_arrow(pa.array(texts, pa.string()), column)
    if "numeric" in sql_type:  # string mode reads them as text
        got = text_to_arrow(pa.array(texts, pa.string()), column, "string")
        assert got.equals(per_value(texts, column, "string"))
        assert "NaN" in str(got[1])


def test_unchanged_toast_and_old_tuples_from_the_server(conn: Any) -> None:
    """Real Update/Delete messages: an unchanged TOASTed value is UNCHANGED, a key change
    under REPLICA IDENTITY DEFAULT sends the old key ('K'), FULL the old row ('O')."""
    conn.execute("CREATE TABLE toasted (id int PRIMARY KEY, big text, small text)")
    conn.execute("ALTER TABLE toasted ALTER COLUMN big SET STORAGE EXTERNAL")  # out of line
    conn.execute("CREATE PUBLICATION toasted_pub FOR TABLE toasted")
    slot = f"toasted_{conn.info.dbname}"[:63]
    conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
    big = "".join(random.Random(5).choice("abcdefgh") for _ in range(50_000))
    try:
        conn.execute("INSERT INTO toasted VALUES (1, %s, 'a')", (big,))
        conn.execute("UPDATE toasted SET small = 'b'")
        conn.execute("UPDATE toasted SET id = 2")
        conn.execute("DELETE FROM toasted")
        conn.execute("INSERT INTO toasted VALUES (3, %s, 'c')", (big,))
        conn.execute("ALTER TABLE toasted REPLICA IDENTITY FULL")
        conn.execute("UPDATE toasted SET small = 'd'")
        conn.execute("DELETE FROM toasted")
        messages = [
            parse_message(data)
            for (data,) in conn.execute(
                "SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, "
                "'proto_version', '1', 'publication_names', 'toasted_pub')",
                (slot,),
            )
        ]
    finally:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    changes = [m for m in messages if isinstance(m, Insert | Update | Delete)]
    assert changes[0] == Insert(changes[0].oid, ("1", big, "a"))
    assert changes[1] == Update(changes[0].oid, None, None, ("1", UNCHANGED, "b"))
    assert isinstance(changes[2], Update) and changes[2].old_kind == "K"
    assert changes[2].old == ("1", None, None) and changes[2].new == ("2", UNCHANGED, "b")
    assert changes[3] == Delete(changes[0].oid, ("2", None, None), "K")
    assert changes[4] == Insert(changes[0].oid, ("3", big, "c"))
    full_update, full_delete = changes[5], changes[6]
    assert isinstance(full_update, Update) and full_update.old_kind == "O"
    assert full_update.old is not None and full_update.old[::2] == ("3", "c")
    assert full_update.new[0] == "3" and full_update.new[2] == "d"
    assert isinstance(full_delete, Delete) and full_delete.old_kind == "O"
    assert full_delete.old[::2] == ("3", "d")


def test_key_order_matches_the_server(conn: Any) -> None:
    """Python sorts keys with key_sort_function exactly as the server's ORDER BY does."""
    conn.execute(
        'CREATE TABLE keys (t text, c text COLLATE "C", bp bpchar(4), u uuid, by bytea, '
        "n numeric(12,3), ts timestamptz, d date)"
    )
    rng = random.Random(11)
    alphabet = [
        "a",
        "b",
        "A",
        " ",
        "\t",
        "~",
        "é",
        "ß",
        "\u00a0",
        "ǅ",
        "€",
        "😀",
        "\U0010fffd",
        "0",
    ]
    rows = []
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4)))
        rows.append(
            (
                text,
                text,
                text,
                f"{rng.getrandbits(128):032x}",
                rng.randbytes(rng.randint(0, 3)),
                f"{rng.randint(-(10**5), 10**5) / 1000:.3f}",
                f"{rng.randint(1, 9999):04d}-01-01 00:00:0{rng.randint(0, 9)}+00",
                rng.choice(["infinity", "-infinity", f"{rng.randint(1000, 9999)}-06-30"]),
            )
        )
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO keys VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", rows)
    for column in columns_of(conn, "keys"):
        _, result = output_texts(conn, f"SELECT {column.name} FROM keys ORDER BY 1")
        texts = [row[0] for row in result]
        parse = value_parser(column)
        values = [t if parse is None or t is None else parse(t) for t in texts]
        key = key_sort_function(column) or (lambda v: v)
        assert values == sorted(values, key=key), column.name
    c = {col.name: col for col in columns_of(conn, "keys")}
    assert c["t"].collation == "C.UTF-8" and key_sort_function(c["t"]) is None
    assert key_sort_function(c["bp"]) is not None
    conn.execute("""CREATE COLLATION public."C" (locale = 'C')""")  # not pg_catalog's "C"
    conn.execute('ALTER TABLE keys ADD COLUMN pc text COLLATE public."C", ADD COLUMN f float8')
    c = {col.name: col for col in columns_of(conn, "keys")}
    for name in ("pc", "f"):
        with pytest.raises(UnorderableKeyError):
            key_sort_function(c[name])

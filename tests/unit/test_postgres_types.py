"""PostgreSQL type mapping and text parsing, without a server.

The heart is one property: for every text the server can print, the column at once
(``text_to_arrow``, the snapshot path) equals the values one by one (``value_parser``, the
log path). The texts are generated as PostgreSQL prints them under SESSION_SETTINGS; the
integration test tests/integration/test_postgres_types_text.py checks the same against a
real server's texts.
"""

from __future__ import annotations

import math
import pickle
import struct
import uuid
from collections.abc import Sequence
from datetime import date, datetime, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.postgres.server import types
from sparkcdc.connectors.postgres.server.types import (
    COLUMNS_QUERY,
    DECIMAL_MODES,
    SESSION_SETTINGS,
    PgColumn,
    PgType,
    PgValueError,
    UnorderableKeyError,
    arrow_type,
    column_from_row,
    key_sort_function,
    numeric_precision_scale,
    text_to_arrow,
    value_parser,
)
from sparkcdc.core.errors import OptionError, SparkCdcError

UTC = timezone.utc

# ---------------------------------------------------------------------------------------
# Columns as COLUMNS_QUERY would describe them.


def numeric_typmod(precision: int, scale: int) -> int:
    return ((precision << 16) | (scale & 0x7FF)) + 4


def pg_type(name: str, typmod: int = -1, kind: str = "b", category: str = "X") -> PgType:
    bounds = numeric_precision_scale(typmod) if name == "numeric" else None
    declared = f"numeric({bounds[0]},{bounds[1]})" if bounds else name
    return PgType(name, kind, category, typmod, None, declared)


def column(
    name: str,
    typmod: int = -1,
    *,
    kind: str = "b",
    collation: str | None = None,
    deterministic: bool = True,
) -> PgColumn:
    return PgColumn("c", pg_type(name, typmod, kind), True, collation, deterministic)


def array_column(element: str, typmod: int = -1, delimiter: str = ",") -> PgColumn:
    element_type = PgType(element, "b", "X", typmod, None, element, delimiter)
    return PgColumn("c", PgType("_" + element, "b", "A", typmod, element_type, element + "[]"))


NUMERIC_10_2 = column("numeric", numeric_typmod(10, 2))

# ---------------------------------------------------------------------------------------
# The two paths, compared.


def canonical(value: Any) -> Any:
    """Comparable form: NaN equals NaN, -0.0 differs from 0.0 (exact equality)."""
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else struct.pack(">d", value)
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def per_value(texts: Sequence[str | None], col: PgColumn, mode: str = "precise") -> pa.Array:
    parse = value_parser(col, mode)
    values = [None if t is None else t if parse is None else parse(t) for t in texts]
    return pa.array(values, arrow_type(col, mode))


def check(texts: Sequence[str | None], col: PgColumn, mode: str = "precise") -> pa.Array | None:
    """text_to_arrow == per-value parsing, or both raise PgValueError. Returns the array."""
    strings = pa.array(texts, pa.string())
    try:
        expected = per_value(texts, col, mode)
    except PgValueError:
        with pytest.raises(PgValueError):
            text_to_arrow(strings, col, mode)
        return None
    got = text_to_arrow(strings, col, mode)
    assert got.type == expected.type == arrow_type(col, mode)
    assert canonical(got.to_pylist()) == canonical(expected.to_pylist())
    # also from a slice (non-zero offset) and as a chunked array
    if len(texts) > 1:
        sliced = text_to_arrow(strings.slice(1), col, mode)
        assert canonical(sliced.to_pylist()) == canonical(expected.to_pylist()[1:])
    chunked = text_to_arrow(pa.chunked_array([strings], pa.string()), col, mode)
    assert canonical(chunked.to_pylist()) == canonical(expected.to_pylist())
    return got


def with_nulls(values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str | None]]:
    return st.lists(st.one_of(st.none(), values, values, values), max_size=12)


# ---------------------------------------------------------------------------------------
# Texts as PostgreSQL prints them.


def pg_float_text(value: float | np.float32, positional_below: int) -> str:
    """float4out/float8out with extra_float_digits > 0: shortest exact digits, scientific
    when the exponent is < -4 or >= 6 (float4) / 15 (float8)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sci = np.format_float_scientific(value, unique=True, trim="-", exp_digits=2)
    exponent = int(sci.split("e")[1])
    if exponent < -4 or exponent >= positional_below:
        return sci
    return np.format_float_positional(value, unique=True, trim="-")


def pg_timestamp_text(value: datetime) -> str:
    text = value.replace(tzinfo=None).isoformat(" ")
    return text.rstrip("0") if "." in text else text


def pg_numeric_text(unscaled: int, scale: int) -> str:
    """numeric_out of unscaled * 10**-scale in a numeric(p, scale): exactly scale digits."""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    whole, fraction = digits[: len(digits) - scale], digits[len(digits) - scale :]
    return ("-" if unscaled < 0 else "") + whole + ("." + fraction if scale else "")


_ARRAY_SPACE = frozenset(" \t\n\r\v\f")


def pg_array_text(items: Sequence[str | None], delimiter: str = ",") -> str:
    """array_out: quote empty, NULL-like, or special-character elements; escape " and \\."""
    out = []
    for item in items:
        if item is None:
            out.append("NULL")
            continue
        needs_quotes = (
            item == ""
            or item.upper() == "NULL"
            or any(c in '{}"\\' or c == delimiter or c in _ARRAY_SPACE for c in item)
        )
        if needs_quotes:
            out.append('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            out.append(item)
    return "{" + delimiter.join(out) + "}"


TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"))  # as text can hold
INT2 = st.integers(-(2**15), 2**15 - 1).map(str)
INT4 = st.integers(-(2**31), 2**31 - 1).map(str)
INT8 = st.integers(-(2**63), 2**63 - 1).map(str)
OID = st.integers(0, 2**32 - 1).map(str)
FLOAT8 = st.floats(allow_nan=True, allow_infinity=True).map(lambda x: pg_float_text(x, 15))
FLOAT4 = st.floats(width=32, allow_nan=True, allow_infinity=True).map(
    lambda x: pg_float_text(np.float32(x), 6)
)
BOOL = st.sampled_from(["t", "f"])
BYTEA = st.binary(max_size=40).map(lambda b: "\\x" + b.hex())
DATE = st.one_of(
    st.dates().map(date.isoformat),
    st.sampled_from(["infinity", "-infinity"]),
)
TIMESTAMP = st.one_of(
    st.datetimes().map(pg_timestamp_text),
    st.sampled_from(["infinity", "-infinity", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999"]),
)
TIMESTAMPTZ = st.one_of(
    st.datetimes().map(lambda d: pg_timestamp_text(d) + "+00"),
    st.sampled_from(["infinity", "-infinity"]),
)


@st.composite
def decimal_column_texts(draw: st.DrawFn) -> tuple[PgColumn, list[str | None]]:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    bound = 10**precision - 1
    digits = st.integers(-bound, bound).map(lambda v: pg_numeric_text(v, scale))
    return column("numeric", numeric_typmod(precision, scale)), draw(with_nulls(digits))


SCALARS: dict[str, st.SearchStrategy[str]] = {
    "bool": BOOL,
    "int2": INT2,
    "int4": INT4,
    "int8": INT8,
    "oid": OID,
    "float4": FLOAT4,
    "float8": FLOAT8,
    "bytea": BYTEA,
    "date": DATE,
    "timestamp": TIMESTAMP,
    "timestamptz": TIMESTAMPTZ,
    "text": TEXT,
}


@pytest.mark.parametrize("name", sorted(SCALARS))
def test_column_equals_values(name: str) -> None:
    @settings(max_examples=150, deadline=None)
    @given(with_nulls(SCALARS[name]))
    def run(texts: list[str | None]) -> None:
        check(texts, column(name))

    run()


@settings(max_examples=200, deadline=None)
@given(decimal_column_texts())
def test_decimal_column_equals_values(case: tuple[PgColumn, list[str | None]]) -> None:
    col, texts = case
    got = check(texts, col)
    assert got is not None and pa.types.is_decimal(got.type)
    assert [None if v is None else format(v, "f") for v in got.to_pylist()] == texts


@pytest.mark.parametrize("name", [*sorted(set(SCALARS) - {"text"}), "numeric"])
def test_array_column_equals_values(name: str) -> None:
    elements = SCALARS.get(
        name, st.integers(-(10**11), 10**11).map(lambda v: pg_numeric_text(v, 2))
    )
    typmod = numeric_typmod(12, 2) if name == "numeric" else -1

    @settings(max_examples=80, deadline=None)
    @given(with_nulls(st.lists(st.one_of(st.none(), elements), max_size=6).map(pg_array_text)))
    def run(texts: list[str | None]) -> None:
        check(texts, array_column(name, typmod))

    run()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), TEXT), max_size=8))
@example(["a,b", 'c"d', None, "NULL", "null", "", " x", "a\\b", "{}", "}", "\u00a0", "é"])
def test_text_array_round_trip(items: list[str | None]) -> None:
    """array_out's quoting is undone exactly: every element comes back, NULL vs 'NULL'."""
    col = array_column("text")
    text = pg_array_text(items)
    parse = value_parser(col)
    assert parse is not None and parse(text) == items
    check([text, None], col)


def test_box_arrays_split_on_semicolons() -> None:
    col = array_column("box", delimiter=";")
    parse = value_parser(col)
    assert parse is not None
    assert parse("{(1,1),(0,0);(2,2),(1,1)}") == ["(1,1),(0,0)", "(2,2),(1,1)"]
    assert parse('{(1,1),(0,0);NULL;"(3,3),(2,2)"}') == ["(1,1),(0,0)", None, "(3,3),(2,2)"]


def test_array_texts_from_the_server() -> None:
    """Texts copied from PostgreSQL 15 (see the integration test for the live check)."""
    assert value_parser(array_column("text"))(  # type: ignore[misc]
        '{"a,b","c\\"d",NULL,"NULL",""," x","null","a\\\\b","{}"}'
    ) == ["a,b", 'c"d', None, "NULL", "", " x", "null", "a\\b", "{}"]
    assert value_parser(array_column("bytea"))('{"\\\\x0102",NULL}') == [  # type: ignore[misc]
        b"\x01\x02",
        None,
    ]
    assert value_parser(array_column("float4"))("{1.5,NaN,-Infinity}")[2] == -math.inf  # type: ignore[misc]
    assert value_parser(array_column("date"))("{2020-01-01,infinity}") == [  # type: ignore[misc]
        date(2020, 1, 1),
        date(9999, 12, 31),
    ]
    assert value_parser(array_column("int4"))("{}") == []  # type: ignore[misc]


# ---------------------------------------------------------------------------------------
# float32: one rounding, like Arrow's parse.


def nearest_float32(text: str) -> float:
    """The float32 nearest to the decimal text, ties to even, by exact arithmetic."""
    exact = Fraction(Decimal(text))
    guess = np.float32(float(exact))
    candidates = [
        np.nextafter(guess, np.float32(-np.inf)),
        guess,
        np.nextafter(guess, np.float32(np.inf)),
    ]
    return float(
        min(
            candidates,
            key=lambda c: (abs(Fraction(float(c)) - exact), int(np.array(c).view(np.uint32)) & 1),
        )
    )


@st.composite
def near_midpoint_texts(draw: st.DrawFn) -> str:
    """Long decimals at or next to the midpoint of two float32 values, where reading a
    double first and then rounding it to float32 rounds twice (and wrongly)."""
    bits = draw(st.integers(0, 0x7F7FFFFE))
    low, high = (np.array([bits, bits + 1], dtype=np.uint32).view(np.float32)).tolist()
    midpoint = (Fraction(low) + Fraction(high)) / 2
    offset = draw(st.sampled_from([-1, 0, 1])) * Fraction(1, 10 ** draw(st.integers(25, 60)))
    value = midpoint * (1 + offset)
    sign = draw(st.sampled_from(["", "-"]))
    return sign + format(Decimal(value.numerator) / Decimal(value.denominator), ".45e")


@settings(max_examples=500, deadline=None)
@given(near_midpoint_texts())
@example("1.0000000596046447753906250000001e+00")  # just above the 1 / 1+2^-23 midpoint
@example("1.00000005960464477539062499999999e+00")  # just below it
def test_float4_rounds_once(text: str) -> None:
    col = column("float4")
    parse = value_parser(col)
    assert parse is not None
    arrow = pa.array([text]).cast(pa.float32()).to_pylist()[0]
    assert parse(text) == arrow == nearest_float32(text)


def test_float4_double_rounding_case_is_handled() -> None:
    text = "1.0000000596046447753906250000001"  # rounds to the midpoint as a double
    assert float(text) == 1 + 2**-24
    assert float(np.float32(float(text))) == 1.0  # naive double -> float32: wrong
    parse = value_parser(column("float4"))
    assert parse is not None and parse(text) == 1 + 2**-23
    assert check([text], column("float4")) is not None


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32))
def test_float4_shortest_text_reads_back_exactly(value: float) -> None:
    parse = value_parser(column("float4"))
    assert parse is not None
    got = parse(pg_float_text(np.float32(value), 6))
    assert canonical(got) == canonical(float(np.float32(value)))


# ---------------------------------------------------------------------------------------
# The type mapping.

STRING_TYPES = [
    "text",
    "varchar",
    "bpchar",
    "name",
    "char",
    "citext",
    "xml",
    "json",
    "jsonb",
    "uuid",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "bit",
    "varbit",
    "time",
    "timetz",
    "interval",
    "tsvector",
    "tsquery",
    "pg_lsn",
    "money",
    "point",
    "box",
    "int2vector",
    "some_extension_type",
]


@pytest.mark.parametrize(
    ("col", "expected"),
    [
        (column("bool"), pa.bool_()),
        (column("int2"), pa.int16()),
        (column("int4"), pa.int32()),
        (column("int8"), pa.int64()),
        (column("oid"), pa.int64()),
        (column("float4"), pa.float32()),
        (column("float8"), pa.float64()),
        (NUMERIC_10_2, pa.decimal128(10, 2)),
        (column("numeric", numeric_typmod(38, 38)), pa.decimal128(38, 38)),
        (column("numeric", numeric_typmod(38, 0)), pa.decimal128(38, 0)),
        (column("numeric"), pa.string()),  # unconstrained
        (column("numeric", numeric_typmod(39, 2)), pa.string()),
        (column("numeric", numeric_typmod(5, -2)), pa.string()),
        (column("numeric", numeric_typmod(3, 5)), pa.string()),
        (column("bytea"), pa.binary()),
        (column("date"), pa.date32()),
        (column("timestamp"), pa.timestamp("us")),
        (column("timestamptz"), pa.timestamp("us", tz="UTC")),
        (array_column("int4"), pa.list_(pa.int32())),
        (array_column("numeric", numeric_typmod(10, 2)), pa.list_(pa.decimal128(10, 2))),
        (array_column("numeric"), pa.list_(pa.string())),
        (array_column("text"), pa.list_(pa.string())),
        (array_column("timestamptz"), pa.list_(pa.timestamp("us", tz="UTC"))),
        # only built-in base types map by name: an enum or a table's row type named 'date'
        (column("date", kind="e"), pa.string()),
        (column("int4", kind="c"), pa.string()),
        (column("int4range", kind="r"), pa.string()),
        *[(column(name), pa.string()) for name in STRING_TYPES],
    ],
    ids=lambda v: v.type.declared if isinstance(v, PgColumn) else str(v),
)
def test_arrow_type(col: PgColumn, expected: pa.DataType) -> None:
    assert arrow_type(col) == expected
    if "numeric" not in col.type.name:
        assert arrow_type(col, "string") == expected


def test_string_mode_reads_numerics_as_their_text() -> None:
    for col in (NUMERIC_10_2, column("numeric")):
        assert arrow_type(col, "string") == pa.string()
        assert value_parser(col, "string") is None
        got = check(["12.340", "NaN", "-Infinity", None], col, "string")
        assert got is not None and got.to_pylist() == ["12.340", "NaN", "-Infinity", None]
    assert arrow_type(array_column("numeric", numeric_typmod(10, 2)), "string") == pa.list_(
        pa.string()
    )
    assert value_parser(array_column("numeric"), "string")("{1.5,NaN}") == ["1.5", "NaN"]  # type: ignore[misc]


def test_unknown_decimal_mode_names_the_option() -> None:
    assert DECIMAL_MODES == ("precise", "string")
    with pytest.raises(OptionError, match=r"decimal\.handling\.mode"):
        arrow_type(NUMERIC_10_2, "double")


def test_string_columns_are_not_parsed() -> None:
    for name in STRING_TYPES:
        assert value_parser(column(name)) is None
        strings = pa.array(["a ", None, "{1,2}"], pa.string())
        assert text_to_arrow(strings, column(name)).equals(strings)


def test_numeric_typmods() -> None:
    assert numeric_precision_scale(-1) is None
    assert numeric_precision_scale(numeric_typmod(10, 2)) == (10, 2)
    assert numeric_precision_scale(numeric_typmod(1000, 1000)) == (1000, 1000)
    assert numeric_precision_scale(numeric_typmod(5, -2)) == (5, -2)
    assert numeric_precision_scale(numeric_typmod(3, -1000)) == (3, -1000)


def test_canonical_values() -> None:
    parse = value_parser(column("timestamptz"))
    assert parse is not None
    assert parse("2024-01-01 10:00:00.5+00") == datetime(2024, 1, 1, 10, 0, 0, 500000, UTC)
    assert parse("2024-01-01 10:00:00+05:30") == datetime(2024, 1, 1, 4, 30, tzinfo=UTC)
    assert parse("1900-01-01 00:00:00-00:25:21") == datetime(1900, 1, 1, 0, 25, 21, tzinfo=UTC)
    assert parse("infinity") == datetime(9999, 12, 31, 23, 59, 59, 999999, UTC)
    assert parse("-infinity") == datetime(1, 1, 1, tzinfo=UTC)
    assert parse("2024-01-01 10:00:00+00").tzinfo is UTC
    ts = value_parser(column("timestamp"))
    assert ts is not None
    assert ts("2024-02-29 23:59:59.000001") == datetime(2024, 2, 29, 23, 59, 59, 1)
    assert ts("infinity") == datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert ts("-infinity") == datetime(1, 1, 1)
    d = value_parser(column("date"))
    assert d is not None
    assert (d("infinity"), d("-infinity")) == (date(9999, 12, 31), date(1, 1, 1))
    assert value_parser(column("bool"))("t") is True  # type: ignore[misc]
    assert value_parser(column("bytea"))("\\x00ff") == b"\x00\xff"  # type: ignore[misc]
    assert value_parser(NUMERIC_10_2)("-0.05") == Decimal("-0.05")  # type: ignore[misc]
    assert value_parser(column("float8"))("-Infinity") == -math.inf  # type: ignore[misc]
    assert value_parser(column("int8"))("-9223372036854775808") == -(2**63)  # type: ignore[misc]


def test_timestamptz_offsets_match_arrow() -> None:
    """Other sessions' zones print offsets; both paths convert them to the same instant
    (and refuse instants that leave years 1..9999 once in UTC)."""
    col = column("timestamptz")
    check(["2024-06-01 12:00:00.25+05:30", "2024-06-01 12:00:00-08", None], col)
    check(["1900-01-01 00:00:00-00:25:21"], col)
    assert check(["0001-01-01 00:00:00+05"], col) is None  # 0000-12-31 19:00 UTC: refused


def test_parsers_and_key_functions_pickle() -> None:
    columns = [
        column("bool"),
        column("float4"),
        NUMERIC_10_2,
        column("date"),
        column("timestamptz"),
        array_column("bytea"),
    ]
    for col in columns:
        parse = value_parser(col)
        assert parse is not None
        again = pickle.loads(pickle.dumps(parse))
        assert again is not parse
    key = key_sort_function(column("bpchar", collation="C"))
    assert key is not None and pickle.loads(pickle.dumps(key))("a  ") == "a"
    assert pickle.loads(pickle.dumps(column("int4"))) == column("int4")


# ---------------------------------------------------------------------------------------
# Values Spark cannot hold.


def assert_refused(
    col: PgColumn, text: str, *words: str, mode: str = "precise", shown: str | None = None
) -> None:
    """Both paths raise PgValueError naming the column, the value (``shown``: the element
    of an array) and the ``words`` (what to do)."""
    parse = value_parser(col, mode)
    assert parse is not None
    with pytest.raises(PgValueError) as caught:
        parse(text)
    message = str(caught.value)
    assert "'c'" in message  # the column
    assert repr(shown or text) in message  # the value
    for word in words:
        assert word in message
    with pytest.raises(PgValueError):
        text_to_arrow(pa.array([None, text]), col, mode)
    assert isinstance(caught.value, SparkCdcError)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numerics_need_string_mode(text: str) -> None:
    assert_refused(NUMERIC_10_2, text, "decimal.handling.mode", "'string'", "numeric(10,2)")
    array = array_column("numeric", numeric_typmod(10, 2))
    assert_refused(array, "{1.00," + text + "}", "decimal.handling.mode", shown=text)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("date", "0044-03-15 BC"),
        ("date", "10000-01-01"),
        ("timestamp", "0044-03-15 10:00:00 BC"),
        ("timestamp", "10000-01-01 00:00:00.5"),
        ("timestamptz", "0044-03-15 10:00:00+00 BC"),
        ("timestamptz", "294276-12-31 23:59:59.999999+00"),
    ],
)
def test_years_outside_1_to_9999_are_refused(name: str, text: str) -> None:
    assert_refused(column(name), text, "years 1 to 9999")


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("[0:1]={1,2}", "explicit bounds"),
        ("[2:2]={7}", "explicit bounds"),
        ("{{1,2},{3,4}}", "multi-dimensional"),
        ("{{}}", "multi-dimensional"),
    ],
)
def test_arrays_of_other_shapes_are_refused(text: str, word: str) -> None:
    assert_refused(array_column("int4"), text, word, "'table-name'")
    assert_refused(array_column("text"), text, word)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("bool", "true"),
        ("bytea", "\\001\\002"),  # bytea_output 'escape'
        ("bytea", "\\x0"),
        ("date", "01/02/2024"),  # DateStyle SQL
        ("timestamp", "2024-01-01T10:00:00Z"),
        ("timestamptz", "Mon Jan 01 10:00:00 2024 UTC"),
    ],
)
def test_text_of_other_session_settings_is_refused(name: str, text: str) -> None:
    assert_refused(column(name), text, "SESSION_SETTINGS")


@pytest.mark.parametrize("text", ['{"a}', "{a,}", '{"a"b}', "{a{b}", "{,}", "{a}b}"])
def test_malformed_arrays_are_refused(text: str) -> None:
    with pytest.raises(PgValueError):
        value_parser(array_column("text"))(text)  # type: ignore[misc]


def test_long_values_are_shortened_in_messages() -> None:
    with pytest.raises(PgValueError) as caught:
        value_parser(column("date"))("x" * 10_000)  # type: ignore[misc]
    assert len(str(caught.value)) < 600 and "10000 chars" in str(caught.value)


# ---------------------------------------------------------------------------------------
# Key order.


@pytest.mark.parametrize(
    "col",
    [
        column("int2"),
        column("int4"),
        column("int8"),
        column("oid"),
        NUMERIC_10_2,
        column("date"),
        column("timestamp"),
        column("timestamptz"),
        column("bytea"),
        column("uuid"),
        column("text", collation="C"),
        column("varchar", collation="POSIX"),
        column("name", collation="C"),
        column("text", collation="ucs_basic"),
        column("text", collation="C.UTF-8"),
        column("text", collation="C.utf8"),
    ],
    ids=lambda c: f"{c.type.name}-{c.collation}",
)
def test_natural_key_order(col: PgColumn) -> None:
    assert key_sort_function(col) is None


def test_bpchar_keys_ignore_trailing_spaces_only() -> None:
    key = key_sort_function(column("bpchar", collation="C"))
    assert key is not None
    padded = ["a\t   ", "a    ", "ab   ", "     ", " a   ", "\t    "]
    # PostgreSQL: 'a' < 'a\t' (the spaces are not compared), '' sorts first
    assert sorted(padded, key=key) == ["     ", "\t    ", " a   ", "a    ", "a\t   ", "ab   "]
    assert sorted(padded) != sorted(padded, key=key)


@settings(max_examples=200)
@given(st.lists(st.binary(min_size=16, max_size=16), min_size=2, max_size=10))
def test_uuid_text_sorts_like_its_bytes(raw: list[bytes]) -> None:
    texts = [str(uuid.UUID(bytes=b)) for b in raw]
    assert key_sort_function(column("uuid")) is None
    assert sorted(texts) == [str(uuid.UUID(bytes=b)) for b in sorted(raw)]


@settings(max_examples=200)
@given(st.lists(TEXT, min_size=2, max_size=10))
def test_code_point_order_is_utf8_byte_order(texts: list[str]) -> None:
    assert [t.encode() for t in sorted(texts)] == sorted(t.encode() for t in texts)


@pytest.mark.parametrize(
    ("col", "words"),
    [
        (column("text", collation="en_US.UTF-8"), ["en_US.UTF-8", "COLLATE", "key-column"]),
        (column("text", collation="icu:und"), ["icu:und", "COLLATE"]),
        (column("varchar", collation="public.C"), ["public.C"]),
        (column("text", collation="C", deterministic=False), ["COLLATE"]),
        (column("bpchar", collation="und-x-icu"), ["und-x-icu"]),
        (column("citext", collation="C"), ["citext", "key-column"]),
        (column("float8"), ["NaN", "key-column"]),
        (column("float4"), ["NaN"]),
        (column("bool"), ["bool"]),
        (column("numeric"), ["'string'"]),
        (column("numeric", numeric_typmod(40, 0)), ["decimal(38)"]),
        (column("jsonb"), ["jsonb"]),
        (column("char", collation="C"), ["char"]),
        (array_column("int4"), ["arrays"]),
        (column("mood", kind="e"), ["mood"]),
    ],
    ids=lambda v: f"{v.type.name}-{v.collation}" if isinstance(v, PgColumn) else "",
)
def test_unorderable_keys(col: PgColumn, words: list[str]) -> None:
    with pytest.raises(UnorderableKeyError) as caught:
        key_sort_function(col)
    message = str(caught.value)
    assert "'c'" in message and "chunk key" in message
    for word in words:
        assert word in message
    assert isinstance(caught.value, ValueError)


def test_decimal_keys_need_precise_mode() -> None:
    assert key_sort_function(NUMERIC_10_2, "precise") is None
    with pytest.raises(UnorderableKeyError, match=r"decimal\.handling\.mode"):
        key_sort_function(NUMERIC_10_2, "string")


# ---------------------------------------------------------------------------------------
# Settings and catalog rows.


def test_session_settings() -> None:
    assert SESSION_SETTINGS == {
        "DateStyle": "ISO, YMD",
        "TimeZone": "UTC",
        "IntervalStyle": "iso_8601",
        "extra_float_digits": "3",
        "bytea_output": "hex",
        "client_encoding": "UTF8",
    }
    assert pickle.loads(pickle.dumps(SESSION_SETTINGS)) == SESSION_SETTINGS


def test_column_from_row() -> None:
    assert COLUMNS_QUERY.count("%s") == 1 and "%%" not in COLUMNS_QUERY
    row: tuple[Any, ...] = (
        16384,
        3,
        "amounts",
        True,
        "money2[]",
        "_numeric",
        "b",
        "A",
        ",",
        numeric_typmod(10, 2),
        "numeric",
        "b",
        "N",
        ",",
        numeric_typmod(10, 2),
        "numeric(10,2)",
        None,
        True,
    )
    col = column_from_row(row)
    element = PgType("numeric", "b", "N", numeric_typmod(10, 2), None, "numeric(10,2)")
    assert col == PgColumn(
        "amounts",
        PgType("_numeric", "b", "A", numeric_typmod(10, 2), element, "money2[]"),
        True,
        None,
        True,
    )
    assert arrow_type(col) == pa.list_(pa.decimal128(10, 2))
    scalar = column_from_row(
        (1, 1, "k", False, "character(5)", "bpchar", "b", "S", ",", 9)
        + (None,) * 6
        + ("C.UTF-8", True)
    )
    assert scalar == PgColumn(
        "k", PgType("bpchar", "b", "S", 9, None, "character(5)"), False, "C.UTF-8"
    )
    assert key_sort_function(scalar) is not None


def test_bytea_column_edge_cases() -> None:
    col = column("bytea")
    assert text_to_arrow(pa.array([], pa.string()), col).equals(pa.array([], pa.binary()))
    assert text_to_arrow(pa.array([None, None], pa.string()), col).to_pylist() == [None, None]
    big = ["\\x" + bytes(range(256)).hex() * 100, "\\x", None, "\\x00"]
    check(big, col)
    check(["\\x0g", None], col)  # not hex: both paths refuse


def test_sentinels_mixed_with_values_stay_vectorised_and_equal() -> None:
    check(["infinity", "2024-01-01", None, "-infinity"], column("date"))
    check(["infinity", "2024-01-01 00:00:00.1", None, "-infinity"], column("timestamp"))
    check(["-infinity", "2024-01-01 00:00:00.1+00", "infinity"], column("timestamptz"))
    check(["infinity", "0044-03-15 BC"], column("date"))


@pytest.mark.parametrize(
    ("col", "texts"),
    [
        (column("bool"), ["t", "f", None]),
        (column("int8"), ["-9223372036854775808", None]),
        (column("oid"), ["4294967295"]),
        (column("float4"), ["NaN", "-Infinity", "1.1", "-0", "1e-45", "3.4028235e+38"]),
        (column("float8"), ["NaN", "Infinity", "5e-324", "0.1"]),
        (NUMERIC_10_2, ["12345678.90", "-0.05", None]),
        (column("bytea"), ["\\x00ff", "\\x", None]),
        (column("date"), ["2024-02-29", "infinity", "-infinity", None]),
        (column("timestamp"), ["2024-02-29 10:00:00.000001", "-infinity", None]),
        (column("timestamptz"), ["2024-02-29 10:00:00.5+00", "infinity", None]),
    ],
    ids=lambda v: v.type.name if isinstance(v, PgColumn) else "",
)
def test_ordinary_columns_need_no_per_value_parsing(
    col: PgColumn, texts: list[str | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot path stays columnar for everything the server prints but errors."""
    expected = per_value(texts, col)
    monkeypatch.setattr(types, "value_parser", lambda *_: pytest.fail("per-value fallback"))
    got = text_to_arrow(pa.array(texts, pa.string()), col)
    assert canonical(got.to_pylist()) == canonical(expected.to_pylist())

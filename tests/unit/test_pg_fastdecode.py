"""The C decoder of pgoutput row changes (csrc/pgdecode.c, wal/fastdecode.py) against the
pure-Python path, without a server.

The property: for every Insert/Update/Delete message, ``FastChanges.change`` equals
``pgoutput.parse_message`` followed by ``types.value_parser`` on each value (same types,
same values, same reprs, timestamptz in the same ``timezone.utc``), and a message one
raises on, the other raises on too (ValueError for malformed messages, the parser's
PgValueError for values a type cannot hold). Texts are generated as PostgreSQL prints them
under SESSION_SETTINGS, plus the texts the C code must leave to Python (sentinels, BC and
5-digit years, NaN decimals, float32 midpoints, other spellings) and random garbage.

Run as a module for the throughput figures and a long leak check::

    .venv/bin/python -m tests.unit.test_pg_fastdecode [--leak]
"""

from __future__ import annotations

import contextlib
import math
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.postgres.server.types import (
    PgColumn,
    PgType,
    PgValueError,
    value_parser,
)
from sparkcdc.connectors.postgres.wal import fastdecode
from sparkcdc.connectors.postgres.wal.fastdecode import (
    FastChanges,
    Kind,
    available,
    fast_changes,
    kind_of,
    kinds_for,
)
from sparkcdc.connectors.postgres.wal.pgoutput import (
    UNCHANGED,
    Delete,
    Insert,
    Unchanged,
    Update,
    parse_message,
)
from sparkcdc.core.rows import Row
from tests.unit.test_postgres_types import (
    array_column,
    column,
    near_midpoint_texts,
    nearest_float32,
    numeric_typmod,
    pg_array_text,
    pg_float_text,
    pg_numeric_text,
    pg_timestamp_text,
)

pytestmark = pytest.mark.skipif(available() is not None, reason=f"{available()}")

UTC = timezone.utc

# ---------------------------------------------------------------------------------------
# Messages, built by hand (tests/unit/test_pgoutput.py's layout; values may be raw bytes so
# that invalid UTF-8 can be sent).

Value = str | bytes | Unchanged | None


def tuple_data(values: Sequence[Value]) -> bytes:
    out = struct.pack(">H", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value is UNCHANGED:
            out += b"u"
        else:
            raw = value if isinstance(value, bytes) else str(value).encode()
            out += b"t" + struct.pack(">I", len(raw)) + raw
    return out


def insert(oid: int, new: Sequence[Value]) -> bytes:
    return b"I" + struct.pack(">I", oid) + b"N" + tuple_data(new)


def update(oid: int, new: Sequence[Value], old: Sequence[Value] | None, kind: bytes) -> bytes:
    head = b"U" + struct.pack(">I", oid)
    if old is not None:
        head += kind + tuple_data(old)
    return head + b"N" + tuple_data(new)


def delete(oid: int, old: Sequence[Value], kind: bytes) -> bytes:
    return b"D" + struct.pack(">I", oid) + kind + tuple_data(old)


# ---------------------------------------------------------------------------------------
# The two paths.


@dataclass(frozen=True)
class Table:
    columns: tuple[PgColumn, ...]


def reference(data: bytes, columns: Sequence[PgColumn], mode: str) -> fastdecode.Change:
    """The pure-Python path: parse_message, then value_parser per value (both tuples'
    column counts checked first, as the C decoder checks them while parsing)."""
    message = parse_message(data)
    if not isinstance(message, Insert | Update | Delete):
        raise ValueError("not a row change")
    parsers = [value_parser(c, mode) for c in columns]
    images = [message.old if not isinstance(message, Insert) else None]
    images.append(message.new if not isinstance(message, Delete) else None)
    if any(image is not None and len(image) != len(columns) for image in images):
        raise ValueError("column count")

    def row(values: Sequence[Any] | None) -> Row | None:
        if values is None:
            return None
        return tuple(
            None if t is None else UNCHANGED if t is UNCHANGED else (p(t) if p else t)
            for t, p in zip(values, parsers, strict=True)
        )

    old, new = (row(image) for image in images)
    if isinstance(message, Insert):
        return "insert", message.oid, None, old, new
    if isinstance(message, Update):
        return "update", message.oid, message.old_kind, old, new
    return "delete", message.oid, message.old_kind, old, new


def outcome(call: Callable[[], fastdecode.Change]) -> tuple[str, Any]:
    """('ok', change) or ('error', what was raised): PgValueError, ValueError (malformed
    messages; UnicodeDecodeError is one too, and the paths may see a message's faults in
    another order), or the class of anything else a Python parser raises (decimal's
    InvalidOperation for garbage in a numeric column)."""
    try:
        return "ok", call()
    except PgValueError:
        return "error", "PgValueError"
    except ValueError:
        return "error", "ValueError"
    except Exception as exc:
        return "error", type(exc).__name__


def same_values(got: Any, expected: Any) -> None:
    """Identical values: same type, same repr (exact for floats, Decimal's scale, a
    datetime's tzinfo), equal, and UTC datetimes in the very timezone.utc object."""
    assert type(got) is type(expected)
    assert repr(got) == repr(expected)
    if isinstance(got, tuple):
        for g, e in zip(got, expected, strict=True):
            same_values(g, e)
    elif isinstance(got, float):
        assert struct.pack(">d", got) == struct.pack(">d", expected) or (
            math.isnan(got) and math.isnan(expected)
        )
    elif isinstance(got, list):
        assert repr(got) == repr(expected)  # lists hold NaNs too: repr compares them
    else:
        assert got == expected
        if isinstance(got, datetime):
            assert got.tzinfo is expected.tzinfo


def check(data: bytes, columns: Sequence[PgColumn], mode: str) -> tuple[str, Any]:
    fast = FastChanges(Table(tuple(columns)), mode)
    expected = outcome(lambda: reference(data, columns, mode))
    got = outcome(lambda: fast.change(data))
    assert got[0] == expected[0], (got, expected)
    if got[0] == "ok":
        same_values(got[1], expected[1])
    else:
        assert got[1] == expected[1], (got, expected)
    return got


# ---------------------------------------------------------------------------------------
# Columns and texts as PostgreSQL prints them, and the texts the C code must leave alone.

INT_TRICKY = ["0", "-0", "+1", " 1", "1 ", "1_000", "٣", "", "-", "007", "1.0"]
INT_LIMITS = ["-9223372036854775808", "9223372036854775807", "4294967295", "-32768"]
INT_LIMITS += ["99999999999999999999", "-9223372036854775809", "18446744073709551616"]
FLOAT_TRICKY = ["NaN", "Infinity", "-Infinity", "-0", "0", "1e-45", "3.4028235e+38", "1e+300"]
FLOAT_TRICKY += ["nan", "inf", "-inf", "infinity", "1e999", "-1e-999", "1_0", " 1", ".5"]
FLOAT_TRICKY += ["5.", "1E5", "1e", "e5", "-", "", "1.0000000596046447753906250000001"]
FLOAT_TRICKY += ["3.4028236e+38", "3.4028235677973366e+38", "-NaN", "١.٥", "0x1p3"]
DECIMAL_TRICKY = ["12.300", "-0.00", "0", "0.0", "NaN", "Infinity", "-Infinity", "1e5"]
DECIMAL_TRICKY += [".5", "5.", "00012.10", "-", "", " 1", "1_0", "12345678901234567890.123"]
DATE_TRICKY = ["infinity", "-infinity", "2024-02-29", "2023-02-29", "0001-01-01"]
DATE_TRICKY += ["9999-12-31", "12345-01-01", "2024-01-01 BC", "0000-01-01", "20240101"]
DATE_TRICKY += ["2024-13-01", "2024-1-01", "", "2024-W01-1", "١٢٣٤-01-01"]
TIME_TRICKY = ["2024-01-01 00:00:00.", "2024-01-01T10:00:00", "2024-01-01 24:00:00"]
TIME_TRICKY += ["2024-01-01 23:59:60", "12345-01-01 00:00:00", "2024-01-01 10:00:00 BC"]
TIME_TRICKY += ["2024-01-01 10:00:00.1234567", "2024-01-01 10:00:00,5", "2024-01-01 10:00"]
TIME_TRICKY += ["0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "2024-02-30 00:00:00"]
TIME_TRICKY += ["infinity", "-infinity", "2024-01-01 10:00:00.5", "2024-01-01x10:00:00"]
TZ_TRICKY = [t + "+00" for t in TIME_TRICKY if t[0].isdigit()]
TZ_TRICKY += ["infinity", "-infinity", "2024-01-01 10:00:00+05:30", "2024-01-01 10:00:00-08"]
TZ_TRICKY += ["2024-01-01 10:00:00+00:00", "0044-03-15 12:00:00+00 BC", "+00", "x+00"]
TZ_TRICKY += ["2024-01-01 10:00:00.123+00", "0001-01-01 00:00:00+01", "2024-01-01 10:00:00"]
BYTEA_TRICKY = ["\\x", "\\xABcd", "\\x1", "\\xzz", "abc", "\\X00", "", "\\x0g"]
BOOL_TRICKY = ["t", "f", "true", "false", "x", "", "T"]

TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20)
GARBAGE = st.one_of(TEXT, st.text("0123456789-+:. eE", max_size=30))


def mixed(
    *strategies: st.SearchStrategy[str], tricky: Sequence[str] = ()
) -> st.SearchStrategy[str]:
    """Mostly server texts, sometimes a tricky text, now and then garbage."""
    usual = st.one_of(*strategies)
    options = [usual, usual, usual, usual]
    if tricky:
        options.append(st.sampled_from(list(tricky)))
    options.append(GARBAGE)
    return st.one_of(*options)


def ints(low: int, high: int) -> st.SearchStrategy[str]:
    return mixed(st.integers(low, high).map(str), tricky=[*INT_TRICKY, *INT_LIMITS])


FLOAT8_TEXTS = st.floats().map(lambda x: pg_float_text(x, 15))
FLOAT4_TEXTS = st.floats(width=32).map(lambda x: pg_float_text(np.float32(x), 6))
DATE_TEXTS = st.dates().map(date.isoformat)
TIMESTAMP_TEXTS = st.datetimes().map(pg_timestamp_text)


@st.composite
def integer_midpoint_texts(draw: st.DrawFn) -> str:
    """Integers halfway between two float32 values (from 2^24 on, where the step is 2 or
    more), spelled as the server may print them ('6.431177e+07' is float4out's shortest text
    of 64311772, exactly such a tie) or slightly off the midpoint."""
    bits = draw(st.integers(0x4B800000, 0x5F7FFFFE))  # 2^24 <= value < 2^64
    low, high = np.array([bits, bits + 1], dtype=np.uint32).view(np.float32).tolist()
    midpoint = (int(low) + int(high)) // 2
    digits = str(midpoint)
    spelling = draw(st.integers(0, 5))
    if spelling == 0:
        text = digits
    elif spelling == 1:  # scientific, trailing zeros dropped (float4out)
        mantissa = (digits[0] + "." + digits[1:]).rstrip("0").rstrip(".")
        text = f"{mantissa}e+{len(digits) - 1:02}"
    elif spelling == 2:  # with zeros after the point
        text = digits + "." + "0" * draw(st.integers(1, 5))
    elif spelling == 3:  # just off the midpoint: not a tie
        text = digits + "." + "0" * draw(st.integers(0, 8)) + draw(st.sampled_from("159"))
    elif spelling == 4:  # a multiple of ten written with a negative exponent
        text = digits + "0" * draw(st.integers(1, 3)) + "e-" + str(draw(st.integers(1, 3)))
    else:  # the next integers: from 2^54 on their double is the midpoint, they are not
        text = str(midpoint + draw(st.sampled_from([-1, 1])))
    return draw(st.sampled_from(["", "-"])) + text


@st.composite
def numeric_column(draw: st.DrawFn) -> tuple[PgColumn, st.SearchStrategy[str]]:
    precision = draw(st.integers(1, 40))
    scale = draw(st.integers(0, precision))
    bound = 10**precision - 1
    texts = st.integers(-bound, bound).map(lambda v: pg_numeric_text(v, scale))
    return column("numeric", numeric_typmod(precision, scale)), mixed(texts, tricky=DECIMAL_TRICKY)


def fixed(name: str, texts: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.just((column(name), texts))


COLUMNS: st.SearchStrategy[tuple[PgColumn, st.SearchStrategy[str]]] = st.one_of(
    fixed("bool", mixed(st.sampled_from(["t", "f"]), tricky=BOOL_TRICKY)),
    fixed("int2", ints(-(2**15), 2**15 - 1)),
    fixed("int4", ints(-(2**31), 2**31 - 1)),
    fixed("int8", ints(-(2**63), 2**63 - 1)),
    fixed("oid", ints(0, 2**32 - 1)),
    fixed(
        "float4",
        mixed(FLOAT4_TEXTS, near_midpoint_texts(), integer_midpoint_texts(), tricky=FLOAT_TRICKY),
    ),
    fixed("float8", mixed(FLOAT8_TEXTS, tricky=FLOAT_TRICKY)),
    numeric_column(),
    fixed("numeric", mixed(st.integers().map(str), tricky=DECIMAL_TRICKY)),  # no typmod
    fixed("date", mixed(DATE_TEXTS, tricky=DATE_TRICKY)),
    fixed("timestamp", mixed(TIMESTAMP_TEXTS, tricky=TIME_TRICKY)),
    fixed("timestamptz", mixed(TIMESTAMP_TEXTS.map(lambda t: t + "+00"), tricky=TZ_TRICKY)),
    fixed(
        "bytea", mixed(st.binary(max_size=30).map(lambda b: "\\x" + b.hex()), tricky=BYTEA_TRICKY)
    ),
    fixed("text", TEXT),
    fixed("varchar", TEXT),
    fixed("json", TEXT),
    fixed("uuid", st.uuids().map(str)),
    fixed("interval", st.sampled_from(["P1Y2M3DT4H5M6S", "PT0S", "-P1D"])),
    st.just((PgColumn("c", PgType("date", "e", "E")), TEXT)),  # an enum named 'date': text
    st.just(
        (
            array_column("int4"),
            mixed(st.lists(st.one_of(st.none(), st.integers(-99, 99).map(str))).map(pg_array_text)),
        )
    ),
    st.just((array_column("text"), st.lists(st.one_of(st.none(), TEXT)).map(pg_array_text))),
)


@st.composite
def cases(draw: st.DrawFn) -> tuple[bytes, list[PgColumn], str]:
    """A random table and one change message of it."""
    mode = draw(st.sampled_from(["precise", "precise", "string"]))
    drawn = draw(st.lists(COLUMNS, min_size=1, max_size=8))
    columns = [c for c, _ in drawn]

    def image(unchanged: bool = True) -> list[Value]:
        values: list[Value] = []
        for _, texts in drawn:
            choice = draw(st.integers(0, 9))
            if choice == 0:
                values.append(None)
            elif choice == 1 and unchanged:
                values.append(UNCHANGED)
            elif choice == 2 and draw(st.booleans()):  # bytes that are not UTF-8
                values.append(draw(st.sampled_from([b"\xff", b"1\xc3", b"\xed\xa0\x80"])))
            else:
                values.append(draw(texts))
        return values

    def key_image() -> list[Value]:
        values = image(unchanged=False)
        keys = draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
        return [v if k else None for v, k in zip(values, keys, strict=True)]

    oid = draw(st.integers(0, 2**32 - 1))
    tag = draw(st.sampled_from("IUUUD"))
    if tag == "I":
        data = insert(oid, image())
    elif tag == "D":
        kind = draw(st.sampled_from([b"O", b"K"]))
        data = delete(oid, image(False) if kind == b"O" else key_image(), kind)
    else:
        kind = draw(st.sampled_from([b"O", b"K", b"N"]))
        old = None if kind == b"N" else image(False) if kind == b"O" else key_image()
        data = update(oid, image(), old, kind)
    return data, columns, mode


# ---------------------------------------------------------------------------------------
# The properties.


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_fast_path_equals_python_path(case: tuple[bytes, list[PgColumn], str]) -> None:
    data, columns, mode = case
    check(data, columns, mode)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.data())
def test_malformed_messages_raise_in_both(
    case: tuple[bytes, list[PgColumn], str], data: st.DataObject
) -> None:
    """Every strict prefix of a message is truncated; a changed byte (kind markers, lengths,
    counts, values) is either still a message both read alike or an error in both."""
    message, columns, mode = case
    for end in range(len(message)):
        assert check(message[:end], columns, mode)[0] == "error"
    for _ in range(10):
        at = data.draw(st.integers(1, len(message) - 1))
        byte = data.draw(st.sampled_from([*b"tnubxNKOIUD", 0, 1, 2, 0x7F, 0xFF]))
        check(message[:at] + bytes([byte]) + message[at + 1 :], columns, mode)
    check(message + b"trailing bytes are ignored, as by parse_message", columns, mode)


def test_errors_are_parse_messages() -> None:
    """The structural errors carry pgoutput.parse_message's messages."""
    fast = FastChanges(Table((column("int4"), column("text"))), "precise")
    good = insert(7, ["1", "x"])
    for data, message in [
        (insert(7, ["1", "x"])[:-1], "truncated pgoutput message"),
        (good[:5] + b"X" + good[6:], "pgoutput Insert: expected 'N' at byte 5"),
        (good[:8] + b"b" + good[9:], "binary format"),
        (good[:8] + b"x" + good[9:], "unknown column kind 120 at byte 8"),
        (delete(7, ["1", "x"], b"Q"), "expected an old tuple marker 'K' or 'O'"),
        (update(7, ["1", "x"], ["1", "x"], b"O").replace(b"N", b"M"), "expected 'N' at byte"),
        (insert(7, ["1"]), "pgoutput tuple of 1 columns for a decoder of 2 columns"),
        (b"", "empty pgoutput message"),
        (b"B" + bytes(20), "not a pgoutput row change"),
    ]:
        with pytest.raises(ValueError, match=message):
            fast.change(data)


# ---------------------------------------------------------------------------------------
# Kinds, and the fast path really taken for the server's texts.


def test_kinds_match_the_c_module() -> None:
    from sparkcdc.connectors.postgres.wal import _pgdecode

    assert {k.name: k.value for k in Kind} == {
        name.removeprefix("KIND_"): getattr(_pgdecode, name)
        for name in dir(_pgdecode)
        if name.startswith("KIND_")
    }


def test_kinds_for_columns() -> None:
    columns = [
        column("bool"),
        column("int2"),
        column("int4"),
        column("int8"),
        column("oid"),
        column("float8"),
        column("float4"),
        column("numeric", numeric_typmod(10, 2)),
        column("numeric", numeric_typmod(39, 2)),  # beyond decimal(38): text
        column("numeric"),
        column("date"),
        column("timestamp"),
        column("timestamptz"),
        column("bytea"),
        column("text"),
        column("json"),
        array_column("int4"),
        PgColumn("c", PgType("date", "e", "E")),
    ]
    K = Kind
    assert kinds_for(columns, "precise") == (
        *(K.BOOL, K.INT, K.INT, K.INT, K.INT, K.FLOAT8, K.FLOAT4, K.DECIMAL, K.STR, K.STR),
        *(K.DATE, K.TIMESTAMP, K.TIMESTAMPTZ, K.BYTEA, K.STR, K.STR, K.FALLBACK, K.STR),
    )
    assert kinds_for([column("numeric", numeric_typmod(10, 2))], "string") == (K.STR,)
    assert kind_of(str.upper) == K.FALLBACK


SERVER_TEXTS: list[tuple[PgColumn, st.SearchStrategy[str]]] = [
    (column("bool"), st.sampled_from(["t", "f"])),
    (column("int8"), st.integers(-(2**63), 2**63 - 1).map(str)),
    (column("oid"), st.integers(0, 2**32 - 1).map(str)),
    (column("float8"), st.floats().map(lambda x: pg_float_text(x, 15))),
    (column("float4"), FLOAT4_TEXTS),
    (
        column("numeric", numeric_typmod(38, 6)),
        st.integers(-(10**38) + 1, 10**38 - 1).map(lambda v: pg_numeric_text(v, 6)),
    ),
    (column("date"), DATE_TEXTS),
    (column("timestamp"), TIMESTAMP_TEXTS),
    (column("timestamptz"), TIMESTAMP_TEXTS.map(lambda t: t + "+00")),
    (column("bytea"), st.binary(max_size=30).map(lambda b: "\\x" + b.hex())),
    (column("text"), TEXT),
]


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_server_texts_are_converted_in_c(data: st.DataObject) -> None:
    """The finite texts the server prints never need Python (else no speed-up)."""
    from sparkcdc.connectors.postgres.wal import _pgdecode

    columns = [c for c, _ in SERVER_TEXTS]
    values: list[Value] = [data.draw(texts) for _, texts in SERVER_TEXTS]
    message = update(16384, values, values, b"O")
    decoder = _pgdecode.Decoder(kinds_for(columns, "precise"), UNCHANGED)
    *_, fallback = decoder.change(message)
    assert fallback is False
    check(message, columns, "precise")


# ---------------------------------------------------------------------------------------
# float32: the C rounding equals types._parse_float4 everywhere, midpoints included.


def float4_change(text: str) -> tuple[Any, bool]:
    from sparkcdc.connectors.postgres.wal import _pgdecode

    decoder = _pgdecode.Decoder((Kind.FLOAT4,), UNCHANGED)
    _, _, _, _, new, fallback = decoder.change(insert(1, [text]))
    assert new is not None
    return new[0], fallback


@settings(max_examples=2000, deadline=None)
@given(
    st.one_of(
        FLOAT4_TEXTS,
        near_midpoint_texts(),
        integer_midpoint_texts(),
        st.floats(width=32).map(lambda x: repr(float(x))),  # the float32 as a double's text
        st.floats().map(repr),  # any double: mostly between float32 values
        st.floats(width=32, allow_nan=False, allow_infinity=False).map(
            lambda x: format(Decimal(x), ".40e")  # exact float32 texts, long
        ),
    )
)
@example("1.0000000596046447753906250000001")
@example("1.00000005960464477539062499999999")
@example("1.000000059604644775390625")  # exactly the midpoint: ties to even
@example("3.4028235e+38")
@example("3.40282357e+38")  # rounds to FLT_MAX
@example("3.4028236e+38")  # beyond: PgValueError
@example("1e-46")  # below the smallest subnormal's half: 0
@example("7.00649232e-46")  # just above it: the smallest subnormal
def test_float4_equals_python(text: str) -> None:
    parse = value_parser(column("float4"))
    assert parse is not None
    try:
        expected = parse(text)
    except PgValueError:
        value, fallback = float4_change(text)
        assert fallback and value == text
        return
    value, fallback = float4_change(text)
    got = parse(value) if fallback else value
    assert type(got) is float
    assert struct.pack(">d", got) == struct.pack(">d", expected) or (
        math.isnan(got) and math.isnan(expected)
    )
    if abs(got) < 3.4e38:  # finite, and the helper's neighbours too
        assert got == nearest_float32(text)  # and both are the correctly rounded float32


def test_float4_midpoint_is_left_to_python() -> None:
    text = "1.0000000596046447753906250000001"  # a double exactly at the midpoint
    value, fallback = float4_change(text)
    assert fallback and value == text
    assert float4_change("1.5") == (1.5, False)


@pytest.mark.parametrize(
    ("text", "fallback"),
    [
        ("6.431177e+07", False),  # float4out's text of 64311772: a true tie, to even
        ("-6.431177e+07", False),
        ("64311770", False),
        ("64311770.000", False),
        ("643117700e-1", False),
        ("6.4311770000000001e+07", True),  # the double is the tie, the text is not
        ("6.43117699999999999e+07", True),
        ("64311770.5", False),  # no tie as a double
        ("1152921573326323712", False),  # a tie beyond 2^53: to even (the lower one)
        ("1152921573326323713", True),  # its double is that tie, but the text is above
    ],
)
def test_float4_integer_ties_stay_in_c(text: str, fallback: bool) -> None:
    parse = value_parser(column("float4"))
    assert parse is not None
    value, deferred = float4_change(text)
    assert deferred is fallback
    assert (parse(value) if deferred else value) == parse(text) == nearest_float32(text)


# ---------------------------------------------------------------------------------------
# Other interfaces.


def test_values_and_tags() -> None:
    cols = (
        column("int8"),
        column("date"),
        column("timestamptz"),
        column("numeric", numeric_typmod(10, 2)),
        column("text"),
    )
    fast = FastChanges(Table(cols), "precise")
    row = ["-9223372036854775808", "infinity", "2024-01-02 03:04:05.5+00", "12.30", "é"]
    tag, oid, kind, old, new = fast.change(update(4_000_000_000, row, row, b"O"))
    assert (tag, oid, kind) == ("update", 4_000_000_000, "O")
    assert (
        old
        == new
        == (
            -(2**63),
            date(9999, 12, 31),
            datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC),
            Decimal("12.30"),
            "é",
        )
    )
    assert new is not None and new[2].tzinfo is UTC and str(new[3]) == "12.30"
    assert fast.change(delete(1, ["1", None, None, None, None], b"K"))[:4] == (
        "delete",
        1,
        "K",
        (1, None, None, None, None),
    )
    assert fast.change(insert(2, ["1", UNCHANGED, None, None, "x"]))[4] == (
        1,
        UNCHANGED,
        None,
        None,
        "x",
    )
    assert fast.change(memoryview(insert(2, ["1", None, None, None, "x"])))[0] == "insert"
    assert fast.change(bytearray(insert(2, ["1", None, None, None, "x"])))[0] == "insert"
    with pytest.raises(PgValueError, match="Spark decimal cannot hold"):
        fast.change(insert(2, ["1", None, None, "NaN", "x"]))


def test_decoder_arguments() -> None:
    from sparkcdc.connectors.postgres.wal import _pgdecode

    with pytest.raises(ValueError, match="not a column kind"):
        _pgdecode.Decoder((0, 11), UNCHANGED)
    with pytest.raises(ValueError, match="not a column kind"):
        _pgdecode.Decoder((2**70,), UNCHANGED)
    with pytest.raises(TypeError):
        _pgdecode.Decoder(("x",), UNCHANGED)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _pgdecode.Decoder([0], UNCHANGED)  # type: ignore[arg-type]
    assert _pgdecode.Decoder((Kind.INT, Kind.STR), None).kinds == (1, 0)
    bare = _pgdecode.Decoder.__new__(_pgdecode.Decoder)
    with pytest.raises(RuntimeError, match="__init__"):
        bare.change(insert(1, []))
    with pytest.raises(TypeError):
        _pgdecode.Decoder((), None).change("I")  # type: ignore[arg-type]


def test_without_the_extension(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    why = "its C extension is not built (test); reinstall with pip install -e ."
    monkeypatch.setattr(fastdecode, "_IMPORT_ERROR", why)
    monkeypatch.setattr(fastdecode, "_explained", [])
    table = Table((column("int4"),))
    with caplog.at_level("INFO", logger=fastdecode.__name__):
        assert fast_changes(table, "precise") is None
        assert fast_changes(table, "precise") is None
    assert available() == why
    assert [r.getMessage() for r in caplog.records].count(
        f"pgoutput changes are decoded in Python: {why}"
    ) == 1
    with pytest.raises(RuntimeError, match="unavailable"):
        FastChanges(table, "precise")


# ---------------------------------------------------------------------------------------
# References: no object leaks on any path (values, fallbacks, errors).

LEAK_TABLE = Table(
    (
        column("int8"),
        column("bool"),
        column("float4"),
        column("float8"),
        column("numeric", numeric_typmod(10, 2)),
        column("date"),
        column("timestamp"),
        column("timestamptz"),
        column("bytea"),
        column("text"),
        array_column("int4"),
    )
)
_ROW = ["1", "t", "1.5", "2.5", "1.20", "2024-01-01", "2024-01-01 00:00:00.1"]
_ROW += ["2024-01-01 00:00:00+00", "\\x00ff", "é", "{1,NULL}"]
_SENTINELS = ["99999999999999999999", "t", "NaN", "-Infinity", "1.20", "infinity"]
_SENTINELS += ["-infinity", "infinity", "\\x", "", "{}"]
LEAK_MESSAGES = [
    update(5, _ROW, _ROW, b"O"),
    update(5, _SENTINELS, _ROW, b"O"),
    insert(5, [None, UNCHANGED, *_ROW[2:]]),
    delete(5, _ROW, b"K"),
    update(5, _ROW, _ROW, b"O")[:-3],  # truncated
    insert(5, [*_ROW[:-1], "{1,"]),  # a PgValueError in the array parser
    insert(5, [*_ROW[:-1], b"\xff"]),  # not UTF-8
    insert(5, ["1", "t", "1.5", "2.5", "1.20", "2024-01-01", "x", None, None, None, None]),
    delete(5, _ROW, b"Z"),
]


def decode_all(fast: FastChanges, rounds: int) -> None:
    for _ in range(rounds):
        for message in LEAK_MESSAGES:
            with contextlib.suppress(ValueError, PgValueError):
                fast.change(message)


def test_no_reference_leaks() -> None:
    fast = FastChanges(LEAK_TABLE, "precise")
    decode_all(fast, 100)  # caches warm
    refs = [sys.getrefcount(o) for o in (UNCHANGED, *LEAK_MESSAGES, Decimal, UTC)]
    blocks = sys.getallocatedblocks()
    decode_all(fast, 3000)
    assert [sys.getrefcount(o) for o in (UNCHANGED, *LEAK_MESSAGES, Decimal, UTC)] == refs
    # ~27000 changes: a leak of even one object per change would show as thousands
    assert sys.getallocatedblocks() - blocks < 500


# ---------------------------------------------------------------------------------------
# Throughput (python -m tests.unit.test_pg_fastdecode).

BENCH_TABLE = Table(
    (
        column("int8"),
        column("date"),
        column("timestamp"),
        column("int4"),
        column("int4"),
        column("numeric", numeric_typmod(10, 2)),
        column("varchar"),
    )
)


def bench_messages(n: int) -> list[bytes]:
    """Updates of bench.orders (benchmarks/postgres.py's table) with the full old row."""
    out = []
    for i in range(n):
        row: list[Value] = [
            str(1_000_000 + i),
            f"2021-{1 + i % 12:02}-{1 + i % 28:02}",
            f"2021-03-04 05:{i % 60:02}:{(i * 7) % 60:02}" + ("" if i % 3 else f".{i % 999}"),
            str(1 + i % 10),
            str(100 + i % 5000),
            f"{(i * 37 % 1000000) / 100:.2f}",
            f"purchaser-{i * 13 % 100000}",
        ]
        new = [*row[:3], str(2 + i % 10), *row[4:]]
        out.append(update(16384, new, row, b"O"))
    return out


def python_path(messages: Sequence[bytes]) -> list[tuple[Row, Row]]:
    """What decode.WalDecoder does per update, in Python: parse_message + value parsers."""
    parsers = [
        (i, p) for i, c in enumerate(BENCH_TABLE.columns) if (p := value_parser(c)) is not None
    ]
    out = []
    for data in messages:
        message = parse_message(data)
        assert isinstance(message, Update) and message.old is not None
        images = []
        for values in (message.old, message.new):
            row: list[Any] = list(values)
            for i, parse in parsers:
                value = row[i]
                if value is not None:
                    row[i] = parse(value)
            images.append(tuple(row))
        out.append((images[0], images[1]))
    return out


def c_path(messages: Sequence[bytes]) -> list[tuple[Row, Row]]:
    fast = FastChanges(BENCH_TABLE, "precise")
    change = fast.change
    out = []
    for data in messages:
        _, _, _, old, new = change(data)
        assert old is not None and new is not None
        out.append((old, new))
    return out


def benchmark(n: int = 200_000) -> dict[str, float]:
    """Changes per CPU second of both paths (best of 3), after checking they agree."""
    messages = bench_messages(n)
    assert c_path(messages[:2000]) == python_path(messages[:2000])
    rates = {}
    for name, run in (("python", python_path), ("c", c_path)):
        best = math.inf
        for _ in range(3):
            start = time.process_time()
            run(messages)
            best = min(best, time.process_time() - start)
        rates[name] = n / best
    return rates


def leak_run(changes: int = 1_000_000) -> None:
    """RSS over ``changes`` decodes of LEAK_MESSAGES (values, fallbacks and errors)."""

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    fast = FastChanges(LEAK_TABLE, "precise")
    rounds = changes // len(LEAK_MESSAGES) // 4
    decode_all(fast, 1000)
    start = rss()
    for quarter in range(4):
        decode_all(fast, rounds)
        print(
            f"after {(quarter + 1) * rounds * len(LEAK_MESSAGES)} changes: RSS "
            f"{rss() / 2**20:.1f} MiB (start {start / 2**20:.1f} MiB)"
        )


if __name__ == "__main__":
    if "--leak" in sys.argv:
        leak_run()
    rates = benchmark()
    print(
        "7-column update with the full old row (bigint, date, timestamp, int, int, "
        "numeric(10,2), varchar):"
    )
    print(f"  python: {rates['python']:>10,.0f} changes/CPU-s")
    print(f"  C:      {rates['c']:>10,.0f} changes/CPU-s  ({rates['c'] / rates['python']:.1f}x)")

"""The compiled row decoder on hand-built row images (no server): wire layouts, NULL and
columns-present bitmaps, update image pairs, plan fallbacks and malformed input."""

from __future__ import annotations

import struct
import subprocess
import sys
from collections.abc import Callable
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.rowdecode import (
    AVAILABLE,
    FastRowDecoder,
    WireColumn,
    refuse_images_without_columns,
)
from sparkcdc.connectors.mysql.binlog.rowdecode import plan as p
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.table import TableId

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the C extension is not built")


def col(name: str, data_type: str, column_type: str | None = None, **kw: object) -> MySqlColumn:
    return MySqlColumn(name, 1, data_type, column_type or data_type, **kw)  # type: ignore[arg-type]


def table(*columns: MySqlColumn) -> CapturedTable:
    return CapturedTable(TableId("d", "t"), columns, (columns[0].name,), columns[0].name)


def decoder(pairs: list[tuple[WireColumn, MySqlColumn]]) -> FastRowDecoder:
    fast = FastRowDecoder([w for w, _ in pairs], table(*(c for _, c in pairs)))
    assert fast.covered, fast.plan.reason
    return fast


def all_present(n: int) -> bytes:
    return bytes([0xFF]) * ((n + 7) // 8)


def test_ints_null_bitmap_and_update_pairs() -> None:
    fast = decoder(
        [
            (WireColumn("a", p.LONG), col("a", "int")),
            (WireColumn("b", p.TINY, unsigned=True), col("b", "tinyint", unsigned=True)),
            (WireColumn("c", p.LONGLONG, unsigned=True), col("c", "bigint", unsigned=True)),
            (WireColumn("d", p.TINY), col("d", "tinyint", "tinyint(1)")),
        ]
    )
    image1 = bytes([0b0000]) + struct.pack("<iBQb", -5, 255, 2**64 - 1, -1)
    image2 = bytes([0b0110]) + struct.pack("<ib", 7, 0)  # b and c NULL
    body = image1 + image2
    rows = fast.decode(body, 0, len(body), all_present(4), all_present(4))
    assert rows == [(-5, 255, Decimal(2**64 - 1), True), (7, None, None, False)]
    assert type(rows[0][3]) is bool


def test_columns_absent_from_the_image_are_none() -> None:
    fast = decoder(
        [(WireColumn("a", p.LONG), col("a", "int")), (WireColumn("b", p.LONG), col("b", "int"))]
    )
    body = bytes([0]) + struct.pack("<i", 3)  # only b present: one null bit
    assert fast.decode(body, 0, len(body), bytes([0b10])) == [(None, 3)]


def decimal_bytes(text: str, precision: int, scale: int) -> bytes:
    """MySQL's binary DECIMAL, built the documented way (groups of 9 digits, big-endian)."""
    negative = text.startswith("-")
    whole, _, frac = text.lstrip("-").partition(".")
    frac = frac.ljust(scale, "0")
    intg = precision - scale
    whole = whole.rjust(intg, "0")
    sizes = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
    out = b""
    lead = intg % 9
    if lead:
        out += int(whole[:lead]).to_bytes(sizes[lead], "big")
    for i in range(lead, intg, 9):
        out += int(whole[i : i + 9]).to_bytes(4, "big")
    for i in range(0, scale - scale % 9, 9):
        out += int(frac[i : i + 9]).to_bytes(4, "big")
    if scale % 9:
        out += int(frac[scale - scale % 9 :]).to_bytes(sizes[scale % 9], "big")
    data = bytearray(out)
    data[0] ^= 0x80
    if negative:
        data = bytearray(b ^ 0xFF for b in data)
    return bytes(data)


@pytest.mark.parametrize(
    ("text", "precision", "scale"),
    [
        ("123.45", 10, 2),
        ("-0.01", 10, 2),
        ("-" + "9" * 35 + "." + "9" * 30, 65, 30),
        ("0.00001", 5, 5),
        ("-1234567890123456789", 19, 0),
    ],
)
def test_decimals(text: str, precision: int, scale: int) -> None:
    family = "decimal" if precision <= 38 else "decimal_text"
    fast = decoder(
        [
            (
                WireColumn("x", p.NEWDECIMAL, precision=precision, decimals=scale),
                col("x", "decimal", precision=precision, scale=scale),
            )
        ]
    )
    body = b"\x00" + decimal_bytes(text, precision, scale)
    (row,) = fast.decode(body, 0, len(body), all_present(1))
    expected = Decimal(text) if family == "decimal" else format(Decimal(text), f".{scale}f")
    assert row == (expected,)
    if family == "decimal":
        assert isinstance(row[0], Decimal) and row[0].as_tuple() == Decimal(text).as_tuple()


def test_temporal_values() -> None:
    fast = decoder(
        [
            (WireColumn("d", p.DATE), col("d", "date")),
            (WireColumn("dt", p.DATETIME2, fsp=6), col("dt", "datetime", datetime_precision=6)),
            (WireColumn("ts", p.TIMESTAMP2, fsp=3), col("ts", "timestamp", datetime_precision=3)),
            (WireColumn("tm", p.TIME2, fsp=6), col("tm", "time", datetime_precision=6)),
            (WireColumn("y", p.YEAR), col("y", "year")),
        ]
    )
    d = (2024 << 9) | (2 << 5) | 29
    ym = 2024 * 13 + 2
    dt = (1 << 39) | (ym << 22) | (29 << 17) | (12 << 12) | (34 << 6) | 56
    micros = -(((12 << 12) | (34 << 6) | 56) << 24 | 123456)  # -12:34:56.123456 packed
    body = (
        b"\x00"
        + d.to_bytes(3, "little")
        + dt.to_bytes(5, "big")
        + (789012).to_bytes(3, "big")
        + (1_700_000_000).to_bytes(4, "big")
        + (250 * 10).to_bytes(2, "big")
        + (micros + 0x800000000000).to_bytes(6, "big")
        + bytes([124])
    )
    (row,) = fast.decode(body, 0, len(body), all_present(5))
    assert row == (
        date(2024, 2, 29),
        datetime(2024, 2, 29, 12, 34, 56, 789012),
        datetime.fromtimestamp(1_700_000_000, timezone.utc).replace(microsecond=250000),
        "-12:34:56.123456",
        2024,
    )
    zero = b"\x00" + b"\x00" * 3 + (1 << 39).to_bytes(5, "big") + b"\x00" * 3
    zero += b"\x00" * 6 + (0x800000000000).to_bytes(6, "big") + b"\x00"
    (row,) = fast.decode(zero, 0, len(zero), all_present(5))
    assert row == (None, None, None, "00:00:00.000000", 0)


def test_strings_binary_enum_set_bits() -> None:
    fast = decoder(
        [
            (
                WireColumn("s", p.VARCHAR, max_length=400, encoding="utf8"),
                col("s", "varchar", charset="utf8mb4"),
            ),
            (
                WireColumn("l", p.STRING, max_length=10, encoding="cp1252"),
                col("l", "char", charset="latin1"),
            ),
            (
                WireColumn("b", p.STRING, max_length=4, encoding="binary"),
                col("b", "binary", "binary(4)"),
            ),
            (
                WireColumn("e", p.ENUM, size=1, enum_values=("", "x", "y")),
                col("e", "enum", "enum('x','y')", charset="utf8mb4"),
            ),
            (
                WireColumn("st", p.SET, size=1, set_values=("c", "a", "b")),
                col("st", "set", "set('c','a','b')", charset="utf8mb4"),
            ),
            (WireColumn("bt", p.BIT, bits=12, bytes=2), col("bt", "bit", "bit(12)")),
        ]
    )
    text = "ü😀".encode()
    body = (
        b"\x00"
        + struct.pack("<H", len(text))
        + text
        + b"\x02\xe9\x80"
        + b"\x01\x07"
        + b"\x02"
        + b"\x05"
        + b"\xff\xff"
    )
    (row,) = fast.decode(body, 0, len(body), all_present(6))
    assert row == ("ü😀", "é€", b"\x07\x00\x00\x00", "y", "c,b", b"\x0f\xff")
    empty = b"\x00" + b"\x00\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00\x00"
    (row,) = fast.decode(empty, 0, len(empty), all_present(6))
    assert row == ("", "", b"\x00" * 4, "", "", b"\x00\x00")


def test_truncated_body_raises() -> None:
    fast = decoder([(WireColumn("a", p.LONGLONG), col("a", "bigint"))])
    body = b"\x00" + b"\x01\x02\x03"
    with pytest.raises(ValueError, match="truncated"):
        fast.decode(body, 0, len(body), all_present(1))


def test_uncovered_plans_name_their_reason() -> None:
    cases = [
        (WireColumn("j", p.JSON, length_size=4), col("j", "json")),
        (WireColumn("u", p.VARCHAR, max_length=20, encoding="ucs2"), col("u", "varchar")),
        (WireColumn(None, p.LONG), col("n", "int")),
        (WireColumn("t", 11), col("t", "time")),  # pre-5.6 TIME
    ]
    for wire, column in cases:
        fast = FastRowDecoder([wire], table(column))
        assert not fast.covered
        assert fast.plan.reason


# ---------------------------------------------------------------------------------------
# Hostile bodies (issue 63): refused by both outputs, tuples and Arrow, in bounded time.


def tuples(fast: FastRowDecoder) -> Callable[[bytes], object]:
    return lambda body: fast.decode(body, 0, len(body), all_present(1))


def both_outputs(fast: FastRowDecoder, column: MySqlColumn) -> list[Callable[[bytes], object]]:
    """decode() and decode_into() of one-column row images, each as body -> result."""
    from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import ColumnSinks
    from sparkcdc.connectors.mysql.server.types import arrow_type

    types = [arrow_type(column)]
    layout = fast.arrow_layout(types)
    assert layout is not None
    sink = ColumnSinks({TableId("d", "t"): types}).sink_for(TableId("d", "t"), layout)
    assert sink is not None
    return [tuples(fast), lambda body: fast.decode_into(sink, body, 0, len(body), all_present(1))]


#: A child that decodes images of no columns: the bug grew a list (or a sink) until memory
#: ran out, so it runs with its address space capped (a regression fails, never swaps).
NO_COLUMNS_CHILD = """
import resource
from decimal import Decimal
resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))
from sparkcdc.connectors.mysql.binlog.rowdecode import _rowdecode

one = _rowdecode.Decoder(((1, 0, 4, 0),), 1, Decimal)  # INT, 4 bytes
none = _rowdecode.Decoder((), 0, Decimal)  # a table map of no columns
body = bytes(8)
cases = [
    ("decode", lambda: one.decode(body, 0, 8, b"\\x00")),
    ("decode update", lambda: one.decode(body, 0, 8, b"\\x00", b"\\x00")),
    ("decode_into", lambda: one.decode_into(_rowdecode.Sink((4,)), body, 0, 8, b"\\x00")),
    ("no columns", lambda: none.decode(body, 0, 8, b"")),
]
for name, call in cases:
    try:
        call()
    except ValueError as exc:
        assert "all-zero columns-present bitmap" in str(exc), (name, exc)
    else:
        raise AssertionError(f"{name}: decoded")
# one image of an update pair with no columns still reads: the pair takes bytes
assert one.decode(b"\\x00" + (5).to_bytes(4, "little"), 0, 5, b"\\x00", b"\\x01") == [
    (None,), (5,)
]
print("refused")
"""


def test_images_of_no_columns_are_refused_not_read_forever() -> None:
    child = subprocess.run(
        [sys.executable, "-c", NO_COLUMNS_CHILD], capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0 and child.stdout.strip() == "refused", child.stderr[-2000:]


def test_a_decimal_digit_group_out_of_range_is_refused() -> None:
    """Groups hold 9 decimal digits in 4 bytes (fewer in the partial ones): larger numbers
    are no DECIMAL a server writes, and summed into 128 bits they overflowed."""
    for precision, scale in ((38, 2), (20, 10), (65, 30)):
        wire = WireColumn("x", p.NEWDECIMAL, precision=precision, decimals=scale)
        column = col("x", "decimal", precision=precision, scale=scale)
        fast = decoder([(wire, column)])
        good = decimal_bytes("1" * (precision - scale) + "." + "9" * scale, precision, scale)
        outputs = both_outputs(fast, column) if precision <= 38 else [tuples(fast)]
        for run in outputs:
            run(b"\x00" + good)
            for bad in (
                b"\xff" * len(good),  # every group 0xFF..: positive, all out of range
                b"\x00" * len(good),  # the same, negative
                good[:-1] + b"\xff",  # only the last (partial or full) group
            ):
                with pytest.raises(ValueError, match="DECIMAL digit group out of range"):
                    run(b"\x00" + bad)


@pytest.mark.parametrize(
    ("wire_type", "data_type", "fsp", "image", "valid"),
    [
        # DATETIME2 2024-02-29 12:34:56 + fraction bytes
        (p.DATETIME2, "datetime", 6, "dt", (999999).to_bytes(3, "big")),
        (p.DATETIME2, "datetime", 2, "dt", bytes([99])),
        (p.DATETIME2, "datetime", 3, "dt", (9990).to_bytes(2, "big")),
        (p.TIMESTAMP2, "timestamp", 2, "ts", bytes([99])),
        (p.TIMESTAMP2, "timestamp", 5, "ts", (999990).to_bytes(3, "big")),
    ],
)
def test_fractions_of_a_second_or_more_are_refused(
    wire_type: int, data_type: str, fsp: int, image: str, valid: bytes
) -> None:
    """A fraction field holding more digits than its fsp (a second or more) was NULL/None on
    one path and a value 1-16 s off on the Arrow path of TIMESTAMP; the library raises for
    it. Both outputs refuse it now; the largest valid fraction still reads."""
    column = col("x", data_type, datetime_precision=fsp)
    fast = decoder([(WireColumn("x", wire_type, fsp=fsp), column)])
    ym = 2024 * 13 + 2
    head = (
        ((1 << 39) | (ym << 22) | (29 << 17) | (12 << 12) | (34 << 6) | 56).to_bytes(5, "big")
        if image == "dt"
        else (1_700_000_000).to_bytes(4, "big")
    )
    size = len(valid)
    too_big = [(10 ** (2 * size)).to_bytes(size, "big"), b"\xff" * size]
    for run in both_outputs(fast, column):
        run(b"\x00" + head + valid)
        for fraction in too_big:
            with pytest.raises(ValueError, match="fractional seconds out of range"):
                run(b"\x00" + head + fraction)
    (row,) = fast.decode(b"\x00" + head + valid, 0, 1 + len(head) + size, all_present(1))
    stored = int.from_bytes(valid, "big") // (10 if fsp % 2 else 1)
    assert row[0].microsecond == stored * 10 ** (6 - fsp)


def test_time_fractions_of_a_second_or_more_are_refused() -> None:
    column = col("t", "time", datetime_precision=2)
    fast = decoder([(WireColumn("t", p.TIME2, fsp=2), column)])
    minus_a_hundredth = (0x800000 - 1).to_bytes(3, "big") + bytes([0x100 - 1])
    (row,) = fast.decode(b"\x00" + minus_a_hundredth, 0, 5, all_present(1))
    assert row == ("-00:00:00.01",)
    for fraction in (100, 0xFF):  # positive: 1.00 s / 2.55 s
        body = b"\x00" + (0x800000 + 1).to_bytes(3, "big") + bytes([fraction])
        with pytest.raises(ValueError, match="fractional seconds out of range"):
            fast.decode(body, 0, len(body), all_present(1))
    negative = b"\x00" + (0x800000 - 1).to_bytes(3, "big") + bytes([0x100 - 100])  # -1.00 s
    with pytest.raises(ValueError, match="fractional seconds out of range"):
        fast.decode(negative, 0, len(negative), all_present(1))


def test_the_reference_path_refuses_images_without_columns_too() -> None:
    """python-mysql-replication reads images of no columns forever as well: the reference
    path checks the bitmaps first, with the C decoder's rule."""
    refuse = refuse_images_without_columns
    with pytest.raises(ValueError, match="all-zero columns-present bitmap"):
        refuse(b"\x00\x00", None, 9)
    with pytest.raises(ValueError, match="all-zero columns-present bitmap"):
        refuse(b"\x00", b"\x00", 1)
    refuse(b"\x00", b"\x02", 9)  # the after images take bytes
    refuse(b"\x01", None, 9)
    refuse(b"\x00", None, 0)  # nothing left to read
    refuse(None, None, 9)  # an event the library skipped (no table map)


# Properties: any bytes in a DECIMAL or a fraction field decode as the format says, on both
# outputs, or are refused when they hold more than their digits (a model of the format in
# Python, next to the C code).

DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


def decimal_size(precision: int, scale: int) -> int:
    intg = precision - scale
    return (intg // 9) * 4 + DIG2BYTES[intg % 9] + (scale // 9) * 4 + DIG2BYTES[scale % 9]


def decimal_text(raw: bytes, precision: int, scale: int) -> str | None:
    """The server's text of a binary DECIMAL; None when a group is out of range."""
    negative = not raw[0] & 0x80
    data = bytearray(raw)
    data[0] ^= 0x80
    if negative:
        data = bytearray(b ^ 0xFF for b in data)
    intg = precision - scale
    groups = [intg % 9] * bool(intg % 9) + [9] * (intg // 9) + [9] * (scale // 9)
    groups += [scale % 9] * bool(scale % 9)
    digits, at = "", 0
    for width in groups:
        value = int.from_bytes(data[at : at + DIG2BYTES[width]], "big")
        at += DIG2BYTES[width]
        if value >= 10**width:
            return None
        digits += str(value).rjust(width, "0")
    text = ("-" if negative else "") + (digits[:intg].lstrip("0") or "0")
    return text + ("." + digits[intg:] if scale else "")


@st.composite
def decimals(draw: st.DrawFn) -> tuple[int, int, bytes]:
    precision = draw(st.integers(1, 65))
    scale = draw(st.integers(0, min(30, precision)))
    size = decimal_size(precision, scale)
    digits = st.text("0123456789", min_size=precision, max_size=precision)
    valid = digits.map(
        lambda d: decimal_bytes(
            ("-" if d[0] in "02468" else "")
            + (d[: precision - scale] or "0")
            + "."
            + d[precision - scale :],
            precision,
            scale,
        )
    )
    return precision, scale, draw(st.one_of(valid, st.binary(min_size=size, max_size=size)))


@settings(max_examples=300, deadline=None)
@given(decimals())
def test_decimal_bytes_read_as_the_format_says_or_are_refused(case: tuple[int, int, bytes]) -> None:
    precision, scale, raw = case
    wire = WireColumn("x", p.NEWDECIMAL, precision=precision, decimals=scale)
    column = col("x", "decimal", precision=precision, scale=scale)
    fast = decoder([(wire, column)])
    text = decimal_text(raw, precision, scale)
    body = b"\x00" + raw
    outputs = both_outputs(fast, column) if precision <= 38 else [tuples(fast)]
    for run in outputs:
        if text is None:
            with pytest.raises(ValueError, match="DECIMAL digit group out of range"):
                run(body)
    if text is None:
        return
    (row,) = fast.decode(body, 0, len(body), all_present(1))
    if precision > 38:
        assert row == (text,)
        return
    assert row == (Decimal(text),) and row[0].as_tuple() == Decimal(text).as_tuple()
    arrays = arrow_of(fast, column, body)
    assert arrays == [Decimal(text)]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([(p.DATETIME2, "datetime"), (p.TIMESTAMP2, "timestamp")]),
    st.integers(0, 6),
    st.data(),
)
def test_fraction_bytes_read_as_the_format_says_or_are_refused(
    wire_type: tuple[int, str], fsp: int, data: st.DataObject
) -> None:
    code, data_type = wire_type
    column = col("x", data_type, datetime_precision=fsp)
    fast = decoder([(WireColumn("x", code, fsp=fsp), column)])
    size = (fsp + 1) // 2
    fraction = data.draw(st.binary(min_size=size, max_size=size))
    ym = 2024 * 13 + 2
    head = (
        ((1 << 39) | (ym << 22) | (29 << 17) | (12 << 12) | (34 << 6) | 56).to_bytes(5, "big")
        if code == p.DATETIME2
        else (1_700_000_000).to_bytes(4, "big")
    )
    stored = int.from_bytes(fraction, "big") // (10 if fsp % 2 else 1)
    micros = stored * 10 ** (6 - fsp) if size else 0
    body = b"\x00" + head + fraction
    for run in both_outputs(fast, column):
        if micros > 999_999:
            with pytest.raises(ValueError, match="fractional seconds out of range"):
                run(body)
        else:
            run(body)
    if micros <= 999_999:
        (row,) = fast.decode(body, 0, len(body), all_present(1))
        assert row[0].microsecond == micros
        assert arrow_of(fast, column, body) == [row[0]]


def arrow_of(fast: FastRowDecoder, column: MySqlColumn, body: bytes) -> list[object]:
    """decode_into's values of one column, as Python values."""
    from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import ColumnSinks
    from sparkcdc.connectors.mysql.server.types import arrow_type

    types = [arrow_type(column)]
    sinks = ColumnSinks({TableId("d", "t"): types})
    sink = sinks.sink_for(TableId("d", "t"), fast.arrow_layout(types))
    assert sink is not None
    fast.decode_into(sink, body, 0, len(body), all_present(1))
    (array,) = sinks.take(TableId("d", "t"))
    values: list[object] = array.to_pylist()
    return values

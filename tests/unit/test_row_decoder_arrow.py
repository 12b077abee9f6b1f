"""The compiled decoder's Arrow output (decode_into a Sink) equals pa.array of its tuple
output (decode) in the table's Arrow types: every kind, NULLs, absent columns, update pairs,
many events into one sink, 1..1000 columns, and errors leave the sink as it was."""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog.rowdecode import AVAILABLE, FastRowDecoder, WireColumn
from sparkcdc.connectors.mysql.binlog.rowdecode import plan as p
from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import ColumnSinks
from sparkcdc.connectors.mysql.server.types import MySqlColumn, arrow_type
from sparkcdc.core.table import TableId
from tests.unit.test_row_decoder import all_present, col, decimal_bytes, table

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="the C extension is not built")

T = TableId("d", "t")


def setup(pairs: list[tuple[WireColumn, MySqlColumn]]) -> tuple[FastRowDecoder, list[pa.DataType]]:
    columns = [c for _, c in pairs]
    fast = FastRowDecoder([w for w, _ in pairs], table(*columns))
    assert fast.covered, fast.plan.reason
    return fast, [arrow_type(c) for c in columns]


def check(
    fast: FastRowDecoder,
    types: list[pa.DataType],
    events: Sequence[tuple[bytes, bytes, bytes | None]],
) -> list[pa.Array]:
    """Decode ``events`` (body, present, present2) both ways into one sink; compare."""
    layout = fast.arrow_layout(types)
    assert layout is not None
    sinks = ColumnSinks({T: types})
    sink = sinks.sink_for(T, layout)
    assert sink is not None
    rows = []
    for body, present, present2 in events:
        expected = fast.decode(body, 0, len(body), present, present2)
        assert fast.decode_into(sink, body, 0, len(body), present, present2) == len(expected)
        rows += expected
    arrays = sinks.take(T)
    struct_type = pa.struct([pa.field(f"c{i}", t) for i, t in enumerate(types)])
    reference = pa.array(rows, struct_type).flatten()
    for got, want in zip(arrays, reference, strict=True):
        got.validate(full=True)
        assert got.equals(want), (got, want)
    return arrays


def test_ints_bools_nulls_and_update_pairs() -> None:
    fast, types = setup(
        [
            (WireColumn("a", p.LONG), col("a", "int")),
            (WireColumn("b", p.TINY, unsigned=True), col("b", "tinyint", unsigned=True)),
            (WireColumn("c", p.LONGLONG, unsigned=True), col("c", "bigint", unsigned=True)),
            (WireColumn("d", p.TINY), col("d", "tinyint", "tinyint(1)")),
            (WireColumn("e", p.TINY), col("e", "tinyint")),
            (WireColumn("f", p.SHORT, unsigned=True), col("f", "smallint", unsigned=True)),
            (WireColumn("g", p.INT24), col("g", "mediumint")),
            (WireColumn("h", p.LONG, unsigned=True), col("h", "int", unsigned=True)),
            (WireColumn("i", p.LONGLONG), col("i", "bigint")),
        ]
    )
    image1 = (
        bytes([0, 0])
        + struct.pack("<iBQbbH", -5, 255, 2**64 - 1, -1, -128, 65535)
        + (-8388608 & 0xFFFFFF).to_bytes(3, "little")
        + struct.pack("<Iq", 2**32 - 1, -(2**63))
    )
    image2 = bytes([0b11111110, 0b1]) + struct.pack("<i", 7)  # all but a NULL
    body = image1 + image2
    check(fast, types, [(body, all_present(9), all_present(9)), (image2, all_present(9), None)])


def test_absent_columns_are_null() -> None:
    fast, types = setup(
        [(WireColumn("a", p.LONG), col("a", "int")), (WireColumn("b", p.LONG), col("b", "int"))]
    )
    body = bytes([0]) + struct.pack("<i", 3)
    (a, b) = check(fast, types, [(body, bytes([0b10]), None)])
    assert a.to_pylist() == [None] and b.to_pylist() == [3]


@pytest.mark.parametrize(
    ("text", "precision", "scale"),
    [
        ("123.45", 10, 2),
        ("-0.01", 10, 2),
        ("0.00001", 5, 5),
        ("-1234567890123456789", 19, 0),
        ("-" + "9" * 20 + "." + "9" * 18, 38, 18),
        ("9" * 38, 38, 0),
        ("-" + "9" * 35 + "." + "9" * 30, 65, 30),  # beyond 38 digits: text
    ],
)
def test_decimals(text: str, precision: int, scale: int) -> None:
    fast, types = setup(
        [
            (
                WireColumn("x", p.NEWDECIMAL, precision=precision, decimals=scale),
                col("x", "decimal", precision=precision, scale=scale),
            )
        ]
    )
    body = b"\x00" + decimal_bytes(text, precision, scale) + b"\x01"  # second row NULL
    check(fast, types, [(body, all_present(1), None)])


def test_temporal_values_and_zero_dates() -> None:
    fast, types = setup(
        [
            (WireColumn("d", p.DATE), col("d", "date")),
            (WireColumn("dt", p.DATETIME2, fsp=6), col("dt", "datetime", datetime_precision=6)),
            (WireColumn("ts", p.TIMESTAMP2, fsp=3), col("ts", "timestamp", datetime_precision=3)),
            (WireColumn("tm", p.TIME2, fsp=6), col("tm", "time", datetime_precision=6)),
            (WireColumn("y", p.YEAR), col("y", "year")),
            (WireColumn("t0", p.TIME2, fsp=0), col("t0", "time", datetime_precision=0)),
            (WireColumn("d0", p.DATETIME2, fsp=1), col("d0", "datetime", datetime_precision=1)),
        ]
    )
    d = (2024 << 9) | (2 << 5) | 29
    ym = 2024 * 13 + 2
    dt = (1 << 39) | (ym << 22) | (29 << 17) | (12 << 12) | (34 << 6) | 56
    old = (1 << 39) | ((1 * 13 + 1) << 22) | (1 << 17)  # 0001-01-01
    bad = (1 << 39) | ((2023 * 13 + 2) << 22) | (30 << 17)  # 2023-02-30: NULL like None
    micros = -(((12 << 12) | (34 << 6) | 56) << 24 | 123456)
    body = (
        b"\x00"
        + d.to_bytes(3, "little")
        + dt.to_bytes(5, "big")
        + (789012).to_bytes(3, "big")
        + (1_700_000_000).to_bytes(4, "big")
        + (250 * 10).to_bytes(2, "big")
        + (micros + 0x800000000000).to_bytes(6, "big")
        + bytes([124])
        + (0x800000 - 1).to_bytes(3, "big")
        + old.to_bytes(5, "big")
        + b"\x05"
    )
    zero = b"\x00" + b"\x00" * 3 + (1 << 39).to_bytes(5, "big") + b"\x00" * 3
    zero += b"\x00" * 6 + (0x800000000000).to_bytes(6, "big") + b"\x00"
    zero += (0x800000).to_bytes(3, "big") + bad.to_bytes(5, "big") + b"\x00"
    check(fast, types, [(body, all_present(7), None), (zero, all_present(7), None)])


def test_invalid_date_raises_like_the_tuple_path() -> None:
    fast, types = setup([(WireColumn("d", p.DATE), col("d", "date"))])
    body = b"\x00" + ((2023 << 9) | (2 << 5) | 30).to_bytes(3, "little")
    with pytest.raises(ValueError):
        fast.decode(body, 0, len(body), all_present(1))
    sinks = ColumnSinks({T: types})
    sink = sinks.sink_for(T, fast.arrow_layout(types))
    assert sink is not None
    with pytest.raises(ValueError):
        fast.decode_into(sink, body, 0, len(body), all_present(1))


def test_strings_binary_enum_set_bits() -> None:
    fast, types = setup(
        [
            (
                WireColumn("s", p.VARCHAR, max_length=400, encoding="utf8"),
                col("s", "varchar", charset="utf8mb4"),
            ),
            (
                WireColumn("a", p.STRING, max_length=10, encoding="ascii"),
                col("a", "char", charset="ascii"),
            ),
            (
                WireColumn("b", p.STRING, max_length=4, encoding="binary"),
                col("b", "binary", "binary(4)"),
            ),
            (
                WireColumn("e", p.ENUM, size=1, enum_values=("", "x", "ÿ")),
                col("e", "enum", "enum('x','ÿ')", charset="utf8mb4"),
            ),
            (
                WireColumn("st", p.SET, size=1, set_values=("c", "a", "b")),
                col("st", "set", "set('c','a','b')", charset="utf8mb4"),
            ),
            (WireColumn("bt", p.BIT, bits=12, bytes=2), col("bt", "bit", "bit(12)")),
            (WireColumn("bo", p.BIT, bits=1, bytes=1), col("bo", "bit", "bit(1)")),
            (
                WireColumn("bl", p.BLOB, length_size=2, encoding="binary"),
                col("bl", "blob"),
            ),
        ]
    )
    text = "ü😀".encode()
    body = (
        b"\x00"
        + struct.pack("<H", len(text))
        + text
        + b"\x02ab"
        + b"\x01\x07"
        + b"\x02"
        + b"\x05"
        + b"\xff\xff"
        + b"\x01"
        + b"\x03\x00\x00\xff\x01"
    )
    empty = b"\x00" + b"\x00\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00" + b"\x00\x00"
    empty += b"\x00" + b"\x00\x00"
    nulls = bytes([0xFF])  # all 8 NULL
    check(
        fast,
        types,
        [
            (body, all_present(8), None),
            (empty, all_present(8), None),
            (nulls, all_present(8), None),
        ],
    )


def test_latin1_text_is_transcoded_like_cp1252() -> None:
    fast, types = setup(
        [
            (
                WireColumn("l", p.STRING, max_length=40, encoding="cp1252"),
                col("l", "char", charset="latin1"),
            )
        ]
    )
    text = bytes(b for b in range(0x20, 0x100) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D))
    body = b"\x00" + bytes([len(text)]) + text + b"\x00\x00"
    check(fast, types, [(body, all_present(1), None)])
    undefined = b"\x00\x01\x81"
    with pytest.raises(ValueError):
        fast.decode(undefined, 0, len(undefined), all_present(1))
    sinks = ColumnSinks({T: types})
    sink = sinks.sink_for(T, fast.arrow_layout(types))
    assert sink is not None
    with pytest.raises(ValueError):
        fast.decode_into(sink, undefined, 0, len(undefined), all_present(1))


def test_many_columns_random_nulls() -> None:
    rng = random.Random(7)
    for width in (1, 13, 1000):
        pairs = [(WireColumn(f"c{i}", p.LONG), col(f"c{i}", "int")) for i in range(width)]
        fast, types = setup(pairs)
        events = []
        for _ in range(3):
            body = b""
            for _row in range(5):
                nulls = [rng.random() < 0.3 for _ in range(width)]
                bitmap = bytearray((width + 7) // 8)
                for i, n in enumerate(nulls):
                    if n:
                        bitmap[i >> 3] |= 1 << (i & 7)
                body += bytes(bitmap)
                body += b"".join(
                    struct.pack("<i", rng.randint(-(2**31), 2**31 - 1)) for n in nulls if not n
                )
            events.append((body, all_present(width), None))
        check(fast, types, events)


def test_a_failed_event_leaves_the_sink_as_it_was() -> None:
    fast, types = setup(
        [
            (WireColumn("a", p.LONG), col("a", "int")),
            (
                WireColumn("s", p.VARCHAR, max_length=40, encoding="utf8"),
                col("s", "varchar", charset="utf8mb4"),
            ),
        ]
    )
    good = b"\x00" + struct.pack("<i", 1) + b"\x02ok"
    bad = (
        b"\x00"
        + struct.pack("<i", 2)
        + b"\x02ok"
        + b"\x00"
        + struct.pack("<i", 3)
        + b"\x02\xff\xfe"
    )
    sinks = ColumnSinks({T: types})
    sink = sinks.sink_for(T, fast.arrow_layout(types))
    assert sink is not None
    fast.decode_into(sink, good, 0, len(good), all_present(2))
    with pytest.raises(ValueError):
        fast.decode_into(sink, bad, 0, len(bad), all_present(2))
    truncated = good[:-1]
    with pytest.raises(ValueError):
        fast.decode_into(sink, truncated, 0, len(truncated), all_present(2))
    assert sink.rows == 1
    a, s = sinks.take(T)
    assert a.to_pylist() == [1] and s.to_pylist() == ["ok"]
    assert sink.rows == 0


def test_a_changed_layout_gets_no_sink_until_the_batch_is_taken() -> None:
    sinks = ColumnSinks({T: [pa.int32()]})
    first = sinks.sink_for(T, (4,))
    assert first is not None and sinks.sink_for(T, (4,)) is first
    assert sinks.sink_for(T, (5,)) is not None  # empty: replaced
    fast, types = setup([(WireColumn("a", p.LONG), col("a", "int"))])
    sink = sinks.sink_for(T, fast.arrow_layout(types))
    assert sink is not None
    body = b"\x00" + struct.pack("<i", 1)
    fast.decode_into(sink, body, 0, len(body), all_present(1))
    assert sinks.sink_for(T, (5,)) is None  # holds rows of another layout
    assert sinks.sink_for(T, None) is None


def test_change_columns_per_image() -> None:
    fast, types = setup([(WireColumn("a", p.LONG), col("a", "int"))])
    names = ("insert", "update_preimage", "update_postimage", "delete")
    sinks = ColumnSinks({T: types}, names)
    sink = sinks.sink_for(T, fast.arrow_layout(types))
    assert sink is not None
    two = b"".join(b"\x00" + struct.pack("<i", v) for v in (1, 2))
    assert fast.decode_into(sink, two, 0, len(two), all_present(1), None, 100, 7, 0) == 2
    assert fast.decode_into(sink, two, 0, len(two), all_present(1), all_present(1), 200, 8, 1) == 2
    assert fast.decode_into(sink, two, 0, len(two), all_present(1), None, 300, 9, 3) == 2
    bad = two[:-1]
    with pytest.raises(ValueError):  # the change columns roll back with the data
        fast.decode_into(sink, bad, 0, len(bad), all_present(1), None, 400, 9, 0)
    a, kinds, versions, stamps = sinks.take(T)
    assert a.to_pylist() == [1, 2, 1, 2, 1, 2]
    assert kinds.to_pylist() == [
        "insert",
        "insert",
        "update_preimage",
        "update_postimage",
        "delete",
        "delete",
    ]
    assert versions.to_pylist() == [100, 101, 200, 200, 300, 301]
    assert stamps.type == pa.timestamp("us", tz="UTC")
    assert (
        stamps.cast(pa.int64()).to_pylist() == [7_000_000] * 2 + [8_000_000] * 2 + [9_000_000] * 2
    )
    for array in (kinds, versions, stamps):
        array.validate(full=True)

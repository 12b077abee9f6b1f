"""The ``base-*`` seeds of the fuzz corpus: valid inputs of each decoder in the targets'
input formats (see the header of each ``fuzz_<target>.c``), so that fuzzing starts from
every column kind and message type rather than from nothing. Seeds kept because they found
a bug are written by the fuzzer, not here (docs/fuzzing.md lists them).

    .venv/bin/python -m tests.fuzz.fuzz seeds
"""

from __future__ import annotations

import struct
from pathlib import Path

from sparkcdc.connectors.mysql.binlog.rowdecode.plan import Kind

# --- rowdecode: flags, column count, (kind, a, b, out) per column, bitmap(s), body --------

INT_SIZES = (1, 2, 3, 4, 8)


def row_column(kind: Kind, a: int = 0, b: int = 0, dropped: bool = False) -> bytes:
    """The 4 input bytes fuzz_rowdecode.c maps onto plan entry (kind, a, b)."""
    if kind in (Kind.INT, Kind.BOOL_INT):
        a = INT_SIZES.index(a)
    elif kind in (Kind.DECIMAL, Kind.DECIMAL_TEXT, Kind.STR, Kind.BYTES, Kind.ENUM, Kind.SET):
        a -= 1  # the target adds 1: these are 1 and up
    elif kind in (Kind.BIT_BOOL, Kind.BITS):
        a, b = a - 1, b - 1
    return bytes([kind - 1, a, b, 0x80 if dropped else 0])


def rows_input(flags: int, columns: list[bytes], bitmaps: list[bytes], body: bytes) -> bytes:
    return bytes([flags, len(columns)]) + b"".join(columns) + b"".join(bitmaps) + body


def decimal_bytes(text: str, precision: int, scale: int) -> bytes:
    """MySQL's binary DECIMAL (tests/unit/test_row_decoder.py builds it the same way)."""
    from tests.unit.test_row_decoder import decimal_bytes as build

    return build(text, precision, scale)


def rowdecode_seeds() -> dict[str, bytes]:
    ym = 2024 * 13 + 2
    datetime2 = (1 << 39) | (ym << 22) | (29 << 17) | (12 << 12) | (34 << 6) | 56
    minus_time = -((((12 << 12) | (34 << 6) | 56) << 24) | 123456) + 0x800000000000
    text = "ü😀".encode()
    return {
        "base-ints": rows_input(
            0,
            [
                row_column(Kind.INT, 4),
                row_column(Kind.INT, 1, 1),
                row_column(Kind.UINT64_DEC, 0, 1),
                row_column(Kind.BOOL_INT, 1),
            ],
            [b"\x0f"],
            b"\x00"
            + struct.pack("<iBQb", -5, 255, 2**64 - 1, -1)
            + b"\x06"
            + struct.pack("<ib", 7, 0),
        ),
        "base-update-pairs": rows_input(
            1 | 2,
            [row_column(Kind.INT, 8), row_column(Kind.FLOAT), row_column(Kind.DOUBLE)],
            [b"\x07", b"\x05"],
            b"\x00"
            + struct.pack("<qfd", -(2**63), 1.5, -2.25)
            + b"\x00"
            + struct.pack("<qd", 1, 0.5),
        ),
        "base-decimals": rows_input(
            4,
            [row_column(Kind.DECIMAL, 10, 2), row_column(Kind.DECIMAL_TEXT, 65, 30)],
            [b"\x03"],
            b"\x00"
            + decimal_bytes("-123.45", 10, 2)
            + decimal_bytes("9" * 35 + "." + "9" * 30, 65, 30),
        ),
        "base-temporal": rows_input(
            0,
            [
                row_column(Kind.DATE),
                row_column(Kind.DATETIME2, 6),
                row_column(Kind.TIMESTAMP2, 3),
                row_column(Kind.TIME2, 6),
                row_column(Kind.YEAR),
                row_column(Kind.TIME2, 2),
            ],
            [b"\x3f"],
            b"\x00"
            + ((2024 << 9) | (2 << 5) | 29).to_bytes(3, "little")
            + datetime2.to_bytes(5, "big")
            + (789012).to_bytes(3, "big")
            + (1_700_000_000).to_bytes(4, "big")
            + (2500).to_bytes(2, "big")
            + minus_time.to_bytes(6, "big")
            + bytes([124])
            + (0x800000 - 1).to_bytes(3, "big")
            + b"\xff",
        ),
        "base-strings": rows_input(
            0,
            [
                row_column(Kind.STR, 2, 0),
                row_column(Kind.STR, 1, 1),
                row_column(Kind.BYTES, 1, 4),
                row_column(Kind.ENUM, 1),
                row_column(Kind.SET, 1),
                row_column(Kind.BITS, 2, 12),
                row_column(Kind.BIT_BOOL, 1, 1, dropped=True),
                row_column(Kind.STR, 1, 2),
            ],
            [b"\xff"],
            b"\x00"
            + struct.pack("<H", len(text))
            + text
            + b"\x02\xe9\x80"
            + b"\x01\x07"
            + b"\x02"
            + b"\x05"
            + b"\xff\xff"
            + b"\x01"
            + b"\x03abc",
        ),
    }


# --- pgdecode: column count, kind per column, one pgoutput message ------------------------

STR, INT, BOOL, FLOAT8, FLOAT4, DECIMAL, DATE, TIMESTAMP, TIMESTAMPTZ, BYTEA, FALLBACK = range(11)


def pg_tuple(*values: bytes | str | None) -> bytes:
    """TupleData: None is 'n', '' unchanged TOAST ('u'), bytes a text value ('t')."""
    out = struct.pack(">H", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value == "":
            out += b"u"
        else:
            assert isinstance(value, bytes)
            out += b"t" + struct.pack(">I", len(value)) + value
    return out


def pg_input(kinds: list[int], message: bytes) -> bytes:
    return bytes([len(kinds), *kinds]) + message


def pgdecode_seeds() -> dict[str, bytes]:
    oid = struct.pack(">I", 16384)
    kinds = [INT, STR, TIMESTAMPTZ, DECIMAL]
    row = pg_tuple(b"-42", "é😀".encode(), b"2024-02-29 12:34:56.789+00", b"-123.4500")
    key = pg_tuple(b"7", None, None, None)
    floats = [FLOAT8, FLOAT4, BYTEA, DATE, BOOL, TIMESTAMP, FALLBACK]
    values = pg_tuple(
        b"1.7976931348623157e+308",
        b"6.431177e+07",
        b"\\xdeadBEEF",
        b"2024-02-29",
        b"t",
        b"0001-01-01 00:00:00",
        b"{1,2}",
    )
    return {
        "base-insert": pg_input(kinds, b"I" + oid + b"N" + row),
        "base-update-key": pg_input(kinds, b"U" + oid + b"K" + key + b"N" + row),
        "base-update-unchanged-toast": pg_input(
            kinds, b"U" + oid + b"N" + pg_tuple(b"1", "", None, b"0")
        ),
        "base-delete-full": pg_input(kinds, b"D" + oid + b"O" + row),
        "base-floats-bytes-dates": pg_input(floats, b"I" + oid + b"N" + values),
        "base-special-texts": pg_input(
            floats,
            b"I"
            + oid
            + b"N"
            + pg_tuple(
                b"NaN", b"-Infinity", b"\\x", b"infinity", b"f", b"2024-01-01 00:00:00 BC", None
            ),
        ),
    }


# --- mysqlarrow: kind, scale, then (length, bytes) per value; length 255 is NULL ----------

I8, I16, I32, I64, BOOL_INT, BOOL_BIT, MDECIMAL, F32, F64, MDATE, DATETIME, UTF8, BINARY = range(
    1, 14
)


def batch(kind: int, scale: int, *values: bytes | None) -> bytes:
    out = bytes([kind - 1, scale])
    for value in values:
        out += b"\xff" if value is None else bytes([len(value)]) + value
    return out


def mysqlarrow_seeds() -> dict[str, bytes]:
    return {
        "base-i8": batch(I8, 0, b"-128", b"127", None, b"0"),
        "base-i16": batch(I16, 0, b"-32768", b"+32767"),
        "base-i32": batch(I32, 0, b"2155", b"-2147483648"),
        "base-i64": batch(I64, 0, b"-9223372036854775808", b"9223372036854775807", None),
        "base-bool-int": batch(BOOL_INT, 0, b"1", b"0", b"-1", None),
        "base-bool-bit": batch(BOOL_BIT, 0, b"\x01", b"\x00", None),
        "base-decimal": batch(
            MDECIMAL, 2, b"123.45", b"-0.5", b"18446744073709551615", b"9" * 36 + b".99", None
        ),
        "base-float": batch(F32, 0, b"1.5", b"-3.4028234663852886e38", b"1e-45", None),
        "base-double": batch(
            F64, 0, b"0.1", b"-2.2250738585072014e-308", b"1.7976931348623157e308"
        ),
        "base-date": batch(MDATE, 0, b"2024-02-29", b"0000-00-00", b"2023-02-30", b"1969-12-31"),
        "base-datetime": batch(
            DATETIME,
            0,
            b"2024-02-29 12:34:56.789012",
            b"0000-00-00 00:00:00",
            b"9999-12-31 23:59:59",
        ),
        "base-utf8": batch(UTF8, 0, "é😀".encode(), b"", None, b"x" * 200),
        "base-binary": batch(BINARY, 0, b"\x00\xff", None, b""),
    }


def write_base_seeds(corpus: Path) -> None:
    for target, seeds in (
        ("rowdecode", rowdecode_seeds()),
        ("pgdecode", pgdecode_seeds()),
        ("mysqlarrow", mysqlarrow_seeds()),
    ):
        folder = corpus / target
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("base-*"):
            stale.unlink()
        for name, data in seeds.items():
            (folder / name).write_bytes(data)

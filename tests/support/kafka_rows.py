"""Hypothesis strategies for rows of every Arrow type the MySQL source emits."""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Context, Decimal
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

#: (column name, Arrow type) for each value family of connectors/mysql/server/types.py.
COLUMNS: list[tuple[str, pa.DataType]] = [
    ("id", pa.int64()),
    ("flag", pa.bool_()),
    ("tiny", pa.int8()),
    ("small", pa.int16()),
    ("medium", pa.int32()),
    ("unsigned_big", pa.decimal128(20, 0)),
    ("price", pa.decimal128(12, 4)),
    ("wide", pa.decimal128(38, 10)),
    ("huge_decimal", pa.string()),  # DECIMAL(p > 38) travels as its exact text
    ("f32", pa.float32()),
    ("f64", pa.float64()),
    ("data", pa.binary()),
    ("day", pa.date32()),
    ("local_time", pa.timestamp("us")),
    ("instant", pa.timestamp("us", tz="UTC")),
    ("clock", pa.string()),  # TIME as MySQL text
    ("year", pa.int32()),
    ("name", pa.string()),
]
NAMES = [n for n, _ in COLUMNS]
TYPES = [t for _, t in COLUMNS]
SCHEMA = pa.schema(COLUMNS)


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _decimal(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    bound = 10**precision - 1
    exact = Context(prec=100)  # the default 28 digits would round decimal(38) values
    return st.integers(-bound, bound).map(lambda u: Decimal(u).scaleb(-scale, exact))


_UTC = dt.timezone.utc
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": st.integers(-(2**63), 2**63 - 1),
    "flag": st.booleans(),
    "tiny": st.integers(-128, 127),
    "small": st.integers(-(2**15), 2**15 - 1),
    "medium": st.integers(-(2**31), 2**31 - 1),
    "unsigned_big": st.integers(0, 2**64 - 1).map(Decimal),
    "price": _decimal(12, 4),
    "wide": _decimal(38, 10),
    "huge_decimal": st.integers(-(10**60), 10**60).map(lambda u: format(Decimal(u).scaleb(-5))),
    "f32": st.floats(width=32, allow_nan=False, allow_infinity=False).map(_float32),
    "f64": st.floats(allow_nan=False, allow_infinity=False),
    "data": st.binary(max_size=40),
    "day": st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31)),
    "local_time": st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)),
    "instant": st.datetimes(
        dt.datetime(1970, 1, 1, 0, 0, 1), dt.datetime(2038, 1, 19, 3, 14, 7)
    ).map(lambda d: d.replace(tzinfo=_UTC)),
    "clock": st.sampled_from(["-838:59:59.000000", "00:00:00", "12:34:56.5", "838:59:59"]),
    "year": st.integers(0, 2155),
    "name": _TEXT,
}


@st.composite
def rows(draw: st.DrawFn, nullable: bool = True) -> tuple[Any, ...]:
    """One row: every column set or (except ``id``) NULL."""
    out = []
    for name in NAMES:
        strategy = VALUES[name]
        if nullable and name != "id":
            strategy = st.none() | strategy
        out.append(draw(strategy))
    return tuple(out)

"""Lossless JSON for row images, in the form Spark's ``from_json`` reads back to the types.

Every value a source emits maps to a JSON value that Spark's JSON parser turns into the
same typed value: integers and floats as numbers (NaN and infinities as the strings Spark
reads for them), decimals as strings (no binary floating point in between), binary as
base64, dates and timestamps in ISO 8601 (instants with ``Z``), booleans as
``true``/``false``, arrays as JSON arrays of their elements. Floats are written with
``repr`` precision.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

Encoder = Callable[[Any], Any]


def _timestamp_utc(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value.isoformat(timespec="microseconds") + "Z"


def _timestamp_ntz(value: dt.datetime) -> str:
    return value.isoformat(timespec="microseconds")


def _float(value: float) -> Any:
    """JSON has no NaN or infinities: they are written as the strings Spark's JSON reader
    takes for a double (``"NaN"``, ``"Infinity"``, ``"-Infinity"``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _list(element: Encoder | None) -> Encoder:
    if element is None:
        return list
    return lambda values: [None if v is None else element(v) for v in values]


def value_encoder(arrow_type: pa.DataType) -> Encoder | None:
    """How a value of this Arrow type becomes a JSON value (None: it already is one)."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _list(value_encoder(arrow_type.value_type))
    if pa.types.is_decimal(arrow_type):
        return lambda v: format(Decimal(v), "f")
    if pa.types.is_binary(arrow_type) or pa.types.is_fixed_size_binary(arrow_type):
        return lambda v: base64.b64encode(v).decode("ascii")
    if pa.types.is_timestamp(arrow_type):
        return _timestamp_utc if arrow_type.tz else _timestamp_ntz
    if pa.types.is_date(arrow_type):
        return lambda v: v.isoformat()
    if pa.types.is_floating(arrow_type):
        return _float
    return None


class RowJsonEncoder:
    """Encodes row tuples of one table as JSON objects keyed by column name."""

    def __init__(self, names: Sequence[str], types: Sequence[pa.DataType]) -> None:
        self.names = list(names)
        self.encoders = [value_encoder(t) for t in types]

    def values(self, row: Sequence[Any], indexes: Sequence[int] | None = None) -> dict[str, Any]:
        picked = range(len(self.names)) if indexes is None else indexes
        out: dict[str, Any] = {}
        for i in picked:
            value = row[i]
            encoder = self.encoders[i]
            out[self.names[i]] = value if value is None or encoder is None else encoder(value)
        return out

    def encode(self, row: Sequence[Any] | None, indexes: Sequence[int] | None = None) -> str | None:
        if row is None:
            return None
        return json.dumps(self.values(row, indexes), ensure_ascii=False, separators=(",", ":"))

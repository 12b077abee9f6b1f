"""Reading row JSON (formats/row_json.py) back into canonical Python values.

The Kafka formats carry rows in the lossless JSON of :mod:`sparkcdc.formats.row_json`;
this is its inverse, so ``decode(encode(row)) == row`` for every type the MySQL source
emits (``bool``, ``int``, ``float``, ``Decimal``, ``str``, ``bytes``, ``date``, naive
``datetime`` for DATETIME, UTC-aware ``datetime`` for TIMESTAMP, lists of these for
PostgreSQL arrays). Values of the wrong JSON
type raise :class:`MalformedRecordError`, which sources turn into their malformed-message
policy instead of silently delivering a wrong value.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from decimal import Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from sparkcdc.core.rows import Row
from sparkcdc.formats.row_json import RowJsonEncoder

Decoder = Callable[[Any], Any]


class MalformedRecordError(ValueError):
    """A message that does not decode as the expected format and row schema."""


def _expect(value: Any, kinds: type | tuple[type, ...], what: str) -> Any:
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise MalformedRecordError(f"expected {what}, got {value!r}")
    if not isinstance(value, kinds):
        raise MalformedRecordError(f"expected {what}, got {value!r}")
    return value


def _int(value: Any) -> int:
    return int(_expect(value, int, "an integer"))


def _bool(value: Any) -> bool:
    return bool(_expect(value, bool, "true or false"))


def _float64(value: Any) -> float:
    if isinstance(value, str):  # row_json writes NaN/inf as text
        try:
            number = float(value)
        except ValueError as exc:
            raise MalformedRecordError(f"expected a number, got {value!r}") from exc
        if not (math.isnan(number) or math.isinf(number)):
            raise MalformedRecordError(f"expected a number, got {value!r}")
        return number
    return float(_expect(value, (int, float), "a number"))


def _float32(value: Any) -> float:
    number = _float64(value)
    try:
        return float(struct.unpack("<f", struct.pack("<f", number))[0])
    except OverflowError as exc:
        raise MalformedRecordError(f"{value!r} does not fit a FLOAT") from exc


_WIDE = Context(prec=100)


def _decimal(scale: int) -> Decoder:
    quantum = Decimal(1).scaleb(-scale)

    def decode(value: Any) -> Decimal:
        text = _expect(value, (str, int, float), "a decimal")
        try:
            number = Decimal(str(text))
            # to the column's scale (a decimal(38) needs more than the default 28 digits)
            return number.quantize(quantum, context=_WIDE) if number.is_finite() else number
        except InvalidOperation as exc:
            raise MalformedRecordError(f"expected a decimal, got {value!r}") from exc

    return decode


def _binary(value: Any) -> bytes:
    try:
        return base64.b64decode(_expect(value, str, "base64 text"), validate=True)
    except binascii.Error as exc:
        raise MalformedRecordError(f"expected base64 text, got {value!r}") from exc


def _parse(parser: Callable[[str], Any], value: Any, what: str) -> Any:
    try:
        return parser(_expect(value, str, what))
    except ValueError as exc:
        raise MalformedRecordError(f"expected {what}, got {value!r}") from exc


def _timestamp_utc(value: Any) -> dt.datetime:
    def parse(text: str) -> dt.datetime:
        parsed = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
        if parsed.tzinfo is None:  # no zone: read as UTC, like Spark with timeZone=UTC
            return parsed.replace(tzinfo=dt.timezone.utc)
        return parsed.astimezone(dt.timezone.utc)

    return _parse(parse, value, "an ISO 8601 timestamp")  # type: ignore[no-any-return]


def _timestamp_ntz(value: Any) -> dt.datetime:
    def parse(text: str) -> dt.datetime:
        parsed = dt.datetime.fromisoformat(text)
        if parsed.tzinfo is not None:
            raise ValueError("a DATETIME has no zone")
        return parsed

    return _parse(parse, value, "an ISO 8601 date-time")  # type: ignore[no-any-return]


def _date(value: Any) -> dt.date:
    return _parse(dt.date.fromisoformat, value, "an ISO 8601 date")  # type: ignore[no-any-return]


def _string(value: Any) -> str:
    return str(_expect(value, str, "a string"))


def _list(element: Decoder) -> Decoder:
    def decode(value: Any) -> list[Any]:
        values = _expect(value, list, "a JSON array")
        return [None if v is None else element(v) for v in values]

    return decode


def value_decoder(arrow_type: pa.DataType) -> Decoder:
    """How a JSON value becomes the canonical value of this Arrow type (inverse of
    :func:`sparkcdc.formats.row_json.value_encoder`)."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _list(value_decoder(arrow_type.value_type))
    if pa.types.is_boolean(arrow_type):
        return _bool
    if pa.types.is_integer(arrow_type):
        return _int
    if pa.types.is_float32(arrow_type):
        return _float32
    if pa.types.is_floating(arrow_type):
        return _float64
    if pa.types.is_decimal(arrow_type):
        return _decimal(arrow_type.scale)
    if pa.types.is_binary(arrow_type) or pa.types.is_fixed_size_binary(arrow_type):
        return _binary
    if pa.types.is_timestamp(arrow_type):
        return _timestamp_utc if arrow_type.tz else _timestamp_ntz
    if pa.types.is_date(arrow_type):
        return _date
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return _string
    raise ValueError(f"no JSON decoding for Arrow type {arrow_type}")


class RowJson:
    """One table's rows to and from row JSON: column names, Arrow types and the primary key.

    ``encode``/``encode_values`` give the JSON text/object of :mod:`row_json`; ``decode``
    and ``decode_values`` read them back. A column missing from a JSON object is NULL (as
    Spark's ``from_json`` reads it); an unknown name is ignored.
    """

    def __init__(
        self,
        names: Sequence[str],
        types: Sequence[pa.DataType],
        key: Sequence[str] = (),
    ) -> None:
        self.names = list(names)
        self.types = list(types)
        index = {n: i for i, n in enumerate(self.names)}
        missing = [k for k in key if k not in index]
        if missing:
            raise ValueError(f"key columns {missing} are not columns of {self.names}")
        self.key_indexes = [index[k] for k in key]
        self.encoder = RowJsonEncoder(self.names, self.types)
        self.decoders = [value_decoder(t) for t in self.types]

    @classmethod
    def from_schema(cls, schema: pa.Schema, key: Sequence[str] = ()) -> RowJson:
        return cls(schema.names, schema.types, key)

    def encode_values(self, row: Row) -> dict[str, Any]:
        return self.encoder.values(row)

    def encode(self, row: Row) -> str:
        return _dumps(self.encoder.values(row))

    def encode_key(self, row: Row) -> str:
        """The primary key as a JSON object in key order (the Kafka message key)."""
        if not self.key_indexes:
            raise ValueError("this table has no key columns")
        return _dumps(self.encoder.values(row, self.key_indexes))

    def key_of(self, row: Row) -> tuple[Any, ...]:
        return tuple(row[i] for i in self.key_indexes)

    def decode_values(self, values: Any) -> Row:
        if not isinstance(values, Mapping):
            raise MalformedRecordError(f"expected a JSON object for a row, got {values!r}")
        out = []
        for name, decode in zip(self.names, self.decoders, strict=True):
            value = values.get(name)
            try:
                out.append(None if value is None else decode(value))
            except MalformedRecordError as exc:
                raise MalformedRecordError(f"column {name!r}: {exc}") from exc
        return tuple(out)

    def decode(self, text: str | bytes) -> Row:
        return self.decode_values(loads(text))

    def decode_key(self, text: str | bytes) -> tuple[Any, ...]:
        """Key values (in key order) of a key JSON object; every key column must be set."""
        values = loads(text)
        if not isinstance(values, Mapping):
            raise MalformedRecordError(f"expected a JSON object for a key, got {values!r}")
        out = []
        for i in self.key_indexes:
            name = self.names[i]
            value = values.get(name)
            if value is None:
                raise MalformedRecordError(f"key column {name!r} is missing or null")
            try:
                out.append(self.decoders[i](value))
            except MalformedRecordError as exc:
                raise MalformedRecordError(f"key column {name!r}: {exc}") from exc
        return tuple(out)


def _dumps(values: Any) -> str:
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


def dumps(values: Any) -> str:
    """Compact JSON text, as every sparkcdc format writes it."""
    return _dumps(values)


def loads(text: str | bytes) -> Any:
    """Parse JSON text; anything unparseable is a :class:`MalformedRecordError`."""
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise MalformedRecordError(f"not JSON: {exc}") from exc

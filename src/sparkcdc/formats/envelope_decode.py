"""One table's envelope rows decoded into its typed changelog, in Arrow, without Spark.

The envelope (several tables in one stream) carries each change as one row: the table's
names, ``_change_type`` (``insert``, ``update``, ``delete``), the commit columns and the
row's images as lossless JSON (formats/row_json.py). Spark unpacks it with ``from_json``
and ``explode`` (spark/envelope.py, ``unpack_table``), a plan per table that a batch of a
1000-table pipeline paid 1000 times on the driver (issue 62). This is the same unpacking
done in Python where the rows are (a ``mapInArrow`` over the batch's rows,
spark/envelope_fetch.py), giving exactly what ``unpack_table`` then Arrow gives: the
table's columns (all nullable, as ``from_json`` makes them), ``_change_type``
(``insert``, ``update_preimage`` then ``update_postimage``, ``delete``; an update without
a pre-image, a row read again, is its post-image alone), then the envelope's other
columns as they are (``_commit_version``, ``_commit_timestamp``, ``_unchanged``), rows in
the envelope's order.

Where Spark's ``from_json`` would make a row of NULLs or a NULL value out of what it cannot
read (text that is not JSON, a value of the wrong type, a decimal too wide), this raises
:class:`MalformedRecordError` naming the table and the column: the batch fails loudly
instead of writing a wrong value. Values are read as Spark reads them: decimals rounded
half up to the column's scale, floats from JSON numbers or the texts ``NaN``,
``Infinity``, ``-Infinity``, binary from base64, timestamps from ISO 8601.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from sparkcdc.core.changes import CHANGE_TYPE
from sparkcdc.formats.row_json_decode import MalformedRecordError, value_decoder

Decoder = Callable[[Any], Any]

#: The envelope columns the decoding reads besides those it passes through.
BEFORE, AFTER = "before", "after"
_INSERT, _UPDATE, _DELETE = "insert", "update", "delete"
_PRE, _POST = "update_preimage", "update_postimage"
#: Java's ``BigDecimal(String)`` grammar (what Spark's JSON reader parses a decimal with):
#: no NaN, infinity, spaces or underscores, which Python's ``Decimal`` would take.
_DECIMAL_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_WIDE = Context(prec=200)


def _decimal(precision: int, scale: int) -> Decoder:
    quantum = Decimal(1).scaleb(-scale)

    def decode(value: Any) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise MalformedRecordError(f"expected a decimal, got {value!r}")
        text = str(value)
        if not _DECIMAL_TEXT.fullmatch(text):
            raise MalformedRecordError(f"expected a decimal, got {value!r}")
        try:
            number = Decimal(text).quantize(quantum, rounding=ROUND_HALF_UP, context=_WIDE)
        except InvalidOperation as exc:
            raise MalformedRecordError(f"expected a decimal, got {value!r}") from exc
        if len(number.as_tuple().digits) > precision and number != 0:
            raise MalformedRecordError(f"{value!r} does not fit DECIMAL({precision},{scale})")
        return number

    return decode


def _list(element: Decoder) -> Decoder:
    def decode(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise MalformedRecordError(f"expected a JSON array, got {value!r}")
        return [None if v is None else element(v) for v in value]

    return decode


def column_decoder(arrow_type: pa.DataType) -> Decoder:
    """How a JSON value becomes a value of ``arrow_type`` as Spark's ``from_json`` reads
    it (the large Arrow types, which Spark may use, as the small ones)."""
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return _list(column_decoder(arrow_type.value_type))
    if pa.types.is_decimal(arrow_type):
        return _decimal(arrow_type.precision, arrow_type.scale)
    if pa.types.is_large_string(arrow_type):
        return value_decoder(pa.string())
    if pa.types.is_large_binary(arrow_type):
        return value_decoder(pa.binary())
    return value_decoder(arrow_type)


class EnvelopeBatch:
    """One record batch of envelope rows, with the columns every table's decoding reads as
    Python values, converted once: a batch holds many tables' rows, and converting its
    columns per table would cost its size times its tables."""

    def __init__(self, batch: pa.RecordBatch) -> None:
        self.batch = batch
        self.kinds = batch.column(CHANGE_TYPE).to_pylist()
        self.befores = batch.column(BEFORE).to_pylist()
        self.afters = batch.column(AFTER).to_pylist()


class EnvelopeDecoder:
    """One table's envelope rows to its changelog rows (the module's docstring).

    ``schema`` is the changelog's Arrow schema: the table's columns, then the envelope
    columns passed through (``_change_type`` first). ``name`` names the table in errors."""

    def __init__(self, schema: pa.Schema, width: int, name: str) -> None:
        self.schema = schema
        self.width = width
        self.name = name
        self.columns = schema.names[:width]
        self.decoders = [column_decoder(schema.field(i).type) for i in range(width)]
        self.passed = schema.names[width + 1 :]
        if schema.names[width] != CHANGE_TYPE:
            raise ValueError(f"{CHANGE_TYPE} must follow the table's {width} columns")

    def decode(self, envelope: EnvelopeBatch, rows: Sequence[int]) -> pa.RecordBatch:
        """The changelog rows of ``rows`` (indexes into ``envelope``'s rows), in order."""
        kinds, befores, afters = envelope.kinds, envelope.befores, envelope.afters
        taken: list[int] = []
        out_kinds: list[str] = []
        images: list[Any] = []
        for i in rows:
            kind = kinds[i]
            if kind == _INSERT:
                taken.append(i)
                out_kinds.append(_INSERT)
                images.append(afters[i])
            elif kind == _UPDATE and befores[i] is None:  # a row read again: an upsert
                taken.append(i)
                out_kinds.append(_POST)
                images.append(afters[i])
            elif kind == _UPDATE:
                taken += [i, i]
                out_kinds += [_PRE, _POST]
                images += [befores[i], afters[i]]
            elif kind == _DELETE:
                taken.append(i)
                out_kinds.append(_DELETE)
                images.append(befores[i])
            else:
                raise MalformedRecordError(
                    f"an envelope row of {self.name} has {CHANGE_TYPE} {kind!r}, not insert, "
                    "update or delete"
                )
        values = self._values(images, out_kinds)
        arrays = [self._array(i, column) for i, column in enumerate(values)]
        arrays.append(pa.array(out_kinds, self.schema.field(CHANGE_TYPE).type))
        indexes = pa.array(taken, pa.int64())
        for name in self.passed:
            arrays.append(envelope.batch.column(name).take(indexes))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _values(self, images: Sequence[Any], kinds: Sequence[str]) -> list[list[Any]]:
        """Each column's values, image by image."""
        columns: list[list[Any]] = [[] for _ in self.columns]
        pairs = list(zip(self.columns, self.decoders, columns, strict=True))
        for text, kind in zip(images, kinds, strict=True):
            image = self._image(text, kind)
            for name, decode, out in pairs:
                value = image.get(name)
                if value is None:
                    out.append(None)
                    continue
                try:
                    out.append(decode(value))
                except MalformedRecordError as exc:
                    raise MalformedRecordError(
                        f"an envelope row of {self.name}, column {name!r}: {exc}"
                    ) from exc
        return columns

    def _image(self, text: Any, kind: str) -> dict[str, Any]:
        if text is None:
            raise MalformedRecordError(f"an envelope row of {self.name} ({kind}) lacks its image")
        try:
            image = json.loads(text)
        except ValueError as exc:
            raise MalformedRecordError(
                f"an envelope row of {self.name} ({kind}) has an image that is not JSON: {exc}"
            ) from exc
        if not isinstance(image, dict):
            raise MalformedRecordError(
                f"an envelope row of {self.name} ({kind}) has an image that is not a JSON "
                f"object: {text[:100]!r}"
            )
        return image

    def _array(self, index: int, values: list[Any]) -> pa.Array:
        field = self.schema.field(index)
        try:
            return pa.array(values, field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, UnicodeError) as exc:
            raise MalformedRecordError(
                f"an envelope row of {self.name}, column {field.name!r}: a value does not fit "
                f"{field.type}: {exc}"
            ) from exc

"""Row images written by the compiled decoder straight into Arrow buffers.

Building Arrow columns from the decoder's Python tuples cost about half of a log
partition's CPU (one Python object per value, then ``pa.array`` converting each back;
docs/binlog-decoder.md). :meth:`FastRowDecoder.decode_into` writes the same values into a
:class:`ColumnSink` (validity bitmap + values or offsets + bytes per column, in C), and
:meth:`ColumnSink.take` wraps those buffers as Arrow arrays without converting anything.
The arrays equal ``pa.array`` of :meth:`FastRowDecoder.decode`'s rows in the table's types
(tests/unit/test_row_decoder_arrow.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog.rowdecode.plan import Kind, PlanEntry
from sparkcdc.core.table import TableId

#: Layout codes of csrc/rowdecode.c (``L_*``).
L_BOOL, L_I8, L_I16, L_I32, L_I64, L_F32, L_F64, L_D128, L_DATE32, L_TS, L_VAR = range(1, 12)

Layout = tuple[int, ...]

#: Arrow types of the change columns a sink with change types adds after the table's own:
#: ``_change_type``, ``_commit_version``, ``_commit_timestamp`` (formats/changelog_arrow.py).
CHANGE_TYPES = (pa.string(), pa.int64(), pa.timestamp("us", tz="UTC"))
#: ``decode_into``'s ``kind`` per block kind: index into the sink's change type names
#: (insert, update_preimage, update_postimage, delete); an update alternates 1 and 2.
KIND_CODES = {"insert": 0, "update": 1, "delete": 3}

_INT_TYPES = {L_I8: pa.int8(), L_I16: pa.int16(), L_I32: pa.int32(), L_I64: pa.int64()}


def _int_layout(size: int, unsigned: bool) -> int:
    """The Arrow integer width types.arrow_type gives a column of this wire size."""
    if size == 1:
        return L_I16 if unsigned else L_I8
    if size == 2:
        return L_I32 if unsigned else L_I16
    if size == 3:
        return L_I32
    if size == 4:
        return L_I64 if unsigned else L_I32
    return L_I64


def entry_matches(entry: PlanEntry, target: pa.DataType) -> bool:
    """Whether the C code's Arrow output for a plan entry is exactly ``target``'s values (the
    table's Arrow type); otherwise the table map keeps the tuple path."""
    kind, _, a, b = entry[:4]
    if kind == Kind.INT:
        return bool(target == _INT_TYPES[_int_layout(a, bool(b))])
    if kind in (Kind.BOOL_INT, Kind.BIT_BOOL):
        return bool(target == pa.bool_())
    if kind == Kind.UINT64_DEC:
        return bool(target == pa.decimal128(20, 0))
    if kind == Kind.DECIMAL:  # same scale; the wire precision fits the declared one
        is_decimal = bool(pa.types.is_decimal128(target))
        return is_decimal and target.scale == b and a <= target.precision <= 38
    if kind == Kind.FLOAT:
        return bool(target == pa.float32())
    if kind == Kind.DOUBLE:
        return bool(target == pa.float64())
    if kind == Kind.DATE:
        return bool(target == pa.date32())
    if kind == Kind.DATETIME2:
        return bool(target == pa.timestamp("us"))
    if kind == Kind.TIMESTAMP2:
        return bool(target == pa.timestamp("us", tz="UTC"))
    if kind == Kind.YEAR:
        return bool(target == pa.int32())
    if kind in (Kind.BITS, Kind.BYTES):
        return bool(target == pa.binary())
    return kind in (Kind.DECIMAL_TEXT, Kind.TIME2, Kind.STR, Kind.ENUM, Kind.SET) and bool(
        target == pa.string()
    )


class ColumnSink:
    """One table's Arrow column buffers, filled event by event, taken as arrays per batch."""

    def __init__(
        self, sink: Any, layout: Layout, types: Sequence[pa.DataType], changes: bool = False
    ) -> None:
        self._sink = sink
        self.layout = layout
        self.types = list(types) + (list(CHANGE_TYPES) if changes else [])

    @property
    def rows(self) -> int:
        """Row images held (an update's before and after images are two)."""
        rows: int = self._sink.rows()
        return rows

    def take(self) -> list[pa.Array]:
        """The held rows as one array per column, then the change columns if the sink
        writes them (the sink is empty afterwards)."""
        length, columns = self._sink.take()
        arrays = []
        for type_, (valid, data, offsets, nulls) in zip(self.types, columns, strict=True):
            validity = None if valid is None else pa.py_buffer(valid)
            buffers = [validity, pa.py_buffer(data)]
            if offsets is not None:
                buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
            arrays.append(pa.Array.from_buffers(type_, length, buffers, null_count=nulls))
        return arrays


class ColumnSinks:
    """A :class:`ColumnSink` per table whose changes go to Arrow without tuples (tables
    whose snapshot is done, typed changelog). A table map whose layout differs from what the
    table's sink holds (the schema changed mid-batch) gets None: its events take the tuple
    path, and the consumer closes the batch where the path changes."""

    def __init__(
        self,
        types: Mapping[TableId, Sequence[pa.DataType]],
        change_types: Sequence[str] | None = None,
    ) -> None:
        """``change_types``: the ``_change_type`` values of insert, update pre-image, update
        post-image and delete; given, the sinks also write the three change columns (no
        Python list per row for them)."""
        self.types = {t: list(v) for t, v in types.items()}
        self.change_types = None if change_types is None else tuple(change_types)
        self._sinks: dict[TableId, ColumnSink] = {}

    def sink_for(self, table: TableId, layout: Layout | None) -> ColumnSink | None:
        if layout is None or table not in self.types:
            return None
        sink = self._sinks.get(table)
        if sink is not None and sink.layout == layout:
            return sink
        if sink is not None and sink.rows:
            return None
        from sparkcdc.connectors.mysql.binlog.rowdecode import _rowdecode  # type: ignore[attr-defined]

        native = _rowdecode.Sink(layout, self.change_types)
        sink = ColumnSink(native, layout, self.types[table], self.change_types is not None)
        self._sinks[table] = sink
        return sink

    def take(self, table: TableId) -> list[pa.Array]:
        return self._sinks[table].take()

"""Changelog rows as Arrow: the schema every source emits and a batch builder.

Pure pyarrow, so sources build their output without Spark; Spark receives these batches
as they are and they must match the declared schema exactly (docs/stack-notes.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.changes import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    UNCHANGED,
    ChangeType,
)
from sparkcdc.core.rows import ChangeBlock, Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.formats.row_json import RowJsonEncoder

#: Columns every changelog row carries after the table's own columns.
CHANGE_FIELDS = (
    pa.field(CHANGE_TYPE, pa.string(), nullable=False),
    pa.field(COMMIT_VERSION, pa.int64(), nullable=False),
    pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC"), nullable=True),
)

#: ``metadata.list`` columns, appended in this order when requested (each connector accepts
#: the names that make sense for it). The names of a table (``database_name``,
#: ``schema_name``, ``table_name``) are per-table constants the dialect gives
#: (``Dialect.table_metadata``); ``binlog_*`` locate a MySQL change in its log.
METADATA_FIELDS = {
    "database_name": pa.field("database_name", pa.string()),
    "schema_name": pa.field("schema_name", pa.string()),
    "table_name": pa.field("table_name", pa.string()),
    "op_ts": pa.field("op_ts", pa.timestamp("us", tz="UTC")),
    "row_kind": pa.field("row_kind", pa.string()),
    "binlog_file": pa.field("binlog_file", pa.string()),
    "binlog_pos": pa.field("binlog_pos", pa.int64()),
    "binlog_gtid": pa.field("binlog_gtid", pa.string()),
    # not a metadata.list choice: PostgreSQL's changelog-mode upsert adds it (core/changes.py)
    UNCHANGED: pa.field(UNCHANGED, pa.list_(pa.string())),
}


#: Several tables in one stream: one row per change, rows as lossless JSON.
ENVELOPE_FIELDS = (
    pa.field("database_name", pa.string(), nullable=False),
    pa.field("table_name", pa.string(), nullable=False),
    pa.field(CHANGE_TYPE, pa.string(), nullable=False),
    pa.field(COMMIT_VERSION, pa.int64(), nullable=False),
    pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", tz="UTC"), nullable=True),
    pa.field("key", pa.string(), nullable=False),
    pa.field("before", pa.string(), nullable=True),
    pa.field("after", pa.string(), nullable=True),
)

#: ``_change_type`` values in the envelope: an update is one row with both images.
ENVELOPE_INSERT, ENVELOPE_UPDATE, ENVELOPE_DELETE = "insert", "update", "delete"


def envelope_schema(metadata: Sequence[str]) -> pa.Schema:
    extra = [
        n for n in METADATA_FIELDS if n in metadata and n not in ("database_name", "table_name")
    ]
    return pa.schema([*ENVELOPE_FIELDS, *(METADATA_FIELDS[n] for n in extra)])


def changelog_schema(data_fields: Sequence[pa.Field], metadata: Sequence[str]) -> pa.Schema:
    ordered = [n for n in METADATA_FIELDS if n in metadata]
    return pa.schema([*data_fields, *CHANGE_FIELDS, *(METADATA_FIELDS[n] for n in ordered)])


@dataclass(frozen=True)
class TextColumn:
    """A column whose values are still the database's text, for Arrow to cast in bulk."""

    index: int
    cast_to: pa.DataType
    parse: Callable[[str], Any]  # one value, for what Arrow rejects (e.g. zero dates)


@dataclass(frozen=True)
class ChunkRows:
    """Snapshot rows; ``text_columns`` are still text (see :class:`TextColumn`).

    A reader that already has the table's columns in Arrow, in exactly the declared types
    (the native reader), passes them as ``columns`` and no ``rows``: they go to Spark
    without a Python value per cell.
    """

    rows: Sequence[Row]
    text_columns: tuple[TextColumn, ...] = ()
    columns: pa.RecordBatch | None = None

    @property
    def num_rows(self) -> int:
        return self.columns.num_rows if self.columns is not None else len(self.rows)

    def canonical(self) -> Sequence[Row]:
        """The rows with every value canonical (text columns parsed one by one)."""
        if self.columns is not None:
            names = self.columns.schema.names
            return [tuple(r[n] for n in names) for r in self.columns.to_pylist()]
        if not self.text_columns:
            return self.rows
        parsers = {t.index: t.parse for t in self.text_columns}
        return [
            tuple(parsers[i](v) if v is not None and i in parsers else v for i, v in enumerate(row))
            for row in self.rows
        ]


def text_array(values: Sequence[Any], column: TextColumn, target: pa.DataType) -> pa.Array:
    """Cast a column of database text to ``target`` in one go; values Arrow cannot parse
    (zero dates, which become NULL) send this column of this batch down the slow path."""
    try:
        array = pa.array(values, pa.string()).cast(column.cast_to)
        return array if array.type == target else array.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else column.parse(v) for v in values], target)


Emitted = Sequence[tuple[ChangeType, Row]]
"""What a log change emits: ``(change type, row image)`` pairs (see snapshot/emit.py)."""


def _utc(seconds: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


#: Table-level metadata values by column name (``Dialect.table_metadata``).
Constants = Mapping[str, Any]


def _metadata_value(
    name: str, change: RowChange | None, kind: ChangeType, constants: Constants
) -> Any:
    if name in constants:
        return constants[name]
    if name == "row_kind":
        return kind.row_kind
    if change is None:  # snapshot rows have no log position or operation time
        return None
    if name == UNCHANGED:
        return list(change.unchanged) or None
    return {
        "op_ts": _utc(change.timestamp),
        "binlog_file": change.file,
        "binlog_pos": change.pos,
        "binlog_gtid": change.gtid,
    }[name]


#: ``_change_type`` codes of the columnar path: index into :data:`_KIND_VALUES`.
_KINDS = (
    ChangeType.INSERT,
    ChangeType.UPDATE_PREIMAGE,
    ChangeType.UPDATE_POSTIMAGE,
    ChangeType.DELETE,
)
_KIND_CODES = {"insert": [0], "update": [1, 2], "delete": [3], "upsert": [2]}
#: The ``_change_type`` values in code order, for decoders that write the column themselves.
CHANGE_TYPE_VALUES = tuple(k.value for k in _KINDS)
_UTC_MICROS = pa.timestamp("us", tz="UTC")


class _Columns:
    """Blocks of changes as the per-column Python lists Arrow takes in one call each.

    Everything is list concatenation or list multiplication (C loops), never a Python
    statement per row: the row images go to Arrow as they came from the decoder, the change
    type as an int8 code (``take`` from a 4-value array), the commit time as epoch seconds
    (Arrow multiplies and casts; no ``datetime`` per row). The values equal
    :meth:`ChangelogBatchBuilder.change_batch`'s for the same changes.
    """

    def __init__(self, blocks: Sequence[ChangeBlock], per_block: bool) -> None:
        self.rows: list[Row] = []
        self.codes: list[int] = []
        self.versions: list[int] = []
        self.seconds: list[int] = []
        self.block_of: list[int] = []  # block index per row, for per-event metadata
        for i, block in enumerate(blocks):
            n = block.image_count
            if not n:
                continue
            self.rows += block.images  # empty when the images are in Arrow buffers
            self.seconds += [block.timestamp] * n
            if per_block:
                self.block_of += [i] * n
            base = block.version
            if block.kind == "update":
                m = n // 2
                self.codes += _KIND_CODES["update"] * m
                pairs = [0] * n
                pairs[0::2] = pairs[1::2] = range(base, base + m)
                self.versions += pairs
            else:
                self.codes += _KIND_CODES[block.kind] * n
                self.versions += range(base, base + n)

    def kinds(self, values: Sequence[str]) -> pa.Array:
        """One string per row from a code -> value table (``values`` in :data:`_KINDS` order)."""
        return pa.array(values, pa.string()).take(pa.array(self.codes, pa.int8()))

    def stamps(self) -> pa.Array:
        return _epoch_stamps(self.seconds)


def _epoch_stamps(seconds: list[int]) -> pa.Array:
    """``_commit_timestamp`` from epoch seconds, equal to ``_utc`` of each (exact: whole
    seconds), without a ``datetime`` per row."""
    return pc.multiply(pa.array(seconds, pa.int64()), 1_000_000).cast(_UTC_MICROS)


def _block_metadata(
    name: str,
    constants: Constants,
    type_: pa.DataType,
    blocks: Sequence[ChangeBlock],
    block_of: list[int],
    seconds: list[int],
    codes: list[int],
) -> pa.Array:
    """A ``metadata.list`` column for rows built from blocks: ``block_of`` is each row's
    block, ``codes`` its change type as an index into :data:`_KINDS`."""
    n = len(codes)
    if name in constants:
        return pa.repeat(pa.scalar(constants[name], type_), n)
    if name == "row_kind":
        kinds = pa.array([k.row_kind for k in _KINDS], type_)
        return kinds.take(pa.array(codes, pa.int8()))
    if name == "op_ts":
        return _epoch_stamps(seconds).cast(type_)
    if name == UNCHANGED:  # absent values are per block (ChangeBlock.unchanged)
        absent = pa.array([list(b.unchanged) or None for b in blocks], type_)
        return absent.take(pa.array(block_of, pa.int32()))
    attribute = {"binlog_file": "file", "binlog_pos": "pos", "binlog_gtid": "gtid"}[name]
    values = pa.array([getattr(b, attribute) for b in blocks], type_)
    return values.take(pa.array(block_of, pa.int32()))


class ChangelogBatchBuilder:
    """One table's changes as typed columns; an update becomes two rows."""

    def __init__(
        self,
        schema: pa.Schema,
        data_width: int,
        table_id: TableId,
        constants: Constants | None = None,
    ) -> None:
        self.schema = schema
        self.data_width = data_width
        self.table_id = table_id
        self.constants = _constants(table_id, constants)
        self.metadata = [f.name for f in schema][data_width + len(CHANGE_FIELDS) :]

    def _data_arrays(
        self, rows: Sequence[Row], text_columns: tuple[TextColumn, ...] = ()
    ) -> list[pa.Array]:
        """The table's columns. Row tuples go to Arrow as one struct array (the transpose
        happens in C++, ~3x faster than zip(*rows) and one pa.array per column)."""
        text = {t.index: t for t in text_columns}
        fields = [
            pa.field(f"c{i}", pa.string() if i in text else self.schema.field(i).type)
            for i in range(self.data_width)
        ]
        columns = pa.array(rows, type=pa.struct(fields)).flatten()
        arrays = []
        for i, array in enumerate(columns):
            column = text.get(i)
            if column is None:
                arrays.append(array)
                continue
            target = self.schema.field(i).type
            try:
                cast = array.cast(column.cast_to)
                arrays.append(cast if cast.type == target else cast.cast(target))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # zero dates: slow path
                arrays.append(text_array(array.to_pylist(), column, target))
        return arrays

    def _batch(
        self,
        rows: Sequence[Row],
        kinds: Sequence[ChangeType],
        versions: Sequence[int],
        stamps: Sequence[dt.datetime],
        changes: Sequence[RowChange | None],
    ) -> pa.RecordBatch:
        arrays = self._data_arrays(rows)
        arrays.append(pa.array([k.value for k in kinds], pa.string()))
        arrays.append(pa.array(versions, pa.int64()))
        arrays.append(pa.array(stamps, pa.timestamp("us", tz="UTC")))
        for name in self.metadata:
            values = [
                _metadata_value(name, c, k, self.constants)
                for c, k in zip(changes, kinds, strict=True)
            ]
            arrays.append(pa.array(values, self.schema.field(name).type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def snapshot_batch(
        self,
        chunk: ChunkRows,
        version: int,
        at: dt.datetime,
        kind: ChangeType = ChangeType.INSERT,
    ) -> pa.RecordBatch:
        """Rows read by the snapshot: all inserts at one version and time (a re-read on
        demand: upserts, ``update_postimage`` without a pre-image). The constant columns
        are built in Arrow, not from per-row Python lists (a large share of a snapshot's
        CPU otherwise)."""
        n = chunk.num_rows
        if chunk.columns is not None:
            arrays = list(chunk.columns.columns)
        else:
            arrays = self._data_arrays(chunk.rows, chunk.text_columns)
        arrays.append(pa.repeat(pa.scalar(kind.value, pa.string()), n))
        arrays.append(pa.repeat(pa.scalar(version, pa.int64()), n))
        arrays.append(pa.repeat(pa.scalar(at, pa.timestamp("us", tz="UTC")), n))
        for name in self.metadata:
            field = self.schema.field(name)
            value = _metadata_value(name, None, kind, self.constants)
            arrays.append(pa.repeat(pa.scalar(value, field.type), n))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def change_batch(self, changes: Sequence[tuple[RowChange, Emitted]]) -> pa.RecordBatch:
        rows: list[Row] = []
        kinds: list[ChangeType] = []
        sources: list[RowChange] = []
        for change, emitted in changes:
            for kind, row in emitted:
                rows.append(row)
                kinds.append(kind)
                sources.append(change)
        versions = [c.version for c in sources]
        stamps = [_utc(c.timestamp) for c in sources]
        return self._batch(rows, kinds, versions, stamps, sources)

    @property
    def data_types(self) -> list[pa.DataType]:
        """The table's own columns' Arrow types (what a decoder writing Arrow must match)."""
        return [self.schema.field(i).type for i in range(self.data_width)]

    def block_batch(
        self, blocks: Sequence[ChangeBlock], data: Sequence[pa.Array] | None = None
    ) -> pa.RecordBatch:
        """Every change of ``blocks`` (all emitted: a table whose snapshot is done), built
        column by column (:class:`_Columns`): the log partition's hot path. ``data`` are
        the table's columns already in Arrow when the blocks' images were decoded into
        column buffers (``ChangeBlock.sunk``), one value per image in block order, possibly
        followed by the three change columns (then only metadata columns are built here)."""
        width, changes = self.data_width, len(CHANGE_FIELDS)
        if data is not None and len(data) == width + changes and not self.metadata:
            # the decoder wrote the change columns too: nothing per row left in Python
            count = sum(b.image_count for b in blocks)
            if any(len(a) != count for a in data):
                raise ValueError(f"Arrow columns do not hold the blocks' {count} images")
            return pa.RecordBatch.from_arrays(list(data), schema=self.schema)
        columns = _Columns(blocks, per_block=bool(self.metadata))
        if data is None:
            arrays = self._data_arrays(columns.rows)
        else:
            if len(data) not in (width, width + changes) or any(
                len(a) != len(columns.codes) for a in data
            ):
                raise ValueError(
                    f"{len(data)} Arrow columns do not hold the blocks' {len(columns.codes)} "
                    f"images of {width} columns"
                )
            arrays = list(data[:width])
        arrays.append(columns.kinds([k.value for k in _KINDS]))
        arrays.append(pa.array(columns.versions, pa.int64()))
        arrays.append(columns.stamps())
        for name in self.metadata:
            type_ = self.schema.field(name).type
            arrays.append(
                _block_metadata(
                    name,
                    self.constants,
                    type_,
                    blocks,
                    columns.block_of,
                    columns.seconds,
                    columns.codes,
                )
            )
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class EnvelopeBatchBuilder:
    """Changes of any captured table in the envelope schema: one row per change, with the
    primary key, before and after images as lossless JSON (formats/row_json.py)."""

    def __init__(
        self,
        schema: pa.Schema,
        table_id: TableId,
        names: Sequence[str],
        types: Sequence[pa.DataType],
        key_indexes: Sequence[int],
        constants: Constants | None = None,
    ) -> None:
        self.schema = schema
        self.table_id = table_id
        self.constants = _constants(table_id, constants)
        self.json = RowJsonEncoder(names, types)
        self.key_indexes = list(key_indexes)
        self.metadata = [f.name for f in schema][len(ENVELOPE_FIELDS) :]

    def _batch(
        self,
        kinds: Sequence[str],
        befores: Sequence[Row | None],
        afters: Sequence[Row | None],
        versions: Sequence[int],
        stamps: Sequence[dt.datetime],
        changes: Sequence[RowChange | None],
    ) -> pa.RecordBatch:
        arrays = self._arrays(
            kinds, befores, afters, versions, pa.array(stamps, pa.timestamp("us", tz="UTC"))
        )
        for name in self.metadata:
            values = [
                _metadata_value(name, c, _ENVELOPE_KIND[k], self.constants)
                for c, k in zip(changes, kinds, strict=True)
            ]
            arrays.append(pa.array(values, self.schema.field(name).type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _arrays(
        self,
        kinds: Sequence[str],
        befores: Sequence[Row | None],
        afters: Sequence[Row | None],
        versions: Sequence[int],
        stamps: pa.Array,
    ) -> list[pa.Array]:
        """The envelope's own columns (not the metadata ones)."""
        n = len(kinds)
        keys = [
            self.json.encode(a if a is not None else b, self.key_indexes)
            for b, a in zip(befores, afters, strict=True)
        ]
        return [
            pa.repeat(pa.scalar(self.table_id.database, pa.string()), n),
            pa.repeat(pa.scalar(self.table_id.table, pa.string()), n),
            pa.array(kinds, pa.string()),
            pa.array(versions, pa.int64()),
            stamps,
            pa.array(keys, pa.string()),
            pa.array([self.json.encode(b) for b in befores], pa.string()),
            pa.array([self.json.encode(a) for a in afters], pa.string()),
        ]

    def snapshot_batch(
        self,
        chunk: ChunkRows,
        version: int,
        at: dt.datetime,
        kind: ChangeType = ChangeType.INSERT,
    ) -> pa.RecordBatch:
        """Snapshot rows: inserts, or for a re-read on demand updates without a ``before``
        (upserts)."""
        rows = chunk.canonical()  # JSON encoding needs Python values
        n = len(rows)
        envelope_kind = ENVELOPE_INSERT if kind == ChangeType.INSERT else ENVELOPE_UPDATE
        return self._batch(
            [envelope_kind] * n, [None] * n, rows, [version] * n, [at] * n, [None] * n
        )

    def change_batch(self, changes: Sequence[tuple[RowChange, Emitted]]) -> pa.RecordBatch:
        kinds: list[str] = []
        befores: list[Row | None] = []
        afters: list[Row | None] = []
        for _, emitted in changes:
            images = dict(emitted)
            if ChangeType.UPDATE_PREIMAGE in images:
                kinds.append(ENVELOPE_UPDATE)
                befores.append(images[ChangeType.UPDATE_PREIMAGE])
                afters.append(images[ChangeType.UPDATE_POSTIMAGE])
            elif ChangeType.DELETE in images:
                kinds.append(ENVELOPE_DELETE)
                befores.append(images[ChangeType.DELETE])
                afters.append(None)
            elif ChangeType.UPDATE_POSTIMAGE in images:  # an upsert: no old row
                kinds.append(ENVELOPE_UPDATE)
                befores.append(None)
                afters.append(images[ChangeType.UPDATE_POSTIMAGE])
            else:
                kinds.append(ENVELOPE_INSERT)
                befores.append(None)
                afters.append(images[ChangeType.INSERT])
        sources = [c for c, _ in changes]
        return self._batch(
            kinds,
            befores,
            afters,
            [c.version for c in sources],
            [_utc(c.timestamp) for c in sources],
            sources,
        )

    def block_batch(self, blocks: Sequence[ChangeBlock]) -> pa.RecordBatch:
        """Every change of ``blocks`` (a table whose snapshot is done), one envelope row
        each; images are sliced from the blocks, not regrouped change by change."""
        kinds: list[str] = []
        codes: list[int] = []  # for row_kind, index into _KINDS
        befores: list[Row | None] = []
        afters: list[Row | None] = []
        versions: list[int] = []
        seconds: list[int] = []
        block_of: list[int] = []
        for i, block in enumerate(blocks):
            images = block.images
            n = len(block)
            if not n:
                continue
            if block.kind == "update":
                kinds += [ENVELOPE_UPDATE] * n
                codes += [2] * n
                befores += images[0::2]
                afters += images[1::2]
            elif block.kind == "upsert":  # an update without its old row
                kinds += [ENVELOPE_UPDATE] * n
                codes += [2] * n
                befores += [None] * n
                afters += images
            elif block.kind == "insert":
                kinds += [ENVELOPE_INSERT] * n
                codes += [0] * n
                befores += [None] * n
                afters += images
            else:
                kinds += [ENVELOPE_DELETE] * n
                codes += [3] * n
                befores += images
                afters += [None] * n
            versions += range(block.version, block.version + n)
            seconds += [block.timestamp] * n
            block_of += [i] * n
        arrays = self._arrays(kinds, befores, afters, versions, _epoch_stamps(seconds))
        for name in self.metadata:
            type_ = self.schema.field(name).type
            arrays.append(
                _block_metadata(name, self.constants, type_, blocks, block_of, seconds, codes)
            )
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _constants(table: TableId, given: Constants | None) -> Constants:
    """A table's metadata constants; by default its namespace is its database."""
    if given is not None:
        return given
    return {"database_name": table.database, "table_name": table.table}


_ENVELOPE_KIND = {
    ENVELOPE_INSERT: ChangeType.INSERT,
    ENVELOPE_UPDATE: ChangeType.UPDATE_POSTIMAGE,
    ENVELOPE_DELETE: ChangeType.DELETE,
}

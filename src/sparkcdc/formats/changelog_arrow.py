"""Changelog rows as Arrow: the schema every source emits and a batch builder.

Pure pyarrow, so sources build their output without Spark; Spark receives these batches
as they are and they must match the declared schema exactly (STACK-NOTES).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.formats.row_json import RowJsonEncoder

#: Columns every changelog row carries after the table's own columns.
CHANGE_FIELDS = (
    pa.field("_change_type", pa.string(), nullable=False),
    pa.field("_commit_version", pa.int64(), nullable=False),
    pa.field("_commit_timestamp", pa.timestamp("us", tz="UTC"), nullable=True),
)

#: ``metadata.list`` columns, appended in this order when requested.
METADATA_FIELDS = {
    "database_name": pa.field("database_name", pa.string()),
    "table_name": pa.field("table_name", pa.string()),
    "op_ts": pa.field("op_ts", pa.timestamp("us", tz="UTC")),
    "row_kind": pa.field("row_kind", pa.string()),
    "binlog_file": pa.field("binlog_file", pa.string()),
    "binlog_pos": pa.field("binlog_pos", pa.int64()),
    "binlog_gtid": pa.field("binlog_gtid", pa.string()),
}


#: Several tables in one stream: one row per change, rows as lossless JSON.
ENVELOPE_FIELDS = (
    pa.field("database_name", pa.string(), nullable=False),
    pa.field("table_name", pa.string(), nullable=False),
    pa.field("_change_type", pa.string(), nullable=False),
    pa.field("_commit_version", pa.int64(), nullable=False),
    pa.field("_commit_timestamp", pa.timestamp("us", tz="UTC"), nullable=True),
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
    """Snapshot rows; ``text_columns`` are still text (see :class:`TextColumn`)."""

    rows: Sequence[Row]
    text_columns: tuple[TextColumn, ...] = ()

    def canonical(self) -> Sequence[Row]:
        """The rows with every value canonical (text columns parsed one by one)."""
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


def _metadata_value(name: str, change: RowChange | None, kind: ChangeType, table: TableId) -> Any:
    if name == "database_name":
        return table.database
    if name == "table_name":
        return table.table
    if name == "row_kind":
        return kind.row_kind
    if change is None:  # snapshot rows have no log position or operation time
        return None
    return {
        "op_ts": _utc(change.timestamp),
        "binlog_file": change.file,
        "binlog_pos": change.pos,
        "binlog_gtid": change.gtid,
    }[name]


class ChangelogBatchBuilder:
    """One table's changes as typed columns; an update becomes two rows."""

    def __init__(self, schema: pa.Schema, data_width: int, table_id: TableId) -> None:
        self.schema = schema
        self.data_width = data_width
        self.table_id = table_id
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
                _metadata_value(name, c, k, self.table_id)
                for c, k in zip(changes, kinds, strict=True)
            ]
            arrays.append(pa.array(values, self.schema.field(name).type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def snapshot_batch(self, chunk: ChunkRows, version: int, at: dt.datetime) -> pa.RecordBatch:
        """Rows read by the snapshot: all inserts at one version and time. The constant
        columns are built in Arrow, not from per-row Python lists (a large share of a
        snapshot's CPU otherwise)."""
        n = len(chunk.rows)
        arrays = self._data_arrays(chunk.rows, chunk.text_columns)
        arrays.append(pa.repeat(pa.scalar(ChangeType.INSERT.value, pa.string()), n))
        arrays.append(pa.repeat(pa.scalar(version, pa.int64()), n))
        arrays.append(pa.repeat(pa.scalar(at, pa.timestamp("us", tz="UTC")), n))
        for name in self.metadata:
            field = self.schema.field(name)
            value = _metadata_value(name, None, ChangeType.INSERT, self.table_id)
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
    ) -> None:
        self.schema = schema
        self.table_id = table_id
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
        n = len(kinds)
        keys = [
            self.json.encode(a if a is not None else b, self.key_indexes)
            for b, a in zip(befores, afters, strict=True)
        ]
        arrays = [
            pa.array([self.table_id.database] * n, pa.string()),
            pa.array([self.table_id.table] * n, pa.string()),
            pa.array(kinds, pa.string()),
            pa.array(versions, pa.int64()),
            pa.array(stamps, pa.timestamp("us", tz="UTC")),
            pa.array(keys, pa.string()),
            pa.array([self.json.encode(b) for b in befores], pa.string()),
            pa.array([self.json.encode(a) for a in afters], pa.string()),
        ]
        for name in self.metadata:
            values = [
                _metadata_value(name, c, _ENVELOPE_KIND[k], self.table_id)
                for c, k in zip(changes, kinds, strict=True)
            ]
            arrays.append(pa.array(values, self.schema.field(name).type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def snapshot_batch(self, chunk: ChunkRows, version: int, at: dt.datetime) -> pa.RecordBatch:
        rows = chunk.canonical()  # JSON encoding needs Python values
        n = len(rows)
        return self._batch(
            [ENVELOPE_INSERT] * n, [None] * n, rows, [version] * n, [at] * n, [None] * n
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


_ENVELOPE_KIND = {
    ENVELOPE_INSERT: ChangeType.INSERT,
    ENVELOPE_UPDATE: ChangeType.UPDATE_POSTIMAGE,
    ENVELOPE_DELETE: ChangeType.DELETE,
}

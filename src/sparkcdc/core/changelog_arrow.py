"""Changelog rows as Arrow: the schema every source emits and a batch builder.

Pure pyarrow, so sources build their output without Spark; Spark receives these batches
as they are and they must match the declared schema exactly (STACK-NOTES).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId

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


def changelog_schema(data_fields: Sequence[pa.Field], metadata: Sequence[str]) -> pa.Schema:
    ordered = [n for n in METADATA_FIELDS if n in metadata]
    return pa.schema([*data_fields, *CHANGE_FIELDS, *(METADATA_FIELDS[n] for n in ordered)])


class ChangelogBatchBuilder:
    """Accumulates changelog rows column-wise and emits ``pa.RecordBatch`` objects."""

    def __init__(self, schema: pa.Schema, data_width: int, table_id: TableId) -> None:
        self.schema = schema
        self.data_width = data_width
        self.table_id = table_id
        self.metadata = [f.name for f in schema][data_width + 3 :]

    def snapshot_batch(self, rows: Sequence[Row], version: int, at: dt.datetime) -> pa.RecordBatch:
        """Rows read by the snapshot: all inserts at one version and time."""
        n = len(rows)
        columns = list(zip(*rows, strict=True)) if rows else [()] * self.data_width
        arrays = [pa.array(col, type=self.schema.field(i).type) for i, col in enumerate(columns)]
        arrays.append(pa.array([ChangeType.INSERT.value] * n, pa.string()))
        arrays.append(pa.array([version] * n, pa.int64()))
        arrays.append(pa.array([at] * n, pa.timestamp("us", tz="UTC")))
        meta = {
            "database_name": self.table_id.database,
            "table_name": self.table_id.table,
            "op_ts": None,
            "row_kind": ChangeType.INSERT.row_kind,
            "binlog_file": None,
            "binlog_pos": None,
            "binlog_gtid": None,
        }
        for name in self.metadata:
            arrays.append(pa.array([meta[name]] * n, self.schema.field(name).type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def change_batch(self, changes: Sequence[tuple[ChangeType, Row, RowChange]]) -> pa.RecordBatch:
        """Log changes: ``(change type, row, RowChange)`` triples."""
        rows = [row for _, row, _ in changes]
        columns = list(zip(*rows, strict=True)) if rows else [()] * self.data_width
        arrays = [pa.array(col, type=self.schema.field(i).type) for i, col in enumerate(columns)]
        arrays.append(pa.array([kind.value for kind, _, _ in changes], pa.string()))
        arrays.append(pa.array([c.version for _, _, c in changes], pa.int64()))
        stamps = [dt.datetime.fromtimestamp(c.timestamp, dt.timezone.utc) for _, _, c in changes]
        arrays.append(pa.array(stamps, pa.timestamp("us", tz="UTC")))
        for name in self.metadata:
            field = self.schema.field(name)
            if name == "database_name":
                values: list[Any] = [c.table.database for _, _, c in changes]
            elif name == "table_name":
                values = [c.table.table for _, _, c in changes]
            elif name == "op_ts":
                values = stamps
            elif name == "row_kind":
                values = [kind.row_kind for kind, _, _ in changes]
            elif name == "binlog_file":
                values = [c.file for _, _, c in changes]
            elif name == "binlog_pos":
                values = [c.pos for _, _, c in changes]
            else:
                values = [c.gtid for _, _, c in changes]
            arrays.append(pa.array(values, field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

"""Does a binlog TABLE_MAP still describe the table as it was captured?

Rows are decoded by column position, named by the columns the offset says the table has
at that position (the schema history, docs/design.md "Schema changes"): a table map with
a column more, or a type that differs at a position, would shift or mangle every value.
Schema changes are followed from their statements in the log, which end a batch before
any row of the new shape; a table map that still differs from the captured table is a
change the log has no statement for (made with ``sql_log_bin=0``) or a statement read
wrongly, and it stops the stream with its position and the way out.

Compared, position by position: the column count, each column's type as far as it
decides the values' Arrow type (integer width, and sign where the event says it, DECIMAL
precision and scale, the temporal, floating and text families), and the names where the
event has them (``binlog_row_metadata=FULL``: a cross-check, never the source of names).
"""

from __future__ import annotations

from collections.abc import Sequence

from sparkcdc.connectors.mysql.binlog.rowdecode.plan import (
    BIT,
    BLOB,
    DATE,
    DATETIME2,
    DOUBLE,
    ENUM,
    FLOAT,
    GEOMETRY,
    INT24,
    JSON,
    LONG,
    LONGLONG,
    NEWDECIMAL,
    SET,
    SHORT,
    STRING,
    TIME2,
    TIMESTAMP2,
    TINY,
    VARCHAR,
    YEAR,
    WireColumn,
)
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn, value_family

# Pre-5.6 temporal layouts and VAR_STRING, which old table maps may still carry.
TIMESTAMP, DATETIME, TIME, VAR_STRING = 7, 12, 11, 253

_INT_TYPES = {"tinyint": TINY, "smallint": SHORT, "mediumint": INT24, "int": LONG}
_INT_TYPES |= {"integer": LONG, "bigint": LONGLONG, "bool": TINY, "boolean": TINY}
_TEXT = frozenset({VARCHAR, STRING, BLOB, VAR_STRING})
_FAMILY_TYPES: dict[str, frozenset[int]] = {
    "float32": frozenset({FLOAT}),
    "float64": frozenset({DOUBLE}),
    "date": frozenset({DATE}),
    "datetime": frozenset({DATETIME2, DATETIME}),
    "timestamp": frozenset({TIMESTAMP2, TIMESTAMP}),
    "time": frozenset({TIME2, TIME}),
    "year": frozenset({YEAR}),
    "string": _TEXT,
    "binary": _TEXT,
    "enum": frozenset({ENUM, STRING}),
    "set": frozenset({SET, STRING}),
    "json": frozenset({JSON, BLOB}),
    "geometry": frozenset({GEOMETRY, BLOB}),
    "bits": frozenset({BIT}),
}


def table_map_drift(wire: Sequence[WireColumn], table: CapturedTable) -> str | None:
    """Why ``wire`` (a table map's columns) no longer describes ``table``; None if it does."""
    captured = table.column_names
    if len(wire) != len(captured):
        return f"{len(wire)} columns in the binlog, {len(captured)} captured"
    named = any(w.name is not None for w in wire)
    for position, (w, column) in enumerate(zip(wire, table.columns, strict=True), 1):
        if named and w.name != column.name:
            return (
                f"column {position} is {w.name} in the binlog's row metadata, {column.name} "
                "in the schema history"
            )
        reason = _type_drift(w, column, signed_known=named)
        if reason is not None:
            return f"column {column.name}: {reason} (captured as {column.column_type})"
    return None


def _type_drift(w: WireColumn, column: MySqlColumn, signed_known: bool = True) -> str | None:
    """Why ``w`` cannot hold ``column``'s values; ``signed_known`` False: the event carries
    no signedness (``NO_LOG``), so only the width is compared."""
    family = value_family(column)
    if family in ("int", "uint64") or (family == "bool" and column.data_type != "bit"):
        expected = _INT_TYPES.get(column.data_type)
        sign_differs = signed_known and w.unsigned != column.unsigned
        if expected is not None and (w.type != expected or sign_differs):
            return f"binlog type {w.type}{' unsigned' if w.unsigned else ''}"
        return None
    if family in ("decimal", "decimal_text"):
        if w.type != NEWDECIMAL:
            return f"binlog type {w.type}"
        if (w.precision, w.decimals) != (column.precision, column.scale or 0):
            return f"DECIMAL({w.precision},{w.decimals}) in the binlog"
        return None
    if family == "bool":  # BIT(1)
        return None if w.type == BIT else f"binlog type {w.type}"
    allowed = _FAMILY_TYPES.get(family)
    if allowed is not None and w.type not in allowed:
        return f"binlog type {w.type}"
    return None

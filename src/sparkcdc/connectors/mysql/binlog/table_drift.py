"""Does a binlog TABLE_MAP still describe the table as it was captured?

Rows are decoded by column name (``binlog_row_metadata=FULL``) with the columns the
offset says the table has at that position, so an added column would simply be skipped
and a changed type decoded into the old type: data silently missing or mangled. Schema
changes are followed from their statements in the log (docs/design.md, "Schema
changes"), which end a batch before any row of the new shape; a table map that still
differs from the captured table is a change the log has no statement for (made with
``sql_log_bin=0``), and it stops the stream with its position and the way out.

Compared: the column names as a set (order does not matter: rows are decoded by name),
and each column's type as far as it decides the values' Arrow type: integer width and
sign, DECIMAL precision and scale, the temporal, floating and text families.
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
    names = [w.name for w in wire]
    if any(n is None for n in names):  # no names in this table map: count them at least
        if len(wire) != len(captured):
            return f"{len(wire)} columns in the binlog, {len(captured)} captured"
        return None
    added = [n for n in names if n not in captured]
    dropped = [n for n in captured if n not in names]
    if added or dropped:
        parts = []
        if added:
            parts.append(f"new: {', '.join(str(n) for n in added)}")
        if dropped:
            parts.append(f"gone: {', '.join(dropped)}")
        return "columns " + "; ".join(parts)
    columns = {c.name: c for c in table.columns}
    for w in wire:
        column = columns[str(w.name)]
        reason = _type_drift(w, column)
        if reason is not None:
            return f"column {column.name}: {reason} (captured as {column.column_type})"
    return None


def _type_drift(w: WireColumn, column: MySqlColumn) -> str | None:
    family = value_family(column)
    if family in ("int", "uint64") or (family == "bool" and column.data_type != "bit"):
        expected = _INT_TYPES.get(column.data_type)
        if expected is not None and (w.type != expected or w.unsigned != column.unsigned):
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

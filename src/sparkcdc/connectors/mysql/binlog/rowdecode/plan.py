"""Per-table decoding plans for the compiled row decoder.

A plan entry says, for one binlog column, how its bytes are laid out (from the TABLE_MAP event
the library parsed) *and* which canonical value :func:`types.binlog_converter` makes of it
(from the column's information_schema family), so the C code emits final values in one pass.
Whatever the C code does not cover makes :func:`build_plan` return ``None`` with the reason:
that table map is decoded by the reference path, never approximately.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn, value_family

# Binlog column types (MySQL's enum_field_types), as in the TABLE_MAP event.
TINY, SHORT, LONG, FLOAT, DOUBLE, LONGLONG, INT24 = 1, 2, 3, 4, 5, 8, 9
DATE, YEAR, VARCHAR, BIT, TIMESTAMP2, DATETIME2, TIME2 = 10, 13, 15, 16, 17, 18, 19
JSON, NEWDECIMAL, ENUM, SET, BLOB, STRING, GEOMETRY = 245, 246, 247, 248, 252, 254, 255
INT_SIZES = {TINY: 1, SHORT: 2, INT24: 3, LONG: 4, LONGLONG: 8}

#: The library's Python codec names (pymysql ``Charset.encoding``) the C code decodes.
ENCODINGS = {"utf8": 0, "cp1252": 1, "ascii": 2}
#: Charsets whose library values need no further decoding (types._DECODED_CHARSETS).
PLAIN_CHARSETS = frozenset({None, "utf8mb4", "utf8mb3", "utf8", "latin1", "ascii"})


class Kind(IntEnum):
    """Plan kinds; the numbers are csrc/rowdecode.c's K_* constants."""

    INT = 1
    BOOL_INT = 2
    UINT64_DEC = 3
    FLOAT = 4
    DOUBLE = 5
    DECIMAL = 6
    DECIMAL_TEXT = 7
    BIT_BOOL = 8
    BITS = 9
    DATE = 10
    DATETIME2 = 11
    TIMESTAMP2 = 12
    TIME2 = 13
    YEAR = 14
    STR = 15
    BYTES = 16
    ENUM = 17
    SET = 18


@dataclass(frozen=True)
class WireColumn:
    """One TABLE_MAP column as the library parsed it (``pymysqlreplication.column.Column``)."""

    name: str | None
    type: int
    unsigned: bool = False
    max_length: int = 0  #: VARCHAR/STRING
    length_size: int = 0  #: BLOB/GEOMETRY/JSON length prefix bytes
    precision: int = 0  #: NEWDECIMAL
    decimals: int = 0
    fsp: int = 0  #: TIME2/DATETIME2/TIMESTAMP2
    bits: int = 0  #: BIT
    bytes: int = 0
    size: int = 0  #: ENUM/SET storage bytes
    encoding: str | None = None  #: the library's codec name ('utf8', 'cp1252', 'binary', ...)
    enum_values: tuple[str, ...] | None = None  #: with '' first, as the library keeps them
    set_values: tuple[str, ...] | None = None

    @classmethod
    def from_library(cls, column: Any) -> WireColumn:
        """From a ``pymysqlreplication.column.Column`` of a parsed TABLE_MAP event."""

        def opt(name: str, default: Any = 0) -> Any:
            return getattr(column, name, default)

        enum_values = opt("enum_values", None)
        set_values = opt("set_values", None)
        return cls(
            name=opt("name", None),
            type=int(column.type),
            unsigned=bool(opt("unsigned", False)),
            max_length=int(opt("max_length")),
            length_size=int(opt("length_size")),
            precision=int(opt("precision")),
            decimals=int(opt("decimals")),
            fsp=int(opt("fsp")),
            bits=int(opt("bits")),
            bytes=int(opt("bytes")),
            size=int(opt("size")),
            encoding=opt("character_set_name", None),
            enum_values=None if enum_values is None else tuple(enum_values),
            set_values=None if set_values is None else tuple(set_values),
        )


PlanEntry = tuple[Any, ...]


@dataclass(frozen=True)
class Plan:
    """A table map's compiled plan (entries per binlog column) or why there is none."""

    entries: tuple[PlanEntry, ...] | None
    width: int
    reason: str = ""


def build_plan(wire: Sequence[WireColumn], table: CapturedTable) -> Plan:
    """The plan decoding ``wire`` (the table map's columns) into ``table``'s column order."""
    slots = {c.name: i for i, c in enumerate(table.columns)}
    names = [w.name for w in wire]
    if any(n is None for n in names):
        return Plan(None, len(slots), "the table map has no column names")
    missing = [n for n in slots if n not in names]
    if missing:
        return Plan(None, len(slots), f"columns {missing} are not in the table map")
    entries: list[PlanEntry] = []
    for w in wire:
        out = slots.get(w.name, -1)  # type: ignore[arg-type]
        if out < 0:  # not captured: the library's values ignore it too
            skip = _skip_entry(w)
            if isinstance(skip, str):
                return Plan(None, len(slots), f"column {w.name!r}: {skip}")
            entries.append(skip)
            continue
        entry = column_entry(w, table.columns[out])
        if isinstance(entry, str):
            return Plan(None, len(slots), f"column {w.name!r}: {entry}")
        entries.append((int(entry[0]), out, *entry[1:]))
    return Plan(tuple(entries), len(slots))


def _skip_entry(w: WireColumn) -> PlanEntry | str:
    """A column that is decoded for its length and dropped (any plannable layout will do)."""
    layouts: dict[int, tuple[Any, ...]] = {
        **{t: (Kind.INT, n, 1) for t, n in INT_SIZES.items()},
        FLOAT: (Kind.FLOAT, 0, 0),
        DOUBLE: (Kind.DOUBLE, 0, 0),
        NEWDECIMAL: (Kind.DECIMAL_TEXT, w.precision, w.decimals),
        BIT: (Kind.BITS, w.bytes, w.bits),
        DATE: (Kind.DATE, 0, 0),
        DATETIME2: (Kind.DATETIME2, w.fsp, 0),
        TIMESTAMP2: (Kind.TIMESTAMP2, w.fsp, 0),
        TIME2: (Kind.TIME2, w.fsp, 0),
        YEAR: (Kind.YEAR, 0, 0),
        VARCHAR: (Kind.BYTES, 2 if w.max_length > 255 else 1, 0),
        STRING: (Kind.BYTES, 2 if w.max_length > 255 else 1, 0),
        BLOB: (Kind.BYTES, w.length_size, 0),
        GEOMETRY: (Kind.BYTES, w.length_size, 0),
        ENUM: (Kind.INT, w.size, 1),
        SET: (Kind.INT, w.size, 1),
    }
    layout = layouts.get(w.type)
    if layout is None or (w.type in (ENUM, SET) and w.size not in (1, 2, 3, 4, 8)):
        return "no layout"
    kind, a, b = layout
    return (int(kind), -1, a, b)


def column_entry(w: WireColumn, col: MySqlColumn) -> tuple[Any, ...] | str:
    """``(kind, a, b[, labels])`` for one captured column, or why it takes the reference
    path. Each branch mirrors what the library returns for ``w`` followed by
    ``types.binlog_converter(col)``."""
    family = value_family(col)
    for entry_of in (_numeric_entry, _temporal_entry, _bytes_entry, _labelled_entry):
        entry = entry_of(w, col, family)
        if entry is not None:
            return entry
    return f"binlog type {w.type} as {family} ({col.column_type}) is not compiled"


#: A family of :func:`column_entry`'s branches: the entry, why there is none, or None when
#: no branch of the family applies to the column.
_Entry = tuple[Any, ...] | str | None


def _numeric_entry(w: WireColumn, col: MySqlColumn, family: str) -> _Entry:
    """Integers, booleans, BIT, DECIMAL and floating point."""
    t = w.type
    if family in ("int", "bool", "uint64") and t in INT_SIZES:
        if family == "int":
            return (Kind.INT, INT_SIZES[t], int(w.unsigned))
        if family == "bool":
            return (Kind.BOOL_INT, INT_SIZES[t], 0)
        if t == LONGLONG:
            return (Kind.UINT64_DEC, 8, int(w.unsigned))
    if family in ("bool", "bits") and t == BIT and 1 <= w.bytes <= 8:
        if family == "bool":
            return (Kind.BIT_BOOL, w.bytes, w.bits)
        if w.bytes == ((col.width or col.precision or 1) + 7) // 8:
            return (Kind.BITS, w.bytes, w.bits)
        return "BIT width differs from the table map"
    if family in ("decimal", "decimal_text") and t == NEWDECIMAL:
        if not (1 <= w.precision <= 65 and 0 <= w.decimals <= min(30, w.precision)):
            return f"DECIMAL({w.precision},{w.decimals}) out of range"
        kind = Kind.DECIMAL if family == "decimal" else Kind.DECIMAL_TEXT
        if family == "decimal_text" and w.decimals != (col.scale or 0):
            return "DECIMAL scale differs from the table map"
        return (kind, w.precision, w.decimals)
    if family == "float32" and t == FLOAT:
        return (Kind.FLOAT, 0, 0)
    if family == "float64" and t == DOUBLE:
        return (Kind.DOUBLE, 0, 0)
    return None


def _temporal_entry(w: WireColumn, col: MySqlColumn, family: str) -> _Entry:
    """DATE, DATETIME, TIMESTAMP, TIME and YEAR (fractional seconds up to 6 digits)."""
    t = w.type
    if family == "date" and t == DATE:
        return (Kind.DATE, 0, 0)
    if family == "datetime" and t == DATETIME2 and 0 <= w.fsp <= 6:
        return (Kind.DATETIME2, w.fsp, 0)
    if family == "timestamp" and t == TIMESTAMP2 and 0 <= w.fsp <= 6:
        return (Kind.TIMESTAMP2, w.fsp, 0)
    if family == "time" and t == TIME2 and 0 <= w.fsp <= 6:
        if w.fsp != col.fsp:
            return "TIME precision differs from the table map"
        return (Kind.TIME2, w.fsp, 0)
    if family == "year" and t == YEAR:
        return (Kind.YEAR, 0, 0)
    return None


def _bytes_entry(w: WireColumn, col: MySqlColumn, family: str) -> _Entry:
    """Length-prefixed values: text in a charset decoded natively, binary, geometry."""
    t = w.type
    if t in (VARCHAR, STRING, BLOB):
        prefix = w.length_size if t == BLOB else (2 if w.max_length > 255 else 1)
        if not 1 <= prefix <= 4:
            return "unexpected length prefix"
        if family == "string":
            if w.encoding not in ENCODINGS or col.charset not in PLAIN_CHARSETS:
                return f"charset {col.charset} ({w.encoding}) is decoded in Python"
            return (Kind.STR, prefix, ENCODINGS[w.encoding])
        if family == "binary":
            if w.encoding != "binary":
                return f"binary column with charset {w.encoding}"
            return (Kind.BYTES, prefix, (col.width or 0) if col.data_type == "binary" else 0)
    if family == "geometry" and t == GEOMETRY and 1 <= w.length_size <= 4:
        return (Kind.BYTES, w.length_size, 0)
    return None


def _labelled_entry(w: WireColumn, col: MySqlColumn, family: str) -> _Entry:
    """ENUM and SET, whose labels the table map must carry (and, for SET, match)."""
    t = w.type
    if family == "enum" and t == ENUM and w.size in (1, 2):
        if w.enum_values is None or col.charset not in PLAIN_CHARSETS:
            return "ENUM labels missing from the table map"
        return (Kind.ENUM, w.size, 0, w.enum_values)
    if family == "set" and t == SET and 1 <= w.size <= 8:
        if (
            not w.set_values
            or w.set_values != col.labels
            or len(set(col.labels)) != len(col.labels)
        ):
            return "SET labels missing from the table map or differ from the table's"
        return (Kind.SET, w.size, 0, w.set_values)
    return None

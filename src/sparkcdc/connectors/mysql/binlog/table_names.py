"""A binlog TABLE_MAP's columns named by the schema history, not by the event.

A table map says each column's binlog type and layout; its optional metadata (names,
signedness, character sets, ENUM / SET labels) is there only as far as
``binlog_row_metadata`` says: all of it with ``FULL``, signedness and character sets with
``MINIMAL`` (MySQL 8.0's default, and python-mysql-replication reads it only while the
server is at FULL), none with ``NO_LOG`` (MariaDB's default) or on MySQL 5.7. The row
decoders need all of it: the library decodes a string with its column's character set
(binary data as UTF-8 otherwise: an error, or wrong text) and an integer with its sign,
and an ENUM value is a label number.

So once :func:`table_drift.table_map_drift` has found the table map to agree with the
table's columns as of its position (the offset's, docs/design.md "Schema changes"),
:func:`name_columns` fills in, position by position, what the event left out from those
columns. What the event does say is kept (``FULL`` names were just compared). Both
decoders then read the named table map as before: the library's reference path and the
compiled plan (``rowdecode/plan.py``), which the C decoder gets as output slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.connectors.mysql.binlog.rowdecode.plan import (
    BLOB,
    DOUBLE,
    ENUM,
    FLOAT,
    INT_SIZES,
    NEWDECIMAL,
    SET,
    STRING,
    VARCHAR,
)
from sparkcdc.connectors.mysql.server.types import MySqlColumn

#: VAR_STRING, which old table maps may still carry.
_VAR_STRING = 253
#: Binlog types whose values are text in a character set (or bytes: ``binary``).
_CHARACTER_TYPES = frozenset({VARCHAR, STRING, _VAR_STRING, BLOB, ENUM, SET})
#: Binlog types a sign applies to.
_NUMERIC_TYPES = frozenset(INT_SIZES) | {FLOAT, DOUBLE, NEWDECIMAL}


def library_encoding(charset: str | None) -> str:
    """The codec name python-mysql-replication decodes ``charset`` with (what a FULL
    table map gives a column: ``utf8`` for utf8mb4, ``cp1252`` for latin1); ``binary``
    for a column without a character set (BINARY, VARBINARY, BLOB), whose values stay
    bytes."""
    if charset is None:
        return "binary"
    from pymysqlreplication.constants.CHARSET import charset_by_name

    found = charset_by_name(charset)
    return str(found.encoding) if found is not None else charset


def name_columns(columns: Sequence[Any], history: Sequence[MySqlColumn]) -> None:
    """Give a table map's columns (the library's ``Column`` objects, in order) what their
    event did not carry, from the table's columns as of the event (``history``, a
    ``CapturedTable.columns``) at the same positions. The caller has checked that the two
    agree (``table_map_drift``)."""
    named = any(getattr(c, "name", None) for c in columns)
    for wire, column in zip(columns, history, strict=True):
        _name_one(wire, column, named)


def _name_one(wire: Any, column: MySqlColumn, named: bool) -> None:
    wire.name = column.name
    kind = int(wire.type)
    if not named and kind in _NUMERIC_TYPES:  # NO_LOG: the library took it as signed
        wire.unsigned = column.unsigned
    if kind in _CHARACTER_TYPES and getattr(wire, "character_set_name", None) is None:
        wire.character_set_name = library_encoding(column.charset)
    if kind == ENUM and not getattr(wire, "enum_values", None):
        wire.enum_values = ["", *column.labels]  # the library's: label n at index n
    if kind == SET and not getattr(wire, "set_values", None):
        wire.set_values = list(column.labels)

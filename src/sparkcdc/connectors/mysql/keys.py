"""How the MySQL dialect orders and identifies keys in Python (see snapshot/keys.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkcdc.connectors.mysql.discovery import CapturedTable
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.rows import Row
from sparkcdc.snapshot.keys import KeyOrder, pad_space

_TEXT_TYPES = frozenset(
    {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
)


def chunk_key_order(table: CapturedTable) -> KeyOrder:
    """Python ordering equal to the server's for the table's chunk key column."""
    column = table.chunk_column
    if column.data_type not in _TEXT_TYPES:
        return KeyOrder()
    collation = (column.collation or "").lower()
    if collation.endswith("_bin") and "nopad" not in collation:
        return KeyOrder(pad_space)  # code-point order, trailing spaces ignored (PAD SPACE)
    if collation.endswith("_nopad_bin"):
        return KeyOrder()
    raise SchemaError(
        f"table {table.table_id}: chunk key column '{column.name}' is a string with collation "
        f"'{column.collation}'; only binary (_bin) collations can be ordered exactly outside "
        "the server yet. Pick a numeric or binary column with "
        "'scan.incremental.snapshot.chunk.key-column'"
    )


def row_key(table: CapturedTable) -> Callable[[Row], Any]:
    """The primary key of a row (a tuple), which identifies it across log events."""
    indexes = table.key_indexes
    if len(indexes) == 1:
        (i,) = indexes
        return lambda row: row[i]
    return lambda row: tuple(row[i] for i in indexes)

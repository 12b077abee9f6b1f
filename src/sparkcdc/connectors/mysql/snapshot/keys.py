"""How the MySQL dialect orders and identifies keys in Python (see snapshot/keys.py).

String keys follow the column's collation (connectors/mysql/snapshot/collation.py): the server
decides which rows a chunk query returns and which primary keys are equal, so Python must
agree with it on both.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn, value_family
from sparkcdc.connectors.mysql.snapshot.collation import collation_key
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.rows import Row
from sparkcdc.snapshot.keys import KeyOrder

log = logging.getLogger(__name__)

#: Types compared as strings under a collation (ENUM and SET only in WHERE, see below).
_STRING_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})


def chunk_key_order(table: CapturedTable, config: MySqlSourceConfig) -> KeyOrder:
    """Python ordering equal to the server's for the table's chunk key column.

    String collations other than code-point ``_bin`` ones need the server's weight table,
    read once per process through ``config`` (see collation.py), so this may query the
    server the first time; collations whose order cannot be reproduced exactly raise
    SchemaError naming the column and the way out. A table read as one chunk has no chunk
    key: nothing is ever compared (its one chunk holds every row, and its cursor is never
    between the start and the end), so the plain order stands in.
    """
    if table.one_chunk:
        return KeyOrder()
    column = table.chunk_column
    if column.data_type == "set":
        raise _unorderable(table, column, "SET sorts by bit mask but compares as text")
    kind = value_family(column)
    if kind == "bool":  # TINYINT(1)/BIT(1) become booleans: 1..127 would all be True
        numbers = (
            ""
            if column.data_type == "bit"
            else " (treat-tinyint1-as-boolean.enabled: false reads TINYINT(1) as numbers)"
        )
        raise _unorderable(table, column, "its values are mapped to booleans" + numbers)
    if kind == "decimal_text":  # DECIMAL beyond 38 digits travels as exact text
        return KeyOrder(Decimal)
    if kind == "time":  # TIME travels as text ('-12:30:00.5'); order by signed duration
        return KeyOrder(time_text_micros)
    if column.data_type not in _STRING_TYPES and column.data_type != "enum":
        return KeyOrder()
    try:
        collate = collation_key(config, column.charset, column.collation)
    except SchemaError as exc:
        raise _unorderable(table, column, str(exc)) from None
    order = KeyOrder(collate)
    if column.data_type == "enum":
        # ORDER BY (which picks chunk ends) sorts ENUMs by label index, WHERE (which reads
        # chunks) compares labels as text: both agree only if the labels are in text order
        keys = [order.sort_key(label) for label in column.labels]
        if any(a >= b for a, b in itertools.pairwise(keys)):
            raise _unorderable(
                table,
                column,
                "an ENUM sorts by label position but compares as text, and its labels are "
                "not declared in text order",
            )
    return order


def time_text_micros(text: str) -> int:
    """Signed microseconds of a MySQL TIME in text form (``-838:59:59.999999``)."""
    negative = text.startswith("-")
    hours, minutes, rest = text.lstrip("-").split(":")
    seconds, _, fraction = rest.partition(".")
    micros = ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * 1_000_000
    micros += int(fraction.ljust(6, "0")[:6]) if fraction else 0
    return -micros if negative else micros


def _unorderable(table: CapturedTable, column: MySqlColumn, reason: str) -> SchemaError:
    return SchemaError(
        f"table {table.table_id}: chunk key column '{column.name}' ({column.column_type}, "
        f"collation {column.collation}) cannot be ordered outside the server exactly: "
        f"{reason}. Pick a numeric, binary or other string column with "
        "'scan.incremental.snapshot.chunk.key-column'"
    )


def row_key(table: CapturedTable, config: MySqlSourceConfig) -> Callable[[Row], Any]:
    """The primary key of a row (a tuple if composite), which identifies it across log events.

    The server treats primary keys equal under their collation as the same row ('abc' and
    'ABC' under a case-insensitive collation, 'a' and 'a ' under PAD SPACE), so string
    columns are identified by their collation key. A collation that cannot be reproduced
    falls back to the exact value: every log event and snapshot row carries the value
    stored at that moment, so exact values still identify rows consistently; only keys
    that differ but collate equal (rewritten within one normalisation window) are then
    treated as different rows.
    """
    parts: list[tuple[int, Callable[[Any], Any] | None]] = []
    for i in table.key_indexes:
        column = table.columns[i]
        collate = None
        if column.data_type in _STRING_TYPES:
            try:
                collate = collation_key(config, column.charset, column.collation)
            except SchemaError as exc:
                log.warning(
                    "table %s: primary key column '%s' is identified by exact value: %s",
                    table.table_id,
                    column.name,
                    exc,
                )
        parts.append((i, collate))
    if len(parts) == 1:
        ((i, collate),) = parts
        if collate is None:
            return lambda row: row[i]
        return lambda row: collate(row[i])
    if all(collate is None for _, collate in parts):
        indexes = [i for i, _ in parts]
        return lambda row: tuple(row[i] for i in indexes)
    return lambda row: tuple(row[i] if c is None else c(row[i]) for i, c in parts)

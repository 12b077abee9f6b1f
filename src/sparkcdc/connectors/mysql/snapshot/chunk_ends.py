"""The MySQL answers to chunk planning: key statistics and where the next chunk ends.

The framework's chunk planner (snapshot/chunk_planner.py) decides how many chunks a batch
takes and checks that chunk ends advance; these two queries are all it asks of the server.
"""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.sql import quote, quote_table
from sparkcdc.connectors.mysql.server.types import snapshot_converter, snapshot_select_expression
from sparkcdc.snapshot.chunks import Key, KeyStats
from sparkcdc.snapshot.keys import KeyOrder


def _key_value(table: CapturedTable) -> str:
    """The chunk key as the chunk reads select it (FLOAT widened: the text protocol prints 6
    digits, and a rounded bound would stop the cursor)."""
    return snapshot_select_expression(table.chunk_column).rsplit(" AS ", 1)[0]


def _convert(table: CapturedTable, value: Any) -> Key:
    """A chunk key value as the server returned it -> the value the readers produce."""
    converter = snapshot_converter(table.chunk_column)
    return value if value is None or converter is None else converter(value)


def key_stats(conn: Any, table: CapturedTable) -> KeyStats:
    """Minimum and maximum of the chunk key, and the server's row estimate."""
    key = _key_value(table)
    ((low, high),) = query(
        conn, f"SELECT MIN({key}), MAX({key}) FROM {quote_table(table.table_id)}", ()
    )
    rows = query(
        conn,
        "SELECT TABLE_ROWS FROM information_schema.TABLES "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
        (table.table_id.database, table.table_id.table),
    )
    estimate = int(rows[0][0] or 0) if rows else 0
    return KeyStats(_convert(table, low), _convert(table, high), estimate)


def next_chunk_end(conn: Any, table: CapturedTable, order: KeyOrder, lo: Key, size: int) -> Key:
    """The first key ``size`` rows past ``lo`` (None when the table ends before)."""
    key, value, name = quote(table.chunk_key), _key_value(table), quote_table(table.table_id)
    where, args = (f" WHERE {key} >= %s", [lo]) if lo is not None else ("", [])
    rows = query(
        conn,
        f"SELECT {value} FROM {name}{where} ORDER BY {key} LIMIT 1 OFFSET {int(size)}",
        args,
    )
    if not rows:
        return None
    hi = _convert(table, rows[0][0])
    if hi is None or (lo is not None and order.sort_key(hi) <= order.sort_key(lo)):
        # a run of equal (or NULL) keys longer than a chunk: end after the run
        bound = f" WHERE {key} > %s" if hi is not None else f" WHERE {key} IS NOT NULL"
        ((after,),) = query(
            conn, f"SELECT MIN({value}) FROM {name}{bound}", [hi] if hi is not None else []
        )
        hi = _convert(table, after)
    return hi

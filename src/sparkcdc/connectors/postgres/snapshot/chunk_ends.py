"""The PostgreSQL answers to chunk planning: key statistics and where the next chunk ends.

Key values travel as the server's text and are parsed like every other value
(server/types.py), so a bound compares in Python exactly like the rows it bounds.
"""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.sql import quote
from sparkcdc.connectors.postgres.server.types import value_parser
from sparkcdc.snapshot.chunks import Key, KeyStats
from sparkcdc.snapshot.keys import KeyOrder


def key_value(table: PgTable, text: str | None, decimal_mode: str) -> Key:
    """A chunk key's server text -> the value the readers produce."""
    if text is None:
        return None
    parse = value_parser(table.chunk_column, decimal_mode)
    return text if parse is None else parse(text)


def bound(table: PgTable) -> str:
    """A parameter as a chunk key value: cast to the column's type, so the comparison is
    the column's own and its index serves it (chunk keys are built-in types: keys.py)."""
    return f"%s::pg_catalog.{quote(table.chunk_column.type.name)}"


def _texts(conn: Any, sql: str, args: Any = None) -> list[str | None] | None:
    """The first row's values as the server's output text (``::text`` would differ: a
    ``char(n)`` loses its padding), or None when there is no row."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        result = cur.pgresult
        if result is None or result.ntuples == 0:
            return None
        return [
            None if (raw := result.get_value(0, i)) is None else bytes(raw).decode()
            for i in range(result.nfields)
        ]


def key_stats(conn: Any, table: PgTable, decimal_mode: str) -> KeyStats:
    """Minimum and maximum of the chunk key, and the planner's row estimate."""
    key = quote(table.chunk_key)
    texts = _texts(
        conn, f"SELECT pg_catalog.min({key}), pg_catalog.max({key}) FROM {table.sql_name}"
    )
    assert texts is not None
    low, high = texts
    ((estimate,),) = query(
        conn, "SELECT reltuples::bigint FROM pg_class WHERE oid = %s", (table.oid,)
    )
    return KeyStats(
        key_value(table, low, decimal_mode),
        key_value(table, high, decimal_mode),
        max(int(estimate), 0),  # -1: never analysed
    )


def next_chunk_end(
    conn: Any, table: PgTable, order: KeyOrder, lo: Key, size: int, decimal_mode: str
) -> Key:
    """The first key ``size`` rows past ``lo`` (None when the table ends before)."""
    key, name = quote(table.chunk_key), table.sql_name
    where, args = (f" WHERE {key} >= {bound(table)}", [lo]) if lo is not None else ("", [])
    found = _texts(
        conn, f"SELECT {key} FROM {name}{where} ORDER BY {key} LIMIT 1 OFFSET {int(size)}", args
    )
    if found is None:
        return None
    hi = key_value(table, found[0], decimal_mode)
    if lo is not None and order.sort_key(hi) <= order.sort_key(lo):
        # a run of equal keys longer than a chunk (a non-unique chunk key): end after it
        after = _texts(
            conn, f"SELECT pg_catalog.min({key}) FROM {name} WHERE {key} > {bound(table)}", [hi]
        )
        hi = key_value(table, after[0] if after else None, decimal_mode)
    return hi

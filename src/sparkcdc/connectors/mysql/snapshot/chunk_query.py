"""The ``SELECT`` of one chunk, shared by both chunk readers and by tests."""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.sql import quote, quote_table
from sparkcdc.connectors.mysql.server.types import snapshot_select_expression
from sparkcdc.snapshot.chunks import Chunk


def chunk_query(
    table: CapturedTable, chunk: Chunk, columns: str | None = None
) -> tuple[str, list[Any]]:
    """``SELECT`` of one chunk; NULL chunk keys sort first, so they belong to the first.
    ``columns`` replaces the classic reader's select list (text-exact expressions). A table
    read as one chunk (no chunk key column) is read whole: no ``WHERE``."""
    if columns is None:
        columns = ", ".join(snapshot_select_expression(c) for c in table.columns)
    if table.one_chunk:
        if chunk != Chunk():
            raise AssertionError(f"{table.table_id} is read as one chunk, not as {chunk}")
        return f"SELECT {columns} FROM {quote_table(table.table_id)}", []
    key = quote(table.chunk_key)
    conditions, args = [], []
    if chunk.lo is not None:
        conditions.append(f"{key} >= %s")
        args.append(chunk.lo)
    if chunk.hi is not None:
        conditions.append(
            f"({key} < %s)" if chunk.lo is not None else f"({key} IS NULL OR {key} < %s)"
        )
        args.append(chunk.hi)
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {columns} FROM {quote_table(table.table_id)}{where}", args

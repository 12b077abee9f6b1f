"""How the PostgreSQL dialect orders and identifies keys in Python (see snapshot/keys.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.types import UnorderableKeyError, key_sort_function
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.rows import Row
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.keys import KeyOrder, PartitionKeys


def chunk_key_order(table: PgTable) -> KeyOrder:
    """Python ordering equal to the server's btree order of the table's chunk key; keys
    whose order cannot be reproduced exactly (most collations, floats) are refused. A table
    read as one chunk has no chunk key: nothing is ever compared (its one chunk holds every
    row), so the plain order stands in."""
    if table.one_chunk:
        return KeyOrder()
    column = table.chunk_column
    try:
        collate = key_sort_function(column)
    except UnorderableKeyError as exc:
        raise SchemaError(
            f"table {table.table_id}: chunk key column '{column.name}' ({column.type.declared}) "
            f"cannot be ordered outside the server exactly: {exc}. Pick another column with "
            "'scan.incremental.snapshot.chunk.key-column'"
        ) from None
    return KeyOrder(collate)


def row_key(table: PgTable) -> Callable[[Row], Any]:
    """The primary key of a row (a tuple if composite). Rows are identified by exact
    values: collations of captured tables are deterministic (checked up front)."""
    indexes = table.key_indexes
    if len(indexes) == 1:
        (i,) = indexes
        return lambda row: row[i]
    return lambda row: tuple(row[i] for i in indexes)


def partition_keys(table: PgTable, chunks: Sequence[Chunk]) -> PartitionKeys:
    """The partition's key order and row identity."""
    if table.one_chunk:
        return PartitionKeys.of_one_chunk(row_key(table), tuple(chunks))
    return PartitionKeys(
        chunk_key_order(table), row_key(table), table.chunk_key_index, tuple(chunks)
    )

"""Which tables to capture, and their columns, keys, chunk key and replica identity."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.keyless import keyless_help
from sparkcdc.connectors.postgres.server.one_chunk_count import lock_wait_seconds, one_chunk_fit
from sparkcdc.connectors.postgres.server.sql import quote_table
from sparkcdc.connectors.postgres.server.types import COLUMNS_QUERY, PgColumn, column_from_row
from sparkcdc.core.comments import Comments
from sparkcdc.core.errors import SchemaError, SourceConfigurationError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.keyless import KeylessHelp, bad_chunk_column, leave_out_keyless, too_large
from sparkcdc.snapshot.table import KeyedColumns

_TABLES = """
SELECT c.oid, n.nspname, c.relname, c.relkind, c.relreplident
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp\\_%%'
ORDER BY n.nspname, c.relname
"""

#: The columns of each table's primary key (``indisprimary``) or replica identity index
#: (``indisreplident``: REPLICA IDENTITY USING INDEX), in the index's order.
_INDEX_COLUMNS = """
SELECT i.indrelid, a.attname
FROM pg_index i
CROSS JOIN LATERAL pg_catalog.unnest(i.indkey) WITH ORDINALITY AS k(attnum, position)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.{flag} AND i.indrelid = ANY(%s::oid[])
ORDER BY i.indrelid, k.position
"""
_INDEX_FLAGS = frozenset({"indisprimary", "indisreplident"})

#: Each column's type as pgoutput's Relation message names it: (type oid, typmod).
_COLUMN_TYPES = """
SELECT attrelid, atttypid, atttypmod FROM pg_attribute
WHERE attrelid = ANY(%s::oid[]) AND attnum > 0 AND NOT attisdropped
ORDER BY attrelid, attnum
"""

#: Tables' (``objsubid`` 0) and columns' (their attnum) comments (COMMENT ON).
_COMMENTS = """
SELECT objoid, objsubid, description FROM pg_description
WHERE classoid = 'pg_catalog.pg_class'::regclass AND objoid = ANY(%s::oid[])
"""

#: pg_class.relreplident: what the WAL carries of an updated or deleted row's old values.
REPLICA_IDENTITIES = {"d": "DEFAULT", "n": "NOTHING", "f": "FULL", "i": "USING INDEX"}


@dataclass(frozen=True)
class PgTable(KeyedColumns):
    """A captured table: columns in order, primary key (empty: a keyless table, its rows a
    multiset), chunk key, replica identity."""

    table_id: TableId  #: (schema, table)
    oid: int
    columns: tuple[PgColumn, ...]
    primary_key: tuple[str, ...]
    chunk_key: str
    replica_identity: str  #: pg_class.relreplident
    #: (type oid, typmod) per column, as the WAL's Relation messages give them: a read
    #: whose table description differs fails instead of parsing values as the old type
    column_types: tuple[tuple[int, int], ...] = ()
    #: pg_attribute.attnum per column: tells a renamed column from a dropped one at a
    #: change (wal/column_change.py); empty in offsets written before they were kept
    attnums: tuple[int, ...] = ()
    #: COMMENT ON the table and its columns, read with ``include-comments.enabled`` (None:
    #: not read); not part of the table's shape (core/comments.py)
    comments: Comments | None = field(default=None, compare=False)

    @property
    def chunk_column(self) -> PgColumn:
        column: PgColumn = self.columns[self.chunk_key_index]
        return column

    @property
    def sql_name(self) -> str:
        return quote_table(self.table_id)


def index_columns(conn: Any, oids: Sequence[int], flag: str) -> dict[int, list[str]]:
    """Each table's columns of its index marked ``flag`` (``indisprimary``: the primary
    key; ``indisreplident``: the replica identity index), in index order; empty without."""
    if flag not in _INDEX_FLAGS:  # a column name, not a parameter: never user input
        raise ValueError(f"index flag {flag!r}: one of {sorted(_INDEX_FLAGS)}")
    found: dict[int, list[str]] = {int(oid): [] for oid in oids}
    if found:
        for oid, name in query(conn, _INDEX_COLUMNS.format(flag=flag), (list(found),)):
            found[int(oid)].append(str(name))
    return found


def primary_key(conn: Any, oid: int) -> tuple[str, ...]:
    """The table's primary key columns as the catalog has them now."""
    return tuple(index_columns(conn, [oid], "indisprimary")[oid])


def discover_tables(
    conn: Any,
    config: PostgresSourceConfig,
    left_out: dict[TableId, KeylessHelp] | None = None,
    over_bound: dict[TableId, PgTable] | None = None,
) -> list[PgTable]:
    """The tables matching ``schema-name``/``table-name``, with their schemas; fails with
    the fix for tables that cannot be captured (a partitioned parent). A table without a
    primary key is captured as a multiset of rows (empty ``primary_key``) when
    ``server/keyless.py`` says it can be, otherwise left out with a warning naming the fix
    (``snapshot/keyless.py``) and added to ``left_out``; one with no chunk key column is
    read as one chunk (empty ``chunk_key``) when it holds at most
    ``scan.incremental.snapshot.chunk.size`` rows, else left out so too and kept described
    in ``over_bound`` (a checkpoint that reads it as one chunk keeps it captured)."""
    found = _matching(conn, config)
    oids = [oid for oid, _, _, _ in found]
    columns, attnums, types = _columns_of(conn, oids)
    keys = index_columns(conn, oids, "indisprimary")
    lock_wait = lock_wait_seconds(config.connect_timeout)
    tables: list[PgTable] = []
    keyless: dict[TableId, KeylessHelp] = {}
    large: dict[TableId, PgTable] = {}
    unread: dict[TableId, PgTable] = {}  #: left out uncounted: a checkpoint keeps one
    for oid, table_id, _, ident in found:
        chunk_key = _chunk_key_of(config, table_id, ident, columns[oid], keys[oid])
        if isinstance(chunk_key, KeylessHelp):
            keyless[table_id] = chunk_key
            continue
        table = PgTable(
            table_id,
            oid,
            tuple(columns[oid]),
            tuple(keys[oid]),
            chunk_key,
            ident,
            tuple(types[oid]),
            tuple(attnums[oid]),
        )
        fit = (
            one_chunk_fit(conn, oid, table_id, table.sql_name, config.chunk_size, lock_wait)
            if table.one_chunk
            else True
        )
        if fit is True:
            tables.append(table)
        elif fit is False:
            keyless[table_id] = too_large(config.chunk_size)
            large[table_id] = table
        elif fit is not None:  # not counted (None: dropped since it was listed)
            keyless[table_id], unread[table_id] = fit, table
    if over_bound is not None:
        over_bound.clear()
        over_bound.update({**unread, **large})
    leave_out_keyless(keyless, len(tables), config.tables.label, left_out)
    return _with_comments(conn, tables) if config.include_comments else tables


def _columns_of(
    conn: Any, oids: list[int]
) -> tuple[dict[int, list[PgColumn]], dict[int, list[int]], dict[int, list[tuple[int, int]]]]:
    """Each table's columns, their attribute numbers and their (type OID, typmod), by the
    table's OID, in two catalog queries for all tables."""
    columns: dict[int, list[PgColumn]] = {oid: [] for oid in oids}
    attnums: dict[int, list[int]] = {oid: [] for oid in oids}
    for row in query(conn, COLUMNS_QUERY, (oids,)):
        columns[int(row[0])].append(column_from_row(row))
        attnums[int(row[0])].append(int(row[1]))
    types: dict[int, list[tuple[int, int]]] = {oid: [] for oid in oids}
    for oid, type_oid, typmod in query(conn, _COLUMN_TYPES, (oids,)):
        types[int(oid)].append((int(type_oid), int(typmod)))
    return columns, attnums, types


def _matching(conn: Any, config: PostgresSourceConfig) -> list[tuple[int, TableId, str, str]]:
    """The tables the options match: OID, name, kind and replica identity; fails when none
    does, or for a partitioned parent."""
    found = [
        (int(oid), TableId(schema, name), kind, ident)
        for oid, schema, name, kind, ident in query(conn, _TABLES)
        if config.matches(schema, name)
    ]
    if not found:
        raise SourceConfigurationError(
            f"no table of database '{config.database}' matches {config.tables.label} "
            "(both are regular expressions matched against whole names)"
        )
    parents = [str(t) for _, t, kind, _ in found if kind == "p"]
    if parents:
        raise SchemaError(
            f"partitioned table(s) {', '.join(parents)}: capture the partitions instead (match "
            "them with 'table-name'); a partitioned parent holds no rows of its own"
        )
    return found


def _chunk_key_of(
    config: PostgresSourceConfig,
    table_id: TableId,
    identity: str,
    columns: list[PgColumn],
    keys: list[str],
) -> str | KeylessHelp:
    """The table's chunk key: the option's column or the primary key's first; for a
    keyless table, what leaves it out instead (``server/keyless.py``, or a chunk key column
    it lacks or that may be NULL: a keyless table never fails the others), or the empty
    key: read as one chunk (``KeyedColumns.one_chunk``) if it is small enough."""
    chunk_column = config.chunk_key_columns.column_for(table_id.database, table_id.table)
    if keys:
        return _chunk_key(table_id, columns, chunk_column or keys[0])
    says = keyless_help(table_id, identity, config.upsert)
    if says is not None:
        return says
    if chunk_column is None:
        return ""
    try:
        return _chunk_key(table_id, columns, chunk_column)
    except SchemaError as exc:
        return bad_chunk_column(str(exc))


def _with_comments(conn: Any, tables: list[PgTable]) -> list[PgTable]:
    """``tables`` with their comments (``include-comments.enabled``)."""
    comments = read_comments(conn, tables)
    return [dataclasses.replace(t, comments=comments[t.oid]) for t in tables]


def read_comments(conn: Any, tables: list[PgTable]) -> dict[int, Comments]:
    """Each table's comment and its columns' (COMMENT ON), by the table's OID."""
    found: dict[int, tuple[str | None, dict[int, str]]] = {t.oid: (None, {}) for t in tables}
    for oid, number, text in query(conn, _COMMENTS, ([t.oid for t in tables],)):
        columns = found[int(oid)][1]
        if int(number) == 0:
            found[int(oid)] = (str(text), columns)
        else:
            columns[int(number)] = str(text)
    return {
        t.oid: Comments.of(
            found[t.oid][0],
            ((c.name, found[t.oid][1].get(n)) for c, n in zip(t.columns, t.attnums, strict=True)),
        )
        for t in tables
    }


def _chunk_key(table_id: TableId, columns: list[PgColumn], chunk_key: str) -> str:
    """The table's chunk key (``scan.incremental.snapshot.chunk.key-column`` or the first
    primary key column), checked: a NOT NULL column of the table (a chunk's range skips
    NULLs)."""
    names = [c.name for c in columns]
    if chunk_key not in names:
        raise SchemaError(
            f"table {table_id} has no column '{chunk_key}' "
            "('scan.incremental.snapshot.chunk.key-column')"
        )
    if columns[names.index(chunk_key)].nullable:
        raise SchemaError(
            f"table {table_id}: chunk key column '{chunk_key}' may be NULL; pick a NOT "
            "NULL column with 'scan.incremental.snapshot.chunk.key-column'"
        )
    return chunk_key

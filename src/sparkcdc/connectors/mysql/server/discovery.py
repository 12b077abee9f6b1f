"""Which tables to capture, and their columns, keys and chunk key."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import query, query_dicts
from sparkcdc.connectors.mysql.server.one_chunk_count import lock_wait_seconds, one_chunk_fit
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.errors import SchemaError, SourceConfigurationError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.keyless import (
    KeylessHelp,
    bad_chunk_column,
    leave_out_keyless,
    too_large,
    without_exact_snapshot,
)
from sparkcdc.snapshot.table import KeyedColumns

SYSTEM_DATABASES = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


class MissingChunkColumn(SchemaError):
    """The chunk key column the options name is not a column of the table; discovery
    leaves a keyless one out (``snapshot/keyless.py: bad_chunk_column``)."""

    def __init__(self, message: str, keyless: bool) -> None:
        super().__init__(message)
        self.keyless = keyless


@dataclass(frozen=True)
class CapturedTable(KeyedColumns):
    """A table's schema as captured: columns in ordinal order, primary key (empty: a
    keyless table, its rows a multiset), chunk key (empty: a keyless table with no chunk
    key column, read as one chunk: ``KeyedColumns.one_chunk``)."""

    table_id: TableId
    columns: tuple[MySqlColumn, ...]
    primary_key: tuple[str, ...]
    chunk_key: str
    #: TABLE_COMMENT (None: none): not part of the table's shape (core/comments.py)
    comment: str | None = field(default=None, compare=False)

    @property
    def chunk_column(self) -> MySqlColumn:
        column: MySqlColumn = self.columns[self.chunk_key_index]
        return column


def discover_tables(
    conn: Any,
    config: MySqlSourceConfig,
    left_out: dict[TableId, KeylessHelp] | None = None,
    over_bound: dict[TableId, CapturedTable] | None = None,
    watermark: str | None = None,
) -> list[CapturedTable]:
    """The base tables matching ``database-name``/``table-name``, with schemas; tables
    without a primary key are captured as multisets of rows chunked by the column given
    for them, or without one as one chunk while they hold at most ``chunk.size`` rows;
    the others are left out with a warning and added to ``left_out`` (the large ones
    described in ``over_bound``: ``KeepsGrownOneChunk``). Where snapshots are placed by a
    ``watermark`` (its name: MySQL's, or the option's), no table joins as one chunk
    (``without_exact_snapshot``); those are described in ``over_bound`` too, so that a
    checkpoint that reads one as one chunk already keeps it."""
    comments = _matching(conn, config)
    ids = list(comments)
    lock_wait = lock_wait_seconds(config.connect_timeout)
    tables: list[CapturedTable] = []
    problems: list[str] = []
    large: dict[TableId, CapturedTable] = {}
    unread: dict[TableId, CapturedTable] = {}  #: left out uncounted: a checkpoint keeps one
    left: dict[TableId, KeylessHelp] = {}
    for table_id in ids:
        chunk_key_column = config.chunk_key_columns.column_for(table_id.database, table_id.table)
        try:
            table = describe_table(
                conn, table_id, chunk_key_column, config.tinyint1_boolean, config.include_comments
            )
        except MissingChunkColumn as exc:
            if not exc.keyless:
                problems.append(str(exc))
            else:
                left[table_id] = bad_chunk_column(str(exc))
            continue
        except SchemaError as exc:
            problems.append(str(exc))
            continue
        table = replace(table, comment=comments[table_id])
        if not table.one_chunk:
            tables.append(table)
        elif watermark is not None:  # kept described: a checkpoint reading it goes on
            left[table_id], unread[table_id] = without_exact_snapshot(watermark), table
        else:
            fit = one_chunk_fit(conn, table_id, config.chunk_size, lock_wait)
            if fit is True:
                tables.append(table)
            elif fit is False:
                large[table_id] = table
            elif fit is not None:  # not counted (None: dropped since it was listed)
                left[table_id], unread[table_id] = fit, table
    if problems:
        raise SchemaError("\n".join(problems))
    if over_bound is not None:
        over_bound.clear()
        over_bound.update({**unread, **large})
    left.update(dict.fromkeys(large, too_large(config.chunk_size)))
    leave_out_keyless(left, len(tables), config.tables.label, left_out)
    return tables


def _matching(conn: Any, config: MySqlSourceConfig) -> dict[TableId, str | None]:
    """The base tables the selection matches, with their comments (None without
    ``include-comments.enabled``); SourceConfigurationError when there is none."""
    rows = query(
        conn,
        "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COMMENT FROM information_schema.TABLES "
        "WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME",
    )
    comments = {
        TableId(db, name): (comment or None) if config.include_comments else None
        for db, name, comment in rows
        if db.lower() not in SYSTEM_DATABASES and config.matches(db, name)
    }
    if not comments:
        raise SourceConfigurationError(
            f"no table matches {config.tables.label} (both are regular expressions matched "
            f"against the whole name) that user '{config.username}' can see; check the names "
            "and that the user has SELECT on them"
        )
    return comments


def describe_table(
    conn: Any,
    table_id: TableId,
    chunk_key_column: str | None,
    tinyint1_boolean: bool = True,
    comments: bool = False,
) -> CapturedTable:
    """``table_id`` as the server describes it now; its TINYINT(1) columns are read as
    BOOLEAN when ``tinyint1_boolean`` (``treat-tinyint1-as-boolean.enabled``), its
    columns' comments kept when ``comments`` (``include-comments.enabled``: offsets
    carry them then). A table without a primary key and without ``chunk_key_column`` has
    the empty chunk key: it is read as one chunk (``KeyedColumns.one_chunk``)."""
    columns = tuple(
        MySqlColumn.from_information_schema(row, tinyint1_boolean, comments)
        for row in query_dicts(
            conn,
            "SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (table_id.database, table_id.table),
        )
    )
    primary_key = tuple(
        name
        for (name,) in query(
            conn,
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = %s "
            "AND TABLE_NAME = %s AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
            (table_id.database, table_id.table),
        )
    )
    names = [c.name for c in columns]
    chunk_key = primary_key[0] if primary_key else ""
    if chunk_key_column:
        # MySQL column names are case-insensitive
        by_lower = {n.lower(): n for n in names}
        chunk_key_column = by_lower.get(chunk_key_column.lower(), chunk_key_column)
        if chunk_key_column not in names:
            raise MissingChunkColumn(
                f"'scan.incremental.snapshot.chunk.key-column' is '{chunk_key_column}', but "
                f"table {table_id} has no such column. Columns: {', '.join(names)}",
                keyless=not primary_key,
            )
        chunk_key = chunk_key_column
    return CapturedTable(table_id, columns, primary_key, chunk_key)

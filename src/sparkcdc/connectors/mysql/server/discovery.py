"""Which tables to capture, and their columns, keys and chunk key."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import query, query_dicts
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.errors import SchemaError, SourceConfigurationError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.keyless import WITH_A_CHUNK_KEY, KeylessHelp, leave_out_keyless
from sparkcdc.snapshot.table import KeyedColumns

SYSTEM_DATABASES = frozenset({"mysql", "information_schema", "performance_schema", "sys"})


class KeylessTableError(SchemaError):
    """The table has no primary key and no chunk key column is given for it (discovery
    leaves it out: ``snapshot/keyless.py``)."""

    def __init__(self, table_id: TableId) -> None:
        super().__init__(
            f"table {table_id} has no primary key and no chunk key column: name one with "
            f"'scan.incremental.snapshot.chunk.key-column' ({table_id}:<column>) to capture "
            "it, or add a primary key"
        )
        self.table_id = table_id


@dataclass(frozen=True)
class CapturedTable(KeyedColumns):
    """A table's schema as captured: columns in ordinal order, primary key (empty: a
    keyless table, its rows a multiset), chunk key."""

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
    conn: Any, config: MySqlSourceConfig, left_out: dict[TableId, KeylessHelp] | None = None
) -> list[CapturedTable]:
    """The base tables matching ``database-name``/``table-name``, with schemas; tables
    without a primary key are captured as multisets of rows when a chunk key column is
    given for them, otherwise left out with a warning and added to ``left_out``."""
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
    ids = list(comments)
    if not ids:
        raise SourceConfigurationError(
            f"no table matches {config.tables.label} (both are regular expressions matched "
            f"against the whole name) that user '{config.username}' can see; check the names "
            "and that the user has SELECT on them"
        )
    tables, problems, keyless = [], [], []
    for table_id in ids:
        chunk_key_column = config.chunk_key_columns.column_for(table_id.database, table_id.table)
        try:
            table = describe_table(
                conn, table_id, chunk_key_column, config.tinyint1_boolean, config.include_comments
            )
            tables.append(replace(table, comment=comments[table_id]))
        except KeylessTableError:
            keyless.append(table_id)
        except SchemaError as exc:
            problems.append(str(exc))
    if problems:
        raise SchemaError("\n".join(problems))
    leave_out_keyless(
        dict.fromkeys(keyless, WITH_A_CHUNK_KEY), len(tables), config.tables.label, left_out
    )
    return tables


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
    carry them then)."""
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
    if not primary_key and not chunk_key_column:
        raise KeylessTableError(table_id)
    chunk_key = primary_key[0] if primary_key else ""
    if chunk_key_column:
        # MySQL column names are case-insensitive
        by_lower = {n.lower(): n for n in names}
        chunk_key_column = by_lower.get(chunk_key_column.lower(), chunk_key_column)
        if chunk_key_column not in names:
            raise SchemaError(
                f"'scan.incremental.snapshot.chunk.key-column' is '{chunk_key_column}', but "
                f"table {table_id} has no such column. Columns: {', '.join(names)}"
            )
        chunk_key = chunk_key_column
    return CapturedTable(table_id, columns, primary_key, chunk_key)

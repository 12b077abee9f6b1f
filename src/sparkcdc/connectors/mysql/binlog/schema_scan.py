"""Finding the first DDL of a captured table in a batch's binlog range, on the driver.

A batch must end before such a statement and the statement must be a batch of its own
(snapshot/schema_change.py), so the planner walks ``SHOW BINLOG EVENTS`` over the range
(event types, positions and the statements' text; no row decoding, REPLICATION CLIENT
only), like the read limit and the log split do. In ROW format a DDL is a QUERY event in a
GTID group of its own; ``Info`` holds ``use `db`; <statement>`` when the session had a
default database.

Statements that do not name a captured table (by a case-insensitive substring test) are
not parsed. ALTER TABLE is read by ddl_columns.py; TRUNCATE, DROP and RENAME of a captured
table (ddl_guard.py) are reported as not followable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from sparkcdc.connectors.mysql.binlog.ddl_columns import (
    UnfollowableStatement,
    alter_table,
    statement_tables,
)
from sparkcdc.connectors.mysql.binlog.ddl_guard import CONSEQUENCES, tables_removed
from sparkcdc.connectors.mysql.binlog.limit import PAGE, GtidState
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, file_index
from sparkcdc.connectors.mysql.binlog.positions import binlog_files, gtid_at
from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.schema_change import SchemaChange

_USE = re.compile(r"^use\s+`((?:[^`]|``)+)`;\s*", re.I)
_TRANSACTION = frozenset({"BEGIN", "COMMIT", "ROLLBACK"})

#: ``(table) -> its default character set``, asked only when a statement adds text columns.
DefaultCharset = Callable[[TableId], str | None]


def first_schema_change(
    conn: Any,
    start: BinlogPosition,
    end: BinlogPosition,
    tables: Mapping[TableId, CapturedTable],
    default_charset: DefaultCharset,
    mariadb: bool,
) -> SchemaChange[BinlogPosition, CapturedTable] | None:
    """The first statement in ``(start, end]`` that changes or removes one of ``tables``
    (their columns as of ``start``); None when there is none."""
    lowered = {t.table.lower() for t in tables}
    file, pos = start.file, start.pos
    files = [name for name, _ in binlog_files(conn)]
    state = GtidState.parse(start.gtid)
    group_start = BinlogPosition(file, pos, start.gtid)  # where the current group begins
    while (file_index(file), pos) < end.key:
        rows = query(conn, f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {PAGE}", (file,))
        rotated = not rows
        for _, _start, event_type, _, end_pos, info in rows:
            end_pos = int(end_pos)
            if (file_index(file), end_pos) > end.key:
                return None
            if event_type == "Rotate":
                rotated = True
                break
            if event_type == "Gtid":
                gtid = str(state) if state is not None else None
                group_start = BinlogPosition(file, pos, gtid if gtid is not None else "")
                if state is not None:
                    state = state.after(str(info))
            elif event_type == "Query":
                text = str(info)
                match = _USE.match(text)
                database = match.group(1).replace("``", "`") if match else ""
                statement = text[match.end() :] if match else text
                words = statement.split(None, 1)
                if (
                    words
                    and words[0].upper() not in _TRANSACTION
                    and _names_captured(statement, lowered)
                ):
                    found = _change(statement, database, tables, default_charset, mariadb)
                    if found is not None:
                        table_id, table, problem = found
                        boundary = group_start
                        if not boundary.gtid and state is None:
                            boundary = BinlogPosition(
                                boundary.file, boundary.pos, gtid_at(conn, *_at(boundary))
                            )
                        after_gtid = (
                            str(state) if state is not None else gtid_at(conn, file, end_pos)
                        )
                        after = BinlogPosition(file, end_pos, after_gtid)
                        return SchemaChange(table_id, boundary, after, statement, table, problem)
            pos = end_pos
        if rotated:
            later = [f for f in files if file_index(f) > file_index(file)]
            if not later:
                return None
            file, pos = later[0], 4
    return None


def _at(position: BinlogPosition) -> tuple[str, int]:
    return position.file, position.pos


def _names_captured(statement: str, lowered: set[str]) -> bool:
    text = statement.lower()
    return any(name in text for name in lowered) or "database" in text or "schema" in text


def _change(
    statement: str,
    database: str,
    tables: Mapping[TableId, CapturedTable],
    default_charset: DefaultCharset,
    mariadb: bool,
) -> tuple[TableId, CapturedTable | None, str] | None:
    """(table, its shape after the statement or None, why not) for a statement that
    changes a captured table's columns or removes it; None for any other statement."""
    by_name = {(t.database, t.table): t for t in tables}
    removed = tables_removed(statement, database, by_name.keys())
    if removed is not None:
        kind, names = removed
        return by_name[names[0]], None, f"{kind}: {CONSEQUENCES[kind]}"
    altered = [by_name[n] for n in statement_tables(statement, database) if n in by_name]
    if not altered:
        return None
    table = tables[altered[0]]
    try:
        result = alter_table(statement, table, default_charset(table.table_id), mariadb)
    except UnfollowableStatement as exc:
        return table.table_id, None, f"not followed: {exc}"
    if not result.changed:
        return None  # indexes, defaults, options: the columns stay as they are
    return table.table_id, result.table, ""

"""Finding the first DDL of a captured table in a batch's binlog range, on the driver.

A batch must end before such a statement and the statement must be a batch of its own
(snapshot/schema_change.py), so the planner walks ``SHOW BINLOG EVENTS`` over the range
(event types, positions and the statements' text; no row decoding, REPLICATION CLIENT
only) and records its transaction boundaries, from which the batch's log split is cut
(limit.py). In ROW format a DDL is a QUERY event in a
GTID group of its own; ``Info`` holds ``use `db`; <statement>`` when the session had a
default database.

Statements that do not name a captured table (by a case-insensitive substring test) are
not parsed. ALTER TABLE is read by ddl_columns.py; a TRUNCATE of a captured table is a
change that keeps the columns (``truncated``), a DROP TABLE / DATABASE of captured tables
one that removes them (``dropped_tables``), and so is a RENAME of one away from its name
(the new name, when the options match it, is a new table: ``created``, found first); an
online schema change tool's swap (a RENAME TABLE that puts another table under a captured
name, ddl_guard.py) is a change to the swapped-in table's columns (``swapped``), which are
read from the server (the statement does not say them; the row events' table maps check
them, table_drift.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from sparkcdc.connectors.mysql.binlog.ddl_columns import (
    UnfollowableStatement,
    alter_table,
    statement_tables,
)
from sparkcdc.connectors.mysql.binlog.ddl_guard import (
    CONSEQUENCES,
    tables_created,
    tables_removed,
    tables_swapped,
)
from sparkcdc.connectors.mysql.binlog.limit import Boundary
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import gtid_at
from sparkcdc.connectors.mysql.binlog.show_events import walk_events
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.schema_change import ColumnMoves, SchemaChange

#: Events per ``SHOW BINLOG EVENTS`` page: the scan reads every event of a batch's range.
SCAN_PAGE = 10_000
_USE = re.compile(r"^use\s+`((?:[^`]|``)+)`;\s*", re.I)
_TRANSACTION = frozenset({"BEGIN", "COMMIT", "ROLLBACK"})
#: What MySQL 8 appends to a DDL statement's text in ``SHOW BINLOG EVENTS``.
_XID = re.compile(r"\s*/\* xid=\d+ \*/\s*$")


class _Found(NamedTuple):
    """What a statement did to a captured table."""

    table_id: TableId
    table: CapturedTable | None  #: its shape after the statement; None: not followable
    problem: str  #: why not
    moves: ColumnMoves = ColumnMoves()
    truncated: bool = False
    swapped: bool = False
    dropped_tables: tuple[TableId, ...] = ()
    rewritten: tuple[str, ...] = ()  #: columns given unlogged values (ddl_rewrites.py)


#: ``(table) -> its default character set`` (of new text columns without one), asked once
#: per ALTER of a captured table.
DefaultCharset = Callable[[TableId], str | None]

#: ``(table as captured) -> its shape on the server now`` (SchemaError when it has none
#: to capture), asked for a table an online schema change tool swapped.
Describe = Callable[[CapturedTable], CapturedTable]


def first_schema_change(
    conn: Any,
    start: BinlogPosition,
    end: BinlogPosition,
    tables: Mapping[TableId, CapturedTable],
    default_charset: DefaultCharset,
    mariadb: bool,
    walked: list[Boundary] | None = None,
    to_capture: Callable[[str, str], bool] | None = None,
    describe: Describe | None = None,
) -> SchemaChange[BinlogPosition, CapturedTable] | None:
    """The first statement in ``(start, end]`` that changes or removes one of ``tables``
    (their columns as of ``start``), or, given ``to_capture`` (``(database, table) ->``
    whether the table options match it), that creates a table to capture which is not in
    ``tables`` (``created``; checked in every group: ``CREATE ... SELECT`` shares its
    transaction with its rows); None when there is none.

    ``describe`` gives the columns of a table swapped in by an online schema change tool
    (without it such a swap is not followable).

    ``walked`` receives the transaction boundaries passed on the way (up to the change's
    transaction, or ``end``), from which the batch's log split is cut without walking the
    range again (limit.py :func:`split_at_boundaries`)."""
    scan = _Scan(conn, start, tables, default_charset, mariadb, to_capture, describe)
    seen = 0  # bytes of the range up to the current event's end
    for file, pos, event_type, end_pos, info in walk_events(
        conn, start, end, SCAN_PAGE, through_end=True
    ):
        seen += end_pos - pos if end_pos > pos else 0
        boundary = event_type == "Xid"
        if event_type == "Gtid":
            scan.group, scan.group_info = (file, pos), info
            scan.standalone = not info.startswith("BEGIN")
        elif event_type == "Query":
            change, boundary = scan.statement(_XID.sub("", str(info)), file, end_pos)
            if change is not None:
                return change
        if boundary and walked is not None:
            walked.append((file, end_pos, seen, scan.group_info))
    return None


class _Scan:
    """The scan's view of the GTID group it is in, and what a statement there does to the
    captured tables. A DDL is a group of its own (``standalone``): only such a statement
    can change a table's columns, and it ends its group (a transaction boundary)."""

    def __init__(
        self,
        conn: Any,
        start: BinlogPosition,
        tables: Mapping[TableId, CapturedTable],
        default_charset: DefaultCharset,
        mariadb: bool,
        to_capture: Callable[[str, str], bool] | None,
        describe: Describe | None,
    ) -> None:
        self.conn = conn
        self.tables = tables
        self.lowered = {t.table.lower() for t in tables}
        self.default_charset = default_charset
        self.mariadb = mariadb
        self.to_capture = to_capture
        self.describe = describe
        self.group = (start.file, start.pos)  # where the current GTID group begins
        self.group_info = ""  # its Gtid event's Info
        self.standalone = False  # a group of one statement (DDL), ended by that statement

    def statement(
        self, text: str, file: str, end_pos: int
    ) -> tuple[SchemaChange[BinlogPosition, CapturedTable] | None, bool]:
        """What the QUERY event ``text`` ending at ``file:end_pos`` does: the schema change
        it is (None: none), and whether it ends a transaction."""
        tables = self.tables
        # a swap of a captured table is that table's change, not a creation
        swap = self.standalone and _swaps_captured(text, tables, self.lowered)
        to_capture = self.to_capture
        created = None if to_capture is None or swap else _created(text, tables, to_capture)
        if created is not None:
            before, after = self._around(file, end_pos)
            return SchemaChange(created, before, after, _statement(text), None, created=True), False
        if text.upper() == "COMMIT":
            return None, True
        if text.upper() == "BEGIN":
            self.standalone = False  # MySQL: its Gtid event does not say BEGIN, this does
            return None, False
        if not self.standalone:
            return None, False
        self.standalone = False
        found = _statement_change(
            text, tables, self.lowered, self.default_charset, self.mariadb, self.describe
        )
        if found is None:
            return None, True
        before, after = self._around(file, end_pos)
        change = SchemaChange(
            found.table_id,
            before,
            after,
            _statement(text),
            found.table,
            found.problem,
            moves=found.moves,
            truncated=found.truncated,
            swapped=found.swapped,
            dropped_tables=found.dropped_tables,
            rewritten=found.rewritten,
        )
        return change, True

    def _around(self, file: str, end_pos: int) -> tuple[BinlogPosition, BinlogPosition]:
        """The positions (with their GTID sets) before the current group and after the
        statement ending at ``file:end_pos``: the change's batch is exactly that group."""
        before = BinlogPosition(self.group[0], self.group[1], gtid_at(self.conn, *self.group))
        after = BinlogPosition(file, end_pos, gtid_at(self.conn, file, end_pos))
        return before, after


def _swaps_captured(text: str, tables: Mapping[TableId, CapturedTable], lowered: set[str]) -> bool:
    """Whether ``text`` is a RENAME swapping a captured table."""
    if "rename" not in text[:200].lower() or not _names_captured(text, lowered):
        return False  # the cheap test, for every statement
    match = _USE.match(text)
    database = match.group(1).replace("``", "`") if match else ""
    return any(TableId(*n) in tables for n in tables_swapped(_statement(text), database))


def _statement(text: str) -> str:
    match = _USE.match(text)
    return text[match.end() :] if match else text


def _created(
    text: str, tables: Mapping[TableId, CapturedTable], to_capture: Callable[[str, str], bool]
) -> TableId | None:
    """The first table ``text`` creates that is to be captured and is not yet."""
    head = text[:200].lower()
    if "create" not in head and "rename" not in head:  # the cheap test, for every event
        return None
    match = _USE.match(text)
    database = match.group(1).replace("``", "`") if match else ""
    for name in tables_created(_statement(text), database):
        table_id = TableId(*name)
        if table_id not in tables and to_capture(*name):
            return table_id
    return None


def _statement_change(
    text: str,
    tables: Mapping[TableId, CapturedTable],
    lowered: set[str],
    default_charset: DefaultCharset,
    mariadb: bool,
    describe: Describe | None,
) -> _Found | None:
    match = _USE.match(text)
    database = match.group(1).replace("``", "`") if match else ""
    statement = _statement(text)
    words = statement.split(None, 1)
    if not words or words[0].upper() in _TRANSACTION or not _names_captured(statement, lowered):
        return None
    return _change(statement, database, tables, default_charset, mariadb, describe)


def _names_captured(statement: str, lowered: set[str]) -> bool:
    text = statement.lower()
    return any(name in text for name in lowered) or "database" in text or "schema" in text


def _change(
    statement: str,
    database: str,
    tables: Mapping[TableId, CapturedTable],
    default_charset: DefaultCharset,
    mariadb: bool,
    describe: Describe | None = None,
) -> _Found | None:
    """What a statement that changes a captured table's columns, truncates it, swaps it
    or removes it did to it; None for any other statement."""
    by_name = {(t.database, t.table): t for t in tables}
    removed = tables_removed(statement, database, by_name.keys())
    if removed is not None:
        kind, names = removed
        table_id = by_name[names[0]]
        if kind == "TRUNCATE":  # the columns stay; the driver decides (truncate.handling.mode)
            return _Found(table_id, tables[table_id], "", truncated=True)
        swapped = [n for n in tables_swapped(statement, database) if n in by_name]
        if kind == "RENAME" and swapped and set(names) <= set(swapped):
            return _swap(statement, [tables[by_name[n]] for n in swapped], describe)
        if swapped:  # a swap mixed with other renames of captured tables
            return _Found(table_id, None, f"{kind}: {CONSEQUENCES[kind]}")
        # every captured table it names (DROP DATABASE: all of its); a RENAME takes the
        # name away: a drop of it (the new name, if captured, is a new table)
        dropped = tuple(by_name[n] for n in names)
        return _Found(table_id, tables[table_id], "", dropped_tables=dropped)
    altered = [by_name[n] for n in statement_tables(statement, database) if n in by_name]
    if not altered:
        return None
    table = tables[altered[0]]
    try:
        result = alter_table(statement, table, default_charset(table.table_id), mariadb)
    except UnfollowableStatement as exc:
        return _Found(table.table_id, None, f"not followed: {exc}")
    if not result.changed:
        return None  # indexes, defaults, options: the columns stay as they are
    return _Found(table.table_id, result.table, "", result.moves, rewritten=result.rewritten)


def _swap(statement: str, swapped: list[CapturedTable], describe: Describe | None) -> _Found:
    """An online schema change tool's swap of a captured table: its columns become the
    swapped-in table's (from the server: the statement does not say them). A column whose
    name is gone is dropped; a renamed one cannot be told from a drop and an add, so the
    driver reads the table again after the swap (its rows are the tool's copies)."""
    table = swapped[0]
    if len(swapped) > 1:
        names = ", ".join(str(t.table_id) for t in swapped)
        return _Found(table.table_id, None, f"RENAME swaps several captured tables ({names})")
    if describe is None:
        return _Found(table.table_id, None, f"RENAME: {CONSEQUENCES['RENAME']}")
    try:
        now = describe(table)
    except SchemaError as exc:
        return _Found(table.table_id, None, f"the table swapped in cannot be captured: {exc}")
    if now.primary_key != table.primary_key:
        return _Found(
            table.table_id,
            None,
            f"the table swapped in has another primary key ({', '.join(now.primary_key)} "
            f"instead of {', '.join(table.primary_key)})",
        )
    dropped = tuple(c for c in table.column_names if c not in now.column_names)
    return _Found(table.table_id, now, "", ColumnMoves(dropped=dropped), swapped=True)

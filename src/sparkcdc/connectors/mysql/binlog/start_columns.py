"""The columns a stream starts with at an older binlog position, or a refusal.

A start at the log's end (``initial``, ``latest-offset``) takes the tables' columns from
the server, and a checkpoint has them in its offset (the schema history, docs/design.md
"Schema changes"). A start at an older position (``earliest-offset``, ``timestamp``,
``specific-offset``) has neither: the server says the columns *now*, and rows written at
the position may have had others. Row events are decoded by position, so a column renamed,
dropped or added since would name or shift values wrongly. The server's columns now are
the columns at the position exactly when the binlog between the two holds no change of a
captured table's columns: the planning scan (``schema_scan.py``) walks that range once at
the start, and a change there refuses the start, naming the statement and how to start
instead. A TRUNCATE keeps the columns and is passed over (the stream meets it in order).
"""

from __future__ import annotations

from collections.abc import Callable

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.core.errors import SchemaError
from sparkcdc.snapshot.schema_change import SchemaChange

#: ``first_change(start, end)``: the first change of a captured table's columns in
#: ``(start, end]`` (the dialect's ``schema_change`` over the tables discovered now).
FirstChange = Callable[
    [BinlogPosition, BinlogPosition], SchemaChange[BinlogPosition, CapturedTable] | None
]


def check_columns_since(
    start: BinlogPosition, now: BinlogPosition, first_change: FirstChange, mode: str
) -> None:
    """Raise SchemaError when a captured table's columns changed in ``(start, now]``: the
    columns discovered now are then not the ones the rows at ``start`` were written with."""
    at = start
    while at < now:
        change = first_change(at, now)
        if change is None:
            return
        if not (change.truncated and not change.dropped_tables and change.problem == ""):
            raise SchemaError(refusal(start, change, mode))
        at = change.after


def refusal(
    start: BinlogPosition, change: SchemaChange[BinlogPosition, CapturedTable], mode: str
) -> str:
    """Why the stream cannot start at ``start`` in ``mode``, and how to start instead."""
    what = "was dropped" if change.dropped_tables else "changed its columns"
    return (
        f"cannot start at {start} ('scan.startup.mode' {mode}): table {change.table_id} "
        f"{what} after it, at {change.describe()}. Rows there are decoded by column "
        "position with the table's columns as of their position, and the columns before "
        "that statement are not known (the server says only today's, and no checkpoint "
        "holds them). Start at a position after the statement (scan.startup.mode "
        f"specific-offset from {change.after}, or a later timestamp), or with "
        "'initial' (a snapshot, then the binlog), or from a checkpoint taken before it"
    )

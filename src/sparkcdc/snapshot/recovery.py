"""Going on after the log from a stream's position was lost (docs/design.md, "A lost log").

A purged binlog or a dropped PostgreSQL slot takes the changes between the stream's
position and the oldest log left with it, for every captured table, and no row says what
they were. A ``recover-lost-log`` signal makes the next batch a batch of its own, with no
rows: its log position is the log's position now, and every table whose rows the stream
had emitted starts its snapshot again, marked (``"log_lost"`` in its schema entry) so the
consumer empties its copy before the rows that follow. Tables whose snapshot had not begun
lose nothing: the table itself is read when their turn comes. A table the server no longer
has is marked dropped, as the DROP the lost log held would have been.

Pure: the driver (snapshot/driver.py) gives the tables as they were and as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.dialect import T
from sparkcdc.snapshot.progress import LOG_LOST, TABLE_DROPPED, TableProgress
from sparkcdc.snapshot.schema_change import ColumnMoves

__all__ = ["LOG_LOST", "Recovery", "recovered", "touched"]


@dataclass(frozen=True)
class Recovery(Generic[T]):
    """The recovery batch's table entries, and what it does to each table."""

    tables: dict[TableId, TableProgress]
    #: Tables whose rows the stream had emitted: read again, their copies emptied first.
    read_again: list[TableId]
    #: Captured tables the server no longer has: marked dropped.
    gone: list[TableId]
    #: Tables that had emitted nothing: their snapshot starts when its turn comes.
    untouched: list[TableId]


def touched(progress: TableProgress) -> bool:
    """Whether lost changes can have touched what the stream emitted of the table: it had
    emitted rows (a cursor, or its snapshot done). A table not started has emitted none."""
    return progress.started or progress.done


def recovered(
    entries: Mapping[TableId, TableProgress],
    before: Mapping[TableId, T],
    now: Mapping[TableId, T],
    to_json: Callable[[T], dict[str, Any]],
    mark: dict[str, Any],
    lost: str,
) -> Recovery[T]:
    """The recovery batch's entries for the tables of the offset ``entries``: ``before``
    has their columns at the offset's (lost) position, ``now`` the tables discovered at
    the position the stream goes on from, ``mark`` tells this recovery apart and ``lost``
    says what was lost (for the entries' ``change``).

    The columns are the table's now. One the table lost meanwhile is recorded as dropped:
    no statement says whether it was renamed, so a mirroring target drops it, and the
    new name comes as an added column, filled by the rows read again."""
    tables: dict[TableId, TableProgress] = {}
    read_again, gone, untouched = [], [], []
    for table_id, progress in sorted(entries.items()):
        old = before[table_id]
        table = now.get(table_id)
        if table is None:
            drop = {
                "table": to_json(old),
                "change": f"{table_id} is gone from the server ({lost})",
                TABLE_DROPPED: mark["at"],
            }
            tables[table_id] = dataclasses.replace(TableProgress.finished(), schema=drop)
            gone.append(table_id)
            continue
        schema: dict[str, Any] = {"table": to_json(table)}
        dropped = tuple(c for c in old.column_names if c not in table.column_names)
        if touched(progress):
            schema["change"] = f"{lost}: {table_id} is read again"
            schema[LOG_LOST] = mark
            read_again.append(table_id)
        else:
            untouched.append(table_id)
            if tuple(old.column_names) != tuple(table.column_names):
                schema["change"] = f"{lost}: the columns of {table_id} are read anew"
        schema.update(ColumnMoves(dropped=dropped).to_json())
        tables[table_id] = TableProgress(schema=schema)
    return Recovery(tables, read_again, gone, untouched)

"""Walking a binlog range with ``SHOW BINLOG EVENTS`` on the driver (event types,
positions and ``Info``; no row decoding, REPLICATION CLIENT only).

The batch planner walks a range twice over for different ends: the schema scan
(schema_scan.py) for the first statement that changes a captured table, and the split of
a batch's range into log partitions (limit.py) for transaction boundaries. Both read it
page by page, follow Rotate events to the next file, and stop where the range ends; the
walk is here once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, file_index
from sparkcdc.connectors.mysql.binlog.positions import binlog_files
from sparkcdc.connectors.mysql.server.connection import query

#: One event of a walk: its file, the position before it (where the previous one ended, or
#: the walk's start in that file), its type, the position after it, and its ``Info``.
WalkedEvent = tuple[str, int, str, int, Any]


def walk_events(
    conn: Any, start: BinlogPosition, end: BinlogPosition, page: int, through_end: bool
) -> Iterator[WalkedEvent]:
    """The events after ``start`` in log order, ``page`` per query; Rotate events are
    followed, not given. Stops before the first event that ends past ``end`` (with
    ``through_end``; else at ``end`` or past it), or after the last file: a range's end
    can fall inside a group the walk must not read past."""
    file, pos = start.file, start.pos
    files = [name for name, _ in binlog_files(conn)]
    end_index, end_pos = end.key
    while (file_index(file), pos) < end.key:
        rows = query(conn, f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {page}", (file,))
        rotated = not rows
        index = file_index(file)  # once per page: the loop below runs for every event
        # an event ending at ``stop`` or after it is past the range (None: none in this file)
        stop = (
            (end_pos + through_end) if index == end_index else (-1 if index > end_index else None)
        )
        for _, _start, event_type, _, event_end, info in rows:
            event_end = int(event_end)
            if stop is not None and event_end >= stop:
                return
            if event_type == "Rotate":
                rotated = True
                break
            yield file, pos, event_type, event_end, info
            pos = event_end
        if rotated:
            later = [f for f in files if file_index(f) > index]
            if not later:
                return
            file, pos = later[0], 4

"""MySQL's GTID set at a binlog position, exactly, from the binlog itself.

MySQL has no ``BINLOG_GTID_POS``, and ``SHOW MASTER STATUS``'s ``Executed_Gtid_Set`` is
read under another lock than its file and position, and is updated after a transaction
reaches the binlog (at its engine commit): it can miss transactions before the position.
The binlog is exact: each file starts with a ``Previous_gtids`` event (every GTID logged
before the file) and each transaction with a ``Gtid`` event, so the set at ``(file, pos)``
is the file's previous set plus the GTIDs of the transactions before ``pos``
(``SHOW BINLOG EVENTS``: server-side, REPLICATION SLAVE, no row decoding).

A stream asks for positions that only move forward, so :class:`GtidIndex` remembers the
sets it computed and walks only from the nearest one before the position asked: the file
from its start once per connection, then the new events of each batch.
"""

from __future__ import annotations

import bisect
import re
import weakref
from typing import Any

from sparkcdc.connectors.mysql.binlog.gtid import MySqlGtidSet
from sparkcdc.connectors.mysql.server.connection import query

#: Events per ``SHOW BINLOG EVENTS`` page.
PAGE = 10_000
#: Sets remembered per binlog file (the oldest half is dropped beyond it).
MARKS_PER_FILE = 256
#: A MySQL ``Gtid`` event's Info: ``SET @@SESSION.GTID_NEXT= 'uuid:N'``.
_GTID_NEXT = re.compile(r"GTID_NEXT\s*=\s*'([0-9a-fA-F-]+):(\d+)'")


def gtid_of_event(info: str) -> tuple[str, int] | None:
    """The ``(uuid, number)`` a MySQL ``Gtid`` event's Info names; None for anything
    else (an anonymous transaction, MariaDB's ``BEGIN GTID d-s-n``)."""
    found = _GTID_NEXT.search(info)
    return None if found is None else (found[1].lower(), int(found[2]))


class GtidIndex:
    """Exact GTID sets at positions of one server's binlog, remembered per file."""

    def __init__(self) -> None:
        self._marks: dict[str, list[tuple[int, MySqlGtidSet]]] = {}

    def at(self, conn: Any, file: str, pos: int) -> MySqlGtidSet:
        """The set of every transaction that starts before ``pos`` in ``file`` (a
        transaction boundary), and of every file before it."""
        marks = self._marks.setdefault(file, [])
        index = bisect.bisect_right(marks, pos, key=lambda mark: mark[0])
        start, state = marks[index - 1] if index else (4, None)
        if start == pos and state is not None:
            return state
        found: list[tuple[str, int]] = []
        at = start
        while at < pos:
            rows = query(conn, f"SHOW BINLOG EVENTS IN %s FROM {int(at)} LIMIT {PAGE}", (file,))
            if not rows:
                break
            for _, event_start, event_type, _, end_pos, info in rows:
                if int(event_start) >= pos:
                    at = pos
                    break
                if event_type == "Previous_gtids":
                    state = MySqlGtidSet.parse(str(info or ""))
                elif event_type == "Gtid":
                    gtid = gtid_of_event(str(info))
                    if gtid is not None:
                        found.append(gtid)
                at = int(end_pos)
            else:
                if len(rows) < PAGE:
                    break
        result = (state or MySqlGtidSet()).union(MySqlGtidSet.of(found))
        marks.insert(bisect.bisect_right(marks, pos, key=lambda mark: mark[0]), (pos, result))
        if len(marks) > MARKS_PER_FILE:
            del marks[: MARKS_PER_FILE // 2]
        return result


_INDEXES: weakref.WeakKeyDictionary[Any, GtidIndex] = weakref.WeakKeyDictionary()


def gtid_set_at(conn: Any, file: str, pos: int) -> MySqlGtidSet:
    """:meth:`GtidIndex.at` with the index of ``conn``'s server (one per connection)."""
    index = _INDEXES.get(conn)
    if index is None:
        index = _INDEXES[conn] = GtidIndex()
    return index.at(conn, file, pos)

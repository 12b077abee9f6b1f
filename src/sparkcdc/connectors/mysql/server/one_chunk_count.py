"""Whether a keyless table with no chunk key column is small enough to be read as one chunk:
an exact count bounded past ``scan.incremental.snapshot.chunk.size`` (docs/design.md,
"Tables without a primary key"), that one table's error never turns into a failure of the
tables around it, and that a pending exclusive lock cannot hold for long.

A table the source user may not read (no SELECT on it), or whose count waited too long for
a lock (an ALTER or ``LOCK TABLES ... WRITE`` under way), is left out with a warning naming
the error; one dropped between listing and count is simply gone. The lock wait is set for
the count's statement only (``lock_wait_timeout`` of the session, restored after): a
session setting, nothing written to the database.
"""

from __future__ import annotations

import logging
from typing import Any

from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.connectors.mysql.server.sql import quote_table
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.keyless import KeylessHelp, not_counted

log = logging.getLogger(__name__)

#: ER_TABLEACCESS_DENIED_ERROR: no SELECT on the table.
NO_SELECT = 1142
#: ER_NO_SUCH_TABLE: dropped after discovery listed it.
NO_TABLE = 1146
#: ER_LOCK_WAIT_TIMEOUT: a metadata lock waited longer than ``lock_wait_timeout``.
LOCK_WAIT = 1205


def lock_wait_seconds(connect_timeout: float) -> int:
    """How long the count may wait for a lock: half of ``connect.timeout`` (the
    connection's read timeout, which a longer wait would outlast, losing the connection
    instead of answering), at least a second."""
    return max(1, int(connect_timeout) // 2)


def one_chunk_fit(
    conn: Any, table_id: TableId, bound: int, lock_wait: int
) -> bool | KeylessHelp | None:
    """True when the table holds at most ``bound`` rows now, False when it holds more; the
    reason to leave it out when it could not be counted (no SELECT, a lock held too long);
    None when it was dropped since it was listed (nothing to capture)."""
    try:
        rows = _bounded_count(conn, table_id, bound, lock_wait)
    except Exception as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        if code == NO_TABLE:
            log.info("table %s was dropped while the tables were discovered", table_id)
            return None
        if code in (NO_SELECT, LOCK_WAIT):
            detail = exc.args[1] if len(exc.args) > 1 else str(exc)
            return not_counted(f"MySQL error {code}: {detail}", lock_wait)
        raise
    return rows <= bound


def _bounded_count(conn: Any, table_id: TableId, bound: int, lock_wait: int) -> int:
    """``SELECT COUNT(*)`` of at most ``bound + 1`` rows (bounded work on a huge table;
    TABLE_ROWS may be stale), waiting at most ``lock_wait`` seconds for a lock."""
    ((before,),) = query(conn, "SELECT @@SESSION.lock_wait_timeout", ())
    query(conn, f"SET SESSION lock_wait_timeout = {int(lock_wait)}", ())
    try:
        ((rows,),) = query(
            conn,
            f"SELECT COUNT(*) FROM (SELECT 1 FROM {quote_table(table_id)} "
            f"LIMIT {int(bound) + 1}) s",
            (),
        )
    finally:
        query(conn, f"SET SESSION lock_wait_timeout = {int(before)}", ())
    return int(rows)

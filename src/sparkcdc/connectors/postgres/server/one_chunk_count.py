"""Whether a keyless table with no chunk key column is small enough to be read as one chunk:
an exact count bounded past ``scan.incremental.snapshot.chunk.size`` (docs/design.md,
"Tables without a primary key"), that one table's error never turns into a failure of the
tables around it, and that a pending exclusive lock cannot hold for long.

The count runs in a read-only transaction of its own with ``SET LOCAL lock_timeout``: a
table whose ACCESS SHARE lock waits longer (an ALTER TABLE queued on it) is left out with a
warning naming the error; one dropped since it was listed is simply gone; one the source
user may not read is not counted here (the checks after discovery name the GRANT it
needs, or a created table waits for it).
"""

from __future__ import annotations

import logging
from typing import Any

from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.keyless import KeylessHelp, not_counted

log = logging.getLogger(__name__)

#: SQLSTATEs of a count that says nothing of the table's size.
UNDEFINED_TABLE = "42P01"
LOCK_NOT_AVAILABLE = "55P03"
INSUFFICIENT_PRIVILEGE = "42501"


def lock_wait_seconds(connect_timeout: float) -> int:
    """How long the count may wait for a lock: half of ``connect.timeout``, at least a
    second (the planning it is part of must not wait on another session's ALTER)."""
    return max(1, int(connect_timeout) // 2)


def one_chunk_fit(
    conn: Any, oid: int, table_id: TableId, sql_name: str, bound: int, lock_wait: int
) -> bool | KeylessHelp | None:
    """True when the table holds at most ``bound`` rows now (or the source user may not
    read it: not counted, see the module docstring), False when it holds more; the
    reason to leave it out when a lock kept it from being counted; None when it was
    dropped since it was listed (nothing to capture)."""
    try:
        with conn.transaction():
            query(conn, "SET TRANSACTION READ ONLY")
            query(conn, f"SET LOCAL lock_timeout = '{int(lock_wait)}s'")
            ((readable,),) = query(
                conn, "SELECT pg_catalog.has_table_privilege(%s, 'SELECT')", (oid,)
            )
            if readable is None:  # no such OID any more
                log.info("table %s was dropped while the tables were discovered", table_id)
                return None
            if not readable:
                return True
            ((rows,),) = query(
                conn,
                f"SELECT pg_catalog.count(*) FROM (SELECT 1 FROM {sql_name} "
                f"LIMIT {int(bound) + 1}) s",
            )
    except Exception as exc:
        state = getattr(exc, "sqlstate", None)
        if state == UNDEFINED_TABLE:
            log.info("table %s was dropped while the tables were discovered", table_id)
            return None
        if state in (LOCK_NOT_AVAILABLE, INSUFFICIENT_PRIVILEGE):
            detail = (str(exc).strip().splitlines() or [""])[0]  # not the query's LINE 1
            return not_counted(f"SQLSTATE {state}: {detail}", lock_wait)
        raise
    return int(rows) <= bound

"""Captured tables that are no longer in PostgreSQL's catalog under their name: dropped,
or renamed away (docs/design.md, "Schema changes").

The WAL has no trace of a DROP TABLE or a RENAME (pgoutput decodes row changes only), so
the catalog is asked, by each table's OID and name, together with WAL positions in the
same statement. A table the statement's snapshot no longer sees was dropped (or renamed)
by a transaction that committed before the snapshot was taken, so the drop's commit
record, and every row change of the table before it (a transaction that changed the
table committed before the drop got its lock), lies before the position returned:

- a table whose OID is gone was dropped. A commit that deletes relation files is always
  flushed before it is visible, whatever ``synchronous_commit`` says, and the flush takes
  every earlier record with it, so the WAL's *flush* position bounds it. The stream reads
  up to the flush position, so the drop's batch follows at once, also on an idle server;
- a table whose OID is there under another name was renamed, by a commit that need not
  be flushed yet: the WAL's *insert* position bounds it. Records past the flush position
  (the server's own, such as page pruning) are flushed only by the next commit, so on an
  idle server such a batch waits for the next write.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.core.table import TableId

_PRESENT = """
SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text, (
    SELECT json_agg(json_build_array(c.oid::bigint, n.nspname, c.relname))
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = ANY(%s::oid[])
)
"""


@dataclass(frozen=True)
class GoneTable:
    """A captured table no longer in the catalog under its name."""

    #: The WAL position before which its changes and its drop (or rename) lie.
    bound: int
    #: Its name now, for a table renamed away; None for a dropped one.
    renamed_to: TableId | None


def gone_tables(conn: Any, tables: Iterable[PgTable]) -> dict[int, GoneTable]:
    """Of ``tables``, by OID, those the catalog does not have under their names."""
    listed = list(tables)
    if not listed:
        return {}
    ((insert, flush, present),) = query(conn, _PRESENT, ([t.oid for t in listed],))
    names = {int(oid): TableId(schema, name) for oid, schema, name in present or []}
    gone = {}
    for table in listed:
        now = names.get(table.oid)
        if now is None:
            gone[table.oid] = GoneTable(lsn_from_text(str(flush)), None)
        elif now != table.table_id:
            gone[table.oid] = GoneTable(lsn_from_text(str(insert)), now)
    return gone

"""Captured tables that are no longer in PostgreSQL's catalog under their name: dropped,
or renamed away (docs/design.md, "Schema changes").

The WAL has no trace of a DROP TABLE or a RENAME (pgoutput decodes row changes only), so
the catalog is asked, by each table's OID and name, together with the WAL's insert
position in the same statement. A table the statement's snapshot no longer sees was
dropped (or renamed) by a transaction that committed before the snapshot was taken, so
the drop's commit record, and every row change of the table before it, lies before that
insert position: once the stream has read up to there, none of the table's changes is
left to read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text

_PRESENT = """
SELECT pg_current_wal_insert_lsn()::text, ARRAY(
    SELECT c.oid::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE (c.oid, n.nspname, c.relname) IN (
        SELECT * FROM unnest(%s::oid[], %s::text[], %s::text[])
    )
)
"""


def gone_tables(conn: Any, tables: Iterable[PgTable]) -> tuple[int, set[int]]:
    """The WAL insert position, and the OIDs of ``tables`` the catalog does not have
    under their names (as of a snapshot taken before that position was read)."""
    listed = list(tables)
    if not listed:
        return 0, set()
    oids = [t.oid for t in listed]
    schemas = [t.table_id.database for t in listed]
    names = [t.table_id.table for t in listed]
    ((lsn, present),) = query(conn, _PRESENT, (oids, schemas, names))
    return lsn_from_text(str(lsn)), set(oids) - {int(o) for o in present}

"""Captured tables that are no longer in PostgreSQL's catalog under their name: dropped,
or renamed away (docs/design.md, "Schema changes").

The WAL has no trace of a DROP TABLE or a RENAME (pgoutput decodes row changes only), so
the catalog is asked, by each table's OID, for its name now, together with WAL positions
in the same statement. A table the statement's snapshot no longer sees under its name was
dropped (or renamed) by a transaction that committed before the snapshot was taken, so the
drop's commit record, and every row change of the table before it (a transaction that
changed the table committed before the drop got its lock), lies before the position
returned, which the stream (it reads up to the WAL's flush position) reaches:

- a table whose OID is gone was dropped. A commit that deletes relation files is flushed
  before it is visible, whatever ``synchronous_commit`` says (every capturable table has
  storage: discovery takes plain tables and partitions only), and the flush takes every
  earlier record with it, so the WAL's *flush* position bounds it;
- a table whose OID is there under another name was renamed, by a commit that need not
  be flushed yet (``synchronous_commit = off``): the WAL's *insert* position bounds it,
  once the WAL writer has flushed what was written before it (within a few
  ``wal_writer_delay``). When nothing follows the last record but a page's header (the
  last record ended on a page boundary, or the segment was switched), the insert position
  is past that header, where no flush ever goes on an idle server: the bound is the page's
  start, as no record lies in a header.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.core.table import TableId

#: The sizes of a WAL page's header (XLogPageHeaderData, MAXALIGNed) and of the longer
#: one that opens a segment (XLogLongPageHeaderData).
SHORT_PAGE_HEADER = 24
LONG_PAGE_HEADER = 40

_PRESENT = """
SELECT pg_catalog.pg_current_wal_insert_lsn()::text, pg_catalog.pg_current_wal_flush_lsn()::text,
    pg_catalog.current_setting('wal_block_size')::bigint,
    (SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'),
    (
        SELECT pg_catalog.json_agg(pg_catalog.json_build_array(c.oid::bigint, n.nspname, c.relname))
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
    ((insert, flush, block, segment, present),) = query(conn, _PRESENT, ([t.oid for t in listed],))
    names = {int(oid): TableId(schema, name) for oid, schema, name in present or []}
    written = before_header(lsn_from_text(str(insert)), int(block), int(segment))
    gone = {}
    for table in listed:
        now = names.get(table.oid)
        if now is None:
            gone[table.oid] = GoneTable(lsn_from_text(str(flush)), None)
        elif now != table.table_id:
            gone[table.oid] = GoneTable(written, now)
    return gone


def before_header(insert: int, block_size: int, segment_size: int) -> int:
    """The WAL insert position ``insert`` moved back over a page header that nothing
    follows yet: every record written so far ends at or before the result."""
    in_segment = insert % segment_size
    if in_segment < block_size:  # a segment's first page: its header is the long one
        return insert - LONG_PAGE_HEADER if in_segment == LONG_PAGE_HEADER else insert
    if insert % block_size == SHORT_PAGE_HEADER:
        return insert - SHORT_PAGE_HEADER
    return insert

"""Tables created (or renamed into the table options) while a stream runs, found in
PostgreSQL's catalog (docs/design.md, "Tables created while a stream runs").

The WAL has no CREATE TABLE, and a new table's rows are decoded only once the publication
has it, so the driver asks the catalog at each planning for matching tables whose OID it
does not capture. A new table is captured (discovered, the publication extended, its
snapshot started) only once it can be: the source user may read it and it has REPLICA
IDENTITY FULL (a table without a primary key is left out under ``changelog-mode: upsert``,
and, when it has no chunk key column, if it holds more than
``scan.incremental.snapshot.chunk.size`` rows once it is ready, as discovery leaves it out).
Until then it waits, warned about once with the statement that makes it
ready; nothing is lost meanwhile, as its snapshot, taken when it is captured, reads every
row it has by then.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import REPLICA_IDENTITIES, PgTable
from sparkcdc.connectors.postgres.server.keyless import keyless_help
from sparkcdc.connectors.postgres.server.one_chunk_count import lock_wait_seconds, one_chunk_fit
from sparkcdc.connectors.postgres.server.sql import quote_table
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.keyless import too_large

log = logging.getLogger(__name__)

#: Plain tables and partitions (discovery's kinds, partitioned parents aside, whose rows
#: are their partitions'), with what capturing them needs.
_CANDIDATES = """
SELECT c.oid, n.nspname, c.relname, c.relreplident,
       pg_catalog.has_table_privilege(c.oid, 'SELECT'),
       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND NOT (c.oid = ANY(%s::oid[]))
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp\\_%%'
ORDER BY n.nspname, c.relname
"""


class CreatedTables:
    """Finds the created tables that are ready to capture; warns once per table that is
    not ready yet (by OID: a table dropped and created again is warned about again)."""

    def __init__(self, config: PostgresSourceConfig) -> None:
        self.config = config
        self._warned: set[int] = set()
        #: (OID, replica identity, readable) of the tables offered for capture.
        self._offered: set[tuple[int, str, bool]] = set()

    def ready(self, conn: Any, captured: Iterable[PgTable]) -> list[TableId]:
        """Matching tables that can be captured now, of neither a ``captured`` table's OID
        (one renamed is followed as a drop first) nor its name (one created again under a
        dropped table's name is taken after that drop's batch: ``discover_created``)."""
        captured = list(captured)
        names = {t.table_id for t in captured}
        oids = [t.oid for t in captured]
        found = []
        for oid, schema, name, identity, readable, keyed in query(conn, _CANDIDATES, (oids,)):
            table_id = TableId(schema, name)
            if table_id in names or not self.config.matches(schema, name):
                continue
            if not keyed and self.config.upsert:  # as discovery: never under upsert
                says = keyless_help(table_id, identity, self.config.upsert)
                if says is not None:
                    self._warn(
                        oid,
                        table_id,
                        f"but has no primary key: not captured ({says.why}; {says.fix})",
                    )
                    continue
            state = (oid, identity, bool(readable))
            if self._ready(oid, table_id, identity, readable) and state not in self._offered:
                # offered once per state: a table discovery then leaves out anyway must not
                # hold every later planning at the batch's start
                self._offered.add(state)
                fit = True if keyed else self._fits_one_chunk(conn, oid, table_id)
                if fit is None:  # not counted (a lock): counted again at the next planning
                    self._offered.discard(state)
                if fit:
                    found.append(table_id)
        return found

    def _fits_one_chunk(self, conn: Any, oid: int, table_id: TableId) -> bool | None:
        """Whether a keyless table can be read as one chunk if it has no chunk key column
        (counted as discovery counts it); one too large is warned about, not offered: the
        discovery that would take it would leave it out, a planning spent on nothing. None:
        it could not be counted now (warned about once), or was dropped since it was
        listed; not offered."""
        schema, name = table_id.database, table_id.table
        if self.config.chunk_key_columns.column_for(schema, name) is not None:
            return True
        lock_wait = lock_wait_seconds(self.config.connect_timeout)
        fit = one_chunk_fit(
            conn, oid, table_id, quote_table(table_id), self.config.chunk_size, lock_wait
        )
        if fit is True:
            return True
        says = too_large(self.config.chunk_size) if fit is False else fit
        if says is not None:
            self._warn(
                oid, table_id, f"but has no primary key: not captured ({says.why}; {says.fix})"
            )
        return False if fit is False else None

    def keep_ready(self, conn: Any, tables: list[PgTable], known: set[int]) -> list[PgTable]:
        """Of ``tables`` discovered again while the stream runs, the ``known`` (captured)
        ones and the new ones ready to capture: one not ready waits instead of failing the
        stream (discovery at the start still refuses it, with the fix)."""
        kept = []
        for table in tables:
            if table.oid not in known:
                ((readable,),) = query(
                    conn, "SELECT pg_catalog.has_table_privilege(%s, 'SELECT')", (table.oid,)
                )
                if not self._ready(table.oid, table.table_id, table.replica_identity, readable):
                    continue
            kept.append(table)
        return kept

    def _ready(self, oid: int, table_id: TableId, identity: str, readable: bool) -> bool:
        problem = _not_ready(table_id, identity, readable, self.config.upsert)
        if problem is not None:
            self._warn(oid, table_id, problem)
        return problem is None

    def _warn(self, oid: int, table_id: TableId, problem: str) -> None:
        if oid not in self._warned:
            self._warned.add(oid)
            label = self.config.tables.label
            log.warning("%s was created and matches %s, %s", table_id, label, problem)


def _not_ready(table_id: TableId, identity: str, readable: bool, upsert: bool) -> str | None:
    """Why a created table cannot be captured yet (None: it can), with the fix. Under
    ``changelog-mode: upsert`` DEFAULT is enough (USING INDEX waits too: whether its index
    is the primary key's is checked at discovery, which must not fail a running stream)."""
    name = quote_table(table_id)
    if not readable:
        return (
            "but the source user may not read it: it is captured once an owner runs "
            f"GRANT SELECT ON {name} TO <user>;"
        )
    if upsert and identity not in ("d", "f"):
        return (
            f"but has REPLICA IDENTITY {REPLICA_IDENTITIES.get(identity, identity)}: it is "
            f"captured once an owner runs ALTER TABLE {name} REPLICA IDENTITY DEFAULT; (its "
            "snapshot then reads every row it has by then)"
        )
    if not upsert and identity != "f":
        return (
            f"but has REPLICA IDENTITY {REPLICA_IDENTITIES.get(identity, identity)}: it is "
            f"captured once an owner runs ALTER TABLE {name} REPLICA IDENTITY FULL; (its "
            "snapshot then reads every row it has by then)"
        )
    return None

"""The stream's publication and replication slot, and the short-lived copies reads use.

* The **publication** names the tables pgoutput decodes. It must exist before the slot:
  pgoutput looks the publication up as of each decoded transaction, so WAL older than the
  publication cannot be decoded with it.
* The **slot** (pgoutput, one per stream) keeps the WAL from its confirmed position on.
  It is created on first use, advanced only after Spark has committed a batch (``advance``,
  a few batches late: ``scan.lsn-commit.checkpoints-num-delay``), and never dropped.
* A slot serves one reader at a time, but a micro-batch reads the log in several Spark
  tasks at once (the log partition, each chunk's window). Each read therefore copies the
  stream's slot into a **temporary** slot (``pg_copy_logical_replication_slot``: same
  confirmed and restart positions) and peeks its changes there; the copy disappears with
  the reader's session, and the stream's slot is never moved by a read. The driver alone
  peeks the stream's slot itself, when it plans a batch (wal/scan.py).

Nothing here writes a table: slots and publications are catalog objects, created only when
missing.
"""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.sql import quote
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text, lsn_to_text
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.core.errors import SourceConfigurationError, lost_log

log = logging.getLogger(__name__)

#: ``pg_logical_slot_peek_binary_changes`` of pgoutput, protocol 1; parameters: slot, the
#: LSN to stop at (transactions committing before it), publication. pgoutput splits
#: ``publication_names`` as a list of SQL identifiers (commas separate, unquoted names are
#: lower-cased), so the name goes in quoted: 'My,Pub' is one publication, not "my" and "pub".
PEEK = (
    "pg_catalog.pg_logical_slot_peek_binary_changes(%s, %s::pg_catalog.pg_lsn, NULL, "
    "'proto_version', '1', 'publication_names', pg_catalog.quote_ident(%s))"
)


@dataclass(frozen=True)
class SlotState:
    confirmed: int  #: confirmed_flush_lsn: transactions committing before it are gone
    restart: int  #: restart_lsn: the oldest WAL the slot keeps
    wal_status: str  #: reserved / extended / unreserved / lost


def ensure_publication(
    conn: Any, config: PostgresSourceConfig, tables: list[PgTable], *, create: bool = True
) -> bool:
    """The publication exists, publishes inserts, updates, deletes and truncates, and
    covers every captured table; created or extended in mode ``filtered``. True when it
    was created now (the slot, if older, cannot decode WAL written before it). With
    ``create`` false nothing is created or extended: what would be is checked to be
    possible (the user owns the tables)."""
    name = config.publication_name
    rows = query(
        conn,
        "SELECT pubinsert, pubupdate, pubdelete, pubtruncate, puballtables "
        "FROM pg_publication WHERE pubname = %s",
        (name,),
    )
    if not rows:
        return _create_publication(conn, config, tables, create)
    insert, update, delete, truncate, all_tables = rows[0]
    if not (insert and update and delete and truncate):
        raise SourceConfigurationError(
            f"publication '{name}' does not publish every kind of change: run ALTER "
            f"PUBLICATION {quote(name)} SET (publish = 'insert, update, delete, truncate');"
        )
    if not all_tables:
        _add_missing_tables(conn, config, tables, create)
    return False


def _create_publication(
    conn: Any, config: PostgresSourceConfig, tables: list[PgTable], create: bool
) -> bool:
    """The publication is missing: create it for ``tables`` (mode ``filtered``; with
    ``create`` false only check that it could be), or say how. True when created."""
    name = config.publication_name
    listed = ", ".join(t.sql_name for t in tables)
    if config.publication_mode == "disabled":
        raise SourceConfigurationError(
            f"publication '{name}' does not exist and 'publication.autocreate.mode' is "
            f"'disabled': create it with CREATE PUBLICATION {quote(name)} FOR TABLE "
            f"{listed}; (or set the mode to 'filtered' for a user that owns the tables)"
        )
    sql = f"CREATE PUBLICATION {quote(name)} FOR TABLE {listed}"
    if not create:
        _check_changeable(conn, tables, sql, name)
        return False
    _catalog_change(conn, sql, name, listed)
    log.info("created publication %s for %s", name, listed)
    return True


def _add_missing_tables(
    conn: Any, config: PostgresSourceConfig, tables: list[PgTable], create: bool
) -> None:
    """Add the ``tables`` the publication lacks (mode ``filtered``; with ``create`` false
    only check that they could be), or say how."""
    name = config.publication_name
    published = {
        (schema, table)
        for schema, table in query(
            conn,
            "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s",
            (name,),
        )
    }
    missing = [t for t in tables if (t.table_id.database, t.table_id.table) not in published]
    if not missing:
        return
    names = ", ".join(t.sql_name for t in missing)
    if config.publication_mode == "disabled":
        raise SourceConfigurationError(
            f"publication '{name}' lacks {names}: run ALTER PUBLICATION {quote(name)} "
            f"ADD TABLE {names};"
        )
    sql = f"ALTER PUBLICATION {quote(name)} ADD TABLE {names}"
    if not create:
        _check_changeable(conn, missing, sql, name)
        return
    _catalog_change(conn, sql, name, names)
    log.info("added %s to publication %s", names, name)


def _check_changeable(conn: Any, tables: list[PgTable], sql: str, name: str) -> None:
    """What :func:`_catalog_change` would refuse, found with a query: a table whose owner
    role the user does not have (superusers have every role)."""
    foreign = [
        t.sql_name
        for t in tables
        if not query(
            conn,
            "SELECT pg_catalog.pg_has_role(relowner, 'USAGE') FROM pg_class "
            "WHERE oid = %s::regclass",
            (t.sql_name,),
        )[0][0]
    ]
    if foreign:
        raise SourceConfigurationError(
            f"cannot create or extend publication '{name}': the user does not own "
            f"{', '.join(foreign)}, and a publication's tables must be owned by the user. Have "
            f"an owner run {sql}; (or CREATE PUBLICATION ... FOR TABLE ...), then start again"
        )


def _catalog_change(conn: Any, sql: str, name: str, tables: str) -> None:
    import psycopg

    try:
        query(conn, sql)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise SourceConfigurationError(
            f"cannot create or extend publication '{name}' ({str(exc).strip()}): a "
            f"publication's tables must be owned by the user. Have an owner run {sql}; (or "
            "CREATE PUBLICATION ... FOR TABLE ...), then start again"
        ) from None


def ensure_slot(conn: Any, config: PostgresSourceConfig) -> SlotState:
    """The stream's slot, created if missing (waits for running transactions to finish:
    that is how PostgreSQL finds a consistent start)."""
    found = slot_state(conn, config)
    if found is not None:
        return found
    log.info(
        "creating replication slot %s (pgoutput); it keeps WAL until the stream commits "
        "batches, and is never dropped by sparkcdc",
        config.slot_name,
    )
    query(
        conn,
        "SELECT pg_catalog.pg_create_logical_replication_slot(%s, 'pgoutput')",
        (config.slot_name,),
    )
    created = slot_state(conn, config)
    assert created is not None
    return created


def slot_state(conn: Any, config: PostgresSourceConfig) -> SlotState | None:
    """The stream's slot, or None; a slot of another plugin or database fails."""
    rows = query(
        conn,
        "SELECT plugin, database, slot_type, confirmed_flush_lsn::text, restart_lsn::text, "
        "coalesce(wal_status, 'reserved') FROM pg_replication_slots WHERE slot_name = %s",
        (config.slot_name,),
    )
    if not rows:
        return None
    plugin, database, kind, confirmed, restart, status = rows[0]
    if kind != "logical" or plugin != "pgoutput" or database != config.database:
        raise SourceConfigurationError(
            f"replication slot '{config.slot_name}' exists but is a {kind} slot of plugin "
            f"'{plugin}' on database '{database}': 'slot.name' must name a pgoutput slot of "
            f"database '{config.database}' used by this stream only; pick another name"
        )
    if status == "lost" or confirmed is None:
        raise lost_log(
            f"replication slot '{config.slot_name}' has lost WAL it needed "
            "(max_slot_wal_keep_size): the stream cannot resume exactly, and the slot must "
            f"be dropped first (SELECT pg_drop_replication_slot('{config.slot_name}'); the "
            "stream makes a new one when it starts)"
        )
    return SlotState(lsn_from_text(confirmed), lsn_from_text(restart), status)


def ensure_readable(conn: Any, config: PostgresSourceConfig, position: LsnPosition) -> None:
    """The slot still has the WAL from ``position`` on (a restart, or verify)."""
    state = slot_state(conn, config)
    if state is None:
        raise lost_log(
            f"replication slot '{config.slot_name}' is gone, and with it the WAL from "
            f"{position.text} on: the stream cannot resume exactly"
        )
    if state.confirmed > position.lsn:
        raise lost_log(
            f"replication slot '{config.slot_name}' has moved to {lsn_to_text(state.confirmed)}, "
            f"past {position.text} where this read starts: the WAL in between is released "
            "(was the slot dropped and made again, advanced by hand, or used by another "
            "stream? For verify, run it again)"
        )


def copy_slot(conn: Any, config: PostgresSourceConfig) -> str:
    """A temporary copy of the stream's slot for one read, gone with the session."""
    import psycopg

    name = f"{config.slot_name}_r{os.getpid()}_{secrets.token_hex(4)}"
    try:
        query(
            conn,
            "SELECT pg_catalog.pg_copy_logical_replication_slot(%s, %s, true)",
            (config.slot_name, name),
        )
    except psycopg.errors.ConfigurationLimitExceeded as exc:
        raise SourceConfigurationError(
            f"no free replication slot for a read ({str(exc).strip()}): every Spark task "
            "reading the WAL holds a temporary copy of the stream's slot. Raise "
            "max_replication_slots above the stream's slots plus the executor cores "
            "(ALTER SYSTEM SET max_replication_slots = ...; restart)"
        ) from None
    return name


def advance(conn: Any, config: PostgresSourceConfig, lsn: int) -> None:
    """Release the WAL before ``lsn`` (transactions committing before it are done). A slot
    already past ``lsn`` is left alone: after a lost log's recovery (docs/design.md, "A
    lost log") the slot was made anew, past the positions of the batches committed before
    it, and PostgreSQL refuses to move a slot back."""
    text = lsn_to_text(lsn)
    query(
        conn,
        "SELECT pg_catalog.pg_replication_slot_advance(slot_name, %s::pg_lsn) "
        "FROM pg_replication_slots WHERE slot_name = %s AND confirmed_flush_lsn < %s::pg_lsn",
        (text, config.slot_name, text),
    )

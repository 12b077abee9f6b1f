"""Up-front checks that the server and the tables are set up for CDC, each with its fix.

Run once by the driver before anything is read, so a misconfigured server fails with one
clear message instead of somewhere inside a Spark task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import (
    REPLICA_IDENTITIES,
    PgTable,
    index_columns,
)
from sparkcdc.core.errors import SchemaError, SourceConfigurationError

#: pg_copy_logical_replication_slot (12), pg_current_snapshot / pg_xact_status (13).
MIN_SERVER_VERSION = 130000


def validate_server(conn: Any, config: PostgresSourceConfig) -> int:
    """The server version number, after checking logical decoding is possible for us."""
    ((version, wal_level, max_slots, used, replication, superuser, encoding),) = query(
        conn,
        "SELECT pg_catalog.current_setting('server_version_num')::int, "
        "pg_catalog.current_setting('wal_level'), "
        "pg_catalog.current_setting('max_replication_slots')::int, "
        "(SELECT pg_catalog.count(*) FROM pg_replication_slots), r.rolreplication, r.rolsuper, "
        "pg_catalog.current_setting('server_encoding') "
        "FROM pg_roles r WHERE r.rolname = current_user",
    )
    if version < MIN_SERVER_VERSION:
        raise SourceConfigurationError(
            f"PostgreSQL {version // 10000} is too old: the postgres-cdc source needs "
            "PostgreSQL 13 or later"
        )
    if wal_level != "logical":
        raise SourceConfigurationError(
            f"wal_level is '{wal_level}': logical decoding needs 'logical'. Run "
            "ALTER SYSTEM SET wal_level = logical; and restart the server"
        )
    if encoding != "UTF8":
        raise SourceConfigurationError(
            f"database '{config.database}' is encoded in {encoding}: pgoutput sends values in "
            "the database's encoding, and the postgres-cdc source reads UTF8 databases only"
        )
    if not (replication or superuser):
        raise SourceConfigurationError(
            f"user '{config.username}' may not use replication slots: run "
            f'ALTER ROLE "{config.username}" REPLICATION;'
        )
    free = max_slots - used
    exists = query(
        conn, "SELECT 1 FROM pg_replication_slots WHERE slot_name = %s", (config.slot_name,)
    )
    needed = 1 if exists else 2  # the stream's own slot, plus one short-lived copy per read
    if free < needed:
        raise SourceConfigurationError(
            f"only {free} of max_replication_slots = {max_slots} are free: the stream needs "
            f"{'its slot and ' if not exists else ''}one more for each concurrent Spark task "
            "reading the log (short-lived copies of the slot). Raise max_replication_slots "
            "(ALTER SYSTEM SET max_replication_slots = ...; restart) or drop unused slots "
            "(SELECT slot_name, active FROM pg_replication_slots)"
        )
    return int(version)


def identity_problem(table: PgTable, upsert: bool, index_columns: Sequence[str] = ()) -> str:
    """Why ``table``'s replica identity cannot be captured in this ``changelog-mode`` (with
    the fix), or "" when it can. ``all`` needs FULL (old rows for before images and
    normalisation); ``upsert`` needs every delete to carry the primary key: DEFAULT, FULL,
    or USING INDEX on exactly the primary key's columns."""
    ident = table.replica_identity
    name = REPLICA_IDENTITIES.get(ident, ident)
    if not upsert:
        if ident == "f":
            return ""
        return (
            f"table {table.table_id} has REPLICA IDENTITY {name}: the WAL then lacks the old "
            "values of updated and deleted rows (and of unchanged TOASTed columns), which the "
            "changelog's before images and the snapshot's normalisation need. Run ALTER TABLE "
            f"{table.sql_name} REPLICA IDENTITY FULL; or capture it with changelog-mode: "
            "upsert (REPLICA IDENTITY DEFAULT is enough there)"
        )
    if ident in ("d", "f"):
        return ""
    if ident == "i" and set(index_columns) == set(table.primary_key):
        return ""
    if ident == "i":
        what = f"USING INDEX on ({', '.join(index_columns)}), not the primary key"
    else:
        what = name
    return (
        f"table {table.table_id} has REPLICA IDENTITY {what}: the WAL's deletes then do not "
        "carry the primary key, which changelog-mode: upsert deletes by. Run ALTER TABLE "
        f"{table.sql_name} REPLICA IDENTITY DEFAULT;"
    )


def validate_tables(conn: Any, tables: Sequence[PgTable], upsert: bool = False) -> None:
    """SELECT on every table; a replica identity the ``changelog-mode`` can capture
    (:func:`identity_problem`); deterministic collations."""
    indexed = [t.oid for t in tables if t.replica_identity == "i"]
    identity_index = index_columns(conn, indexed, "indisreplident")
    for table in tables:
        ((allowed,),) = query(
            conn, "SELECT pg_catalog.has_table_privilege(%s, 'SELECT')", (table.oid,)
        )
        if not allowed:
            raise SourceConfigurationError(
                f"the source user may not read {table.table_id}: run "
                f"GRANT SELECT ON {table.sql_name} TO <user>;"
            )
        problem = identity_problem(table, upsert, identity_index.get(table.oid, ()))
        if problem:
            raise SchemaError(problem)
        non_deterministic = [c.name for c in table.columns if not c.deterministic]
        if non_deterministic:
            raise SchemaError(
                f"table {table.table_id}: column(s) {', '.join(non_deterministic)} use a "
                "nondeterministic collation, under which different values compare equal; "
                "sparkcdc identifies rows by exact values. Use a deterministic collation"
            )

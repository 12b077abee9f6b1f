"""A captured table after a change of its columns that a Relation message described: the
change (wal/column_change.py), the table the stream decodes its later rows with, and the
change as the stream's batch of its own (:func:`column_change_event`).

Columns the change kept keep what the stream knew of them (renamed where renamed); added
columns and columns of a new type are read from the catalog (their type's details), and
must still have the described type there. Added and retyped columns are nullable in the
stream's schema whatever the catalog says now: a NOT NULL set later does not hold for
rows written at the change. The primary key must be the one captured (renamed where its
columns were), as on MySQL/MariaDB.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import PgTable, primary_key, read_comments
from sparkcdc.connectors.postgres.server.types import COLUMNS_QUERY, PgColumn, column_from_row
from sparkcdc.connectors.postgres.wal.column_change import (
    Attribute,
    ColumnsChange,
    Described,
    columns_change,
)
from sparkcdc.connectors.postgres.wal.pgoutput import Relation, lsn_to_text
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.scan import Transaction
from sparkcdc.core.errors import SchemaError
from sparkcdc.snapshot.schema_change import ColumnMoves, SchemaChange

_ATTRIBUTES = """
SELECT a.attnum, a.attname, a.attisdropped, a.atttypid, a.atttypmod,
       a.atthasmissing OR a.atthasdef OR a.attgenerated <> '' OR a.attidentity <> ''
       OR (t.typtype = 'd' AND t.typdefault IS NOT NULL)
FROM pg_attribute a LEFT JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = %s AND a.attnum > 0 ORDER BY a.attnum
"""


def table_after(
    conn: Any, table: PgTable, relation: Relation
) -> tuple[PgTable | None, ColumnsChange]:
    """The table as ``relation`` describes it, or None with the change's ``problem``."""
    if not table.attnums:
        return None, ColumnsChange(
            problem="the checkpoint's description of the table predates column numbers, "
            "which tell a rename from a drop and an add"
        )
    catalog = [
        Attribute(int(n), str(name), bool(dropped), (int(oid), int(mod)), bool(filled))
        for n, name, dropped, oid, mod, filled in query(conn, _ATTRIBUTES, (table.oid,))
    ]
    described = [Described(c.name, (c.type_oid, c.typmod)) for c in relation.columns]
    old = list(zip(table.attnums, table.column_names, _types(table), strict=True))
    change = columns_change(old, described, catalog)
    if change.problem:
        return None, change
    problem = _key_problem(table, change)
    if problem:
        return None, dataclasses.replace(change, problem=problem)
    key = tuple(change.renamed.get(n, n) for n in table.primary_key)
    now = primary_key(conn, table.oid)
    if now != key:
        return None, dataclasses.replace(
            change,
            problem=f"the primary key is ({', '.join(now)}) in the catalog now, not the "
            f"captured ({', '.join(key)})",
        )
    full = {int(row[1]): column_from_row(row) for row in query(conn, COLUMNS_QUERY, ([table.oid],))}
    types = {a.attnum: a.type for a in catalog}
    kept = dict(zip(table.attnums, table.columns, strict=True))
    columns: list[PgColumn] = []
    for number, column in zip(change.attnums, described, strict=True):
        before = kept.get(number)
        if before is not None and column.name not in change.retyped:
            columns.append(dataclasses.replace(before, name=column.name))
            continue
        found = full.get(number)
        if found is None or types.get(number) != column.type or found.name != column.name:
            # changed or dropped again since: the described type itself (its collation
            # the type's default, as the column's own is gone from the catalog)
            found = column_of_type(conn, column.name, *column.type)
        columns.append(dataclasses.replace(found, nullable=column.name not in key))
    after = PgTable(
        table.table_id,
        table.oid,
        tuple(columns),
        key,
        change.renamed.get(table.chunk_key, table.chunk_key),
        relation.replica_identity,
        tuple(c.type for c in described),
        change.attnums,
    )
    if table.comments is not None:  # include-comments.enabled: as the catalog has them now
        after = dataclasses.replace(after, comments=read_comments(conn, [after])[after.oid])
    return after, change


#: :data:`COLUMNS_QUERY` over one made-up attribute of a given type (``%s``: name, type
#: oid, typmod, type oid): what a column of that type reads as.
_TYPE_QUERY = COLUMNS_QUERY.replace(
    "FROM pg_catalog.pg_attribute a",
    "FROM (SELECT 0::oid AS attrelid, 1 AS attnum, %s::name AS attname, false AS attnotnull, "
    "%s::oid AS atttypid, %s::int4 AS atttypmod, t.typcollation AS attcollation, "
    "false AS attisdropped FROM pg_catalog.pg_type t WHERE t.oid = %s) a",
).replace(
    "WHERE a.attrelid = ANY (%s::pg_catalog.oid[]) AND a.attnum > 0 AND NOT a.attisdropped",
    "",
)


def column_of_type(conn: Any, name: str, type_oid: int, typmod: int) -> PgColumn:
    """A column ``name`` of type (``type_oid``, ``typmod``), as discovery would read it."""
    rows = query(conn, _TYPE_QUERY, (name, type_oid, typmod, type_oid))
    if not rows:
        raise SchemaError(f"column '{name}' has type {type_oid}, which the catalog lacks")
    return column_from_row(rows[0])


def _types(table: PgTable) -> tuple[tuple[int, int], ...]:
    """The columns' types as Relation messages give them (unknown: never equal to one)."""
    return table.column_types or tuple((-1, -1) for _ in table.columns)


def _key_problem(table: PgTable, change: ColumnsChange) -> str:
    gone = [n for n in (*table.primary_key, table.chunk_key) if n in change.dropped]
    if gone:
        return f"it drops column '{gone[0]}' of the primary key (or chunk key)"
    retyped = [n for n in table.primary_key if change.renamed.get(n, n) in change.retyped]
    if retyped:
        return f"it changes the type of primary key column '{retyped[0]}'"
    return ""


def column_change_event(
    conn: Any,
    tables: Mapping[int, PgTable],
    boundary: LsnPosition,
    tx: Transaction,
    relations: list[Relation],
) -> SchemaChange[LsnPosition, PgTable]:
    """The change of a table's columns described in ``tx``: a batch of its own right
    before ``tx`` (whose rows have the new columns), so ``after`` is ``boundary``."""
    table = tables[relations[0].oid]
    new, change = table_after(conn, table, relations[-1])
    statement = (
        f"columns of {table.table_id} changed: {change.describe()} (described before "
        f"the rows of transaction {tx.xid}, commit {lsn_to_text(tx.commit_lsn)})"
    )
    problem = change.problem
    if len({r.columns for r in relations}) > 1:
        problem = "the transaction changed its rows both before and after the change"
    if problem:
        statement = (
            f"columns of {table.table_id} changed (transaction {tx.xid}, commit "
            f"{lsn_to_text(tx.commit_lsn)}; now "
            f"{', '.join(c.name for c in relations[-1].columns)})"
        )
    return SchemaChange(
        table.table_id,
        boundary,
        boundary,
        statement,
        None if problem else new,
        problem,
        moves=ColumnMoves(dict(change.renamed), change.dropped),
        rewritten=change.rewritten,
    )

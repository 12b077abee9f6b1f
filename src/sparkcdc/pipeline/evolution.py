"""What a target becomes when its source table's columns change, per
``schema.change.behavior`` (Flink CDC 3.x names; docs/schema-evolution.md).

The source puts a table's new columns into the offset of the change's own batch, with the
columns it renamed and dropped (snapshot/schema_change.py); the runner turns them into the
target's new schema here, then has the sink apply it before any row of the new shape is
written. Every row is then conformed to the target schema by name: columns the rows lack
are NULL.

* ``lenient`` (the default): nothing in the target is ever lost. A new column is added,
  nullable; a dropped one stays and becomes nullable (later rows write NULL into it); a
  renamed one is both (the new name added, the old kept); a changed type widens where every
  value of the old and the new type fits (pipeline/widening.py), else the pipeline stops
  with the fix.
* ``evolve``: the target mirrors the table. New columns are added at their position
  (nullable: rows before the change have none), dropped ones dropped, renamed ones renamed
  with their values, types widened as under ``lenient``. A sink that cannot apply it stops
  the pipeline.
* ``try_evolve``: as ``evolve``; where the sink cannot apply a change, the runner takes that
  change as ``ignore`` does and goes on (pipeline/schema_follow.py).
* ``ignore``: the target keeps its columns; new columns are not written, dropped ones get
  NULL. A type change whose values the old type cannot hold stops the pipeline.
* ``exception``: any change stops the pipeline, naming the statement.

Change types a sink's ``exclude.schema.changes`` names (pipeline/change_types.py) are taken
as ``ignore`` takes them, whatever the behaviour.

The result depends only on the target's schema before, the table's columns after and the
change's renames and drops, so a replayed batch, or a restart that has lost the runner's
state, computes the same target.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import (
    ADD_COLUMN,
    ALTER_COLUMN_TYPE,
    DROP_COLUMN,
    RENAME_COLUMN,
)
from sparkcdc.snapshot.schema_change import NO_MOVES, ColumnMoves

#: ``schema.change.behavior`` values, in Flink CDC's order.
BEHAVIORS = ("exception", "evolve", "try_evolve", "lenient", "ignore")
#: The behaviours whose targets mirror their tables (renames and drops applied).
MIRRORING = ("evolve", "try_evolve")


@dataclass(frozen=True)
class Evolution:
    """A target after a change: its schema, and what the sink renames and drops on the way
    (the rest, added columns, relaxed NOT NULLs and wider types, the schema says)."""

    schema: Any
    moves: ColumnMoves


def evolved_target(
    behavior: str,
    target: Any,
    columns: Any,
    table: TableId,
    statement: str,
    moves: ColumnMoves = NO_MOVES,
    excluded: Collection[str] = (),
) -> Any:
    """The target schema (a StructType) after the table's columns became ``columns``."""
    return evolution(behavior, target, columns, table, statement, moves, excluded).schema


def evolution(
    behavior: str,
    target: Any,
    columns: Any,
    table: TableId,
    statement: str,
    moves: ColumnMoves = NO_MOVES,
    excluded: Collection[str] = (),
) -> Evolution:
    """The target after the table's columns became ``columns`` through a change that
    renamed and dropped ``moves``; change types in ``excluded`` are taken as ``ignore``
    takes them."""
    if behavior == "exception":
        if _same(target, columns):
            return Evolution(target, ColumnMoves())
        found = change_types(target, columns, moves) - set(excluded)
        if found:
            raise SchemaError(
                f"schema change of {table} ({_short(statement)}) and 'schema.change.behavior' "
                "is 'exception': the pipeline stops before writing rows of the new shape. Set "
                "it to 'lenient', 'evolve' or 'ignore' to follow the change, then run the "
                "pipeline again"
            )
        behavior = "ignore"
    return _evolve(behavior, target, columns, table, statement, moves, frozenset(excluded))


def change_types(target: Any, columns: Any, moves: ColumnMoves) -> set[str]:
    """The change types (Flink CDC's names) that lead from ``target`` to ``columns``."""
    from sparkcdc.pipeline.widening import widen

    have = {f.name: f for f in target.fields}
    new = {f.name: f for f in columns.fields}
    renamed = {old: to for old, to in moves.renamed.items() if old in have and to in new}
    found = set()
    if renamed:
        found.add(RENAME_COLUMN)
    if any(n not in new and n not in renamed for n in have) or set(moves.dropped) & set(have):
        found.add(DROP_COLUMN)
    if any(n not in have and n not in renamed.values() for n in new):
        found.add(ADD_COLUMN)
    for name, field in new.items():
        old = have.get(name) or have.get(next((o for o, t in renamed.items() if t == name), ""))
        if old is not None and widen(old.dataType, field.dataType) != old.dataType:
            found.add(ALTER_COLUMN_TYPE)
    return found


def _evolve(
    behavior: str,
    target: Any,
    columns: Any,
    table: TableId,
    statement: str,
    moves: ColumnMoves,
    excluded: frozenset[str],
) -> Evolution:
    from pyspark.sql.types import StructField, StructType

    from sparkcdc.pipeline.widening import widen

    mirror = behavior in MIRRORING
    drops = mirror and DROP_COLUMN not in excluded
    renames = mirror and RENAME_COLUMN not in excluded
    keep_types = behavior == "ignore" or ALTER_COLUMN_TYPE in excluded
    new = {f.name: f for f in columns.fields}
    have = set(target.fieldNames())
    dropped = set(moves.dropped) if drops else set()
    renamed: dict[str, str] = {}
    gone: list[str] = []
    fields: list[Any] = []
    for field in target.fields:
        name = field.name
        now = None if name in dropped else new.get(name)
        to = moves.renamed.get(name)
        if now is None and renames and to is not None and to in new and to not in have:
            renamed[name], name, now = to, to, new[to]
        if now is None:
            if name in dropped:
                gone.append(name)  # dropped (a column dropped and added again: both)
            else:  # kept, NULL from now on
                fields.append(StructField(name, field.dataType, True, field.metadata))
            continue
        kind = field.dataType
        if now.dataType != kind:
            wider = widen(kind, now.dataType)
            if wider is None or (keep_types and wider != kind):
                raise _no_room(table, statement, name, kind, now.dataType, behavior)
            kind = wider
        fields.append(StructField(name, kind, field.nullable or now.nullable, field.metadata))
    if behavior != "ignore":
        arrived = {to: old for old, to in moves.renamed.items()}
        placed = {f.name for f in fields}
        for index, column in enumerate(columns.fields):
            kind = RENAME_COLUMN if column.name in arrived else ADD_COLUMN
            if column.name in placed or kind in excluded:
                continue
            added = StructField(column.name, column.dataType, True, column.metadata)
            fields.insert(_position(fields, columns, index) if mirror else len(fields), added)
            placed.add(column.name)
    return Evolution(StructType(fields), ColumnMoves(renamed, tuple(gone)))


def _position(fields: list[Any], columns: Any, index: int) -> int:
    """Where the table's column ``index`` goes among ``fields``: right after the nearest
    column before it in the table that the target has (first when there is none)."""
    names = [f.name for f in fields]
    for before in reversed(columns.fields[:index]):
        if before.name in names:
            return names.index(before.name) + 1
    return 0


def _same(a: Any, b: Any) -> bool:
    return [(f.name, f.dataType) for f in a.fields] == [(f.name, f.dataType) for f in b.fields]


def _no_room(
    table: TableId, statement: str, column: str, old: Any, new: Any, behavior: str
) -> SchemaError:
    return SchemaError(
        f"schema change of {table} ({_short(statement)}): column {column} of the target is "
        f"{old.simpleString()} and the table's values are now {new.simpleString()}, which "
        f"'{behavior}' cannot write without changing values. Re-snapshot the table into a "
        "new target (a new checkpoint and 'table-name'), or change the target column by "
        "hand to a type that holds both and run the pipeline again"
    )


def _short(statement: str) -> str:
    text = " ".join(statement.split())
    return text if len(text) <= 160 else text[:157] + "..."

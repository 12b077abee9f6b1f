"""What a target becomes when its source table's columns change, per
``schema.change.behavior`` (Flink CDC 3.x names; docs/schema-evolution.md).

The source puts a table's new columns into the offset of the change's own batch
(snapshot/schema_change.py); the runner turns them into the target's new schema here,
then has the sink apply it before any row of the new shape is written. Every row is then
conformed to the target schema by name: columns the rows lack are NULL.

* ``lenient`` (the default): nothing in the target is ever lost. A new column is added,
  nullable; a dropped one stays and becomes nullable (later rows write NULL into it); a
  renamed one is both (the new name added, the old kept); a changed type widens where every
  value of the old and the new type fits (pipeline/widening.py), else the pipeline stops
  with the fix.
* ``ignore``: the target keeps its columns; new columns are not written, dropped ones get
  NULL. A type change whose values the old type cannot hold stops the pipeline.
* ``exception``: any change stops the pipeline, naming the statement.

The result depends only on the target's schema before and the table's columns after, so a
replayed batch, or a restart that has lost the runner's state, computes the same target.
"""

from __future__ import annotations

from typing import Any

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId

#: ``schema.change.behavior`` values, in Flink CDC's order.
BEHAVIORS = ("exception", "evolve", "try_evolve", "lenient", "ignore")
#: What this version follows; the others are refused when the pipeline file is validated.
FOLLOWED = ("exception", "lenient", "ignore")


def evolved_target(behavior: str, target: Any, columns: Any, table: TableId, statement: str) -> Any:
    """The target schema (a StructType) after the table's columns became ``columns``."""
    from pyspark.sql.types import StructField, StructType

    from sparkcdc.pipeline.widening import widen

    if behavior == "exception":
        if _same(target, columns):
            return target
        raise SchemaError(
            f"schema change of {table} ({_short(statement)}) and 'schema.change.behavior' is "
            "'exception': the pipeline stops before writing rows of the new shape. Set it to "
            "'lenient' or 'ignore' to follow the change, then run the pipeline again"
        )
    new = {f.name: f for f in columns.fields}
    fields: list[Any] = []
    for field in target.fields:
        now = new.get(field.name)
        if now is None:  # dropped (or renamed away): kept, NULL from now on
            fields.append(StructField(field.name, field.dataType, True, field.metadata))
            continue
        kind = field.dataType
        if now.dataType != kind:
            wider = widen(kind, now.dataType)
            if behavior == "ignore" and wider != kind:
                raise _no_room(table, statement, field.name, kind, now.dataType, behavior)
            if wider is None:
                raise _no_room(table, statement, field.name, kind, now.dataType, behavior)
            kind = wider
        nullable = field.nullable or now.nullable
        fields.append(StructField(field.name, kind, nullable, field.metadata))
    if behavior == "lenient":
        known = {f.name for f in target.fields}
        fields += [
            StructField(f.name, f.dataType, True, f.metadata)
            for f in columns.fields
            if f.name not in known
        ]
    return StructType(fields)


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

"""Column changes of tables whose target is shaped by a ``transform`` or merged by a
``route`` (docs/schema-evolution.md, "Shaped and merged targets").

The table's new columns go through its transform again (Spark analyses the rule on them:
a ``*`` projection passes a new column on, an explicit one does not, and an expression or
filter naming a column that is gone stops the pipeline, naming the rule and the
statement), and the target takes the new shape the way Flink CDC merges the schemas of
routed tables: columns are added (nullable) and widened, never dropped or renamed, since
the target's other tables, or the rows written before, may still hold values there.
So ``evolve`` and ``try_evolve`` act as ``lenient`` for these targets; ``ignore`` keeps
the target's columns; ``exception`` stops at any change the shaped rows show.

Like a one-table target's (pipeline/schema_follow.py), the target's schema is kept in the
run state, under the target's name, so a restart writes into it the same way; it depends
only on the target before and the shaped columns after, so a replay computes it again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sparkcdc.core.errors import SchemaError
from sparkcdc.pipeline.evolution import (
    MIRRORING,
    Evolution,
    change_types,
    evolution,
    evolved_target,
)
from sparkcdc.pipeline.targets import (
    ShapedSchema,
    Target,
    TargetSource,
    check_distinct_keys,
    shaped_source,
)
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.schema_change import ColumnMoves


def shaped_behavior(behavior: str) -> str:
    """The behaviour a shaped or merged target evolves with under ``behavior``."""
    return "lenient" if behavior in ("lenient", *MIRRORING) else behavior


def reshaped(
    source: TargetSource, table: SinkTable, shaped: ShapedSchema, statement: str
) -> TargetSource:
    """``source`` after its table's columns became ``table``'s: shaped again by its
    transform, still routed as before, with the key it had."""
    try:
        again = shaped_source(table, source.transform, shaped)
    except PipelineFileError as exc:
        raise _stop(source, statement, str(exc)) from exc
    if again.key != source.key:
        raise _stop(
            source,
            statement,
            f"its rows' key would become ({', '.join(again.key)}) where the target's is "
            f"({', '.join(source.key)})",
        )
    return dataclasses.replace(again, route=source.route)


def shaped_evolution(
    behavior: str,
    target: Target,
    before: TargetSource,
    after: TargetSource,
    statement: str,
    moves: ColumnMoves,
    excluded: frozenset[str],
) -> Evolution:
    """The target's schema once ``before``'s rows come shaped as ``after``'s; it renames
    and drops nothing."""
    table = before.table.source
    if behavior == "exception":
        found = change_types(before.schema, after.schema, moves) - excluded
        if found:  # raises, naming the statement
            evolution("exception", before.schema, after.schema, table, statement, moves)
        behavior = "ignore"
    change = evolution(
        shaped_behavior(behavior),
        target.table.schema,
        after.schema,
        table,
        statement,
        moves,
        excluded,
    )
    return Evolution(change.schema, ColumnMoves())


def with_source(target: Target, before: TargetSource, after: TargetSource, schema: Any) -> Target:
    """``target`` with ``after`` in place of ``before`` and the schema ``schema``."""
    sources = tuple(after if s is before else s for s in target.sources)
    return Target(dataclasses.replace(target.table, schema=schema), sources)


def restored_shaped(target: Target, stored: Any, behavior: str) -> Target:
    """A shaped or merged target planned at a restart, with the schema earlier changes
    gave it (``stored``), evolved the rest of the way by its tables' shaped columns."""
    kind = "ignore" if behavior in ("exception", "ignore") else "lenient"
    schema = stored
    for source in target.sources:
        schema = evolved_target(kind, schema, source.schema, source.table.source, "restart")
    return Target(dataclasses.replace(target.table, schema=schema), target.sources)


def joined_target(
    existing: Target, planned: Target, behavior: str, namespace: str | None
) -> Target:
    """``existing`` once the tables of ``planned``, created while the pipeline runs and
    routed to the same target, join it: their keys must fit, and the target takes their
    shaped columns as a change of a table already in it would (``ignore`` keeps its
    columns; ``exception`` stops where they would change it)."""
    name = existing.table.source
    created = ", ".join(str(s.table.source) for s in planned.sources)
    if planned.table.key != existing.table.key:
        raise SchemaError(
            f"{created} was created while the pipeline runs and goes into {name}, whose key "
            f"is ({', '.join(existing.table.key)}); its rows' key would be "
            f"({', '.join(planned.table.key)}). Give it the target's key with a transform"
        )
    partitions = planned.table.partition_keys
    if partitions and partitions != existing.table.partition_keys:
        raise SchemaError(
            f"{created} was created while the pipeline runs and goes into {name} with other "
            "partition-keys than the target's"
        )
    sources = (*existing.sources, *planned.sources)
    check_distinct_keys(name, sources, existing.table.key, namespace)
    kind = "ignore" if behavior == "ignore" else "lenient"
    schema = existing.table.schema
    for source in planned.sources:
        schema = evolved_target(kind, schema, source.schema, source.table.source, "CREATE TABLE")
    if behavior == "exception" and schema != existing.table.schema:
        raise SchemaError(
            f"{created} was created while the pipeline runs and goes into {name}, whose "
            "columns it would change, and 'schema.change.behavior' is 'exception'. Set it to "
            "'lenient' or 'ignore' to take it in, then run the pipeline again"
        )
    return Target(dataclasses.replace(existing.table, schema=schema), sources)


def _stop(source: TargetSource, statement: str, reason: str) -> SchemaError:
    text = " ".join(statement.split())[:160]
    return SchemaError(
        f"schema change of {source.table.source} ({text}): {reason}. Adapt the pipeline's "
        "transform to the table's new columns and run it again"
    )

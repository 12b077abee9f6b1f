"""A running pipeline following its tables' column changes (docs/schema-evolution.md).

The source makes every change a batch of its own whose end offset holds the table's new
columns (snapshot/schema_change.py). Before the runner writes any batch, it compares the
offset's columns with the ones it knows: where they differ, the target's new schema comes
from ``schema.change.behavior`` (pipeline/evolution.py), the sink applies it
(:meth:`Sink.evolve`), and from then on the table's rows are conformed to the target by
name. So every row before the change is written before it is applied, and every row after
it finds the target ready (Flink CDC's flush-before-apply).

Targets whose schema differs from their table's columns are kept in the run state, so a
restart conforms rows to them too; a replay recomputes the same schema (evolution depends
only on the target before and the columns after).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.evolution import evolved_target
from sparkcdc.pipeline.run_state import RunState
from sparkcdc.pipeline.source_probe import SourceProbe
from sparkcdc.pipeline.targets import Target, TargetSource
from sparkcdc.sinks.base import Sink, SinkTable

log = logging.getLogger(__name__)


def plain_target(table: SinkTable, schema: Any = None) -> Target:
    """``table`` written to a target of its own, whose schema is ``schema`` (its own
    columns when None or equal: then rows need no conforming)."""
    if schema is None or _fields(schema) == _fields(table.schema):
        return Target(table, (TargetSource(table, None, None, table.schema, table.key),))
    target = dataclasses.replace(table, schema=schema)
    return Target(target, (TargetSource(table, None, None, table.schema, table.key),))


def is_plain(target: Target) -> bool:
    """Written from one table without transform or route: a schema change can be followed."""
    (only, *rest) = target.sources
    return not rest and only.transform is None and only.route is None


def restore_targets(targets: Sequence[Target], state: RunState, behavior: str) -> list[Target]:
    """The planned targets with the schemas earlier schema changes gave them (a restart:
    the tables have their columns at the checkpoint, which the stored schema was made
    for, unless the run state is older than the checkpoint's last batch; then the
    behaviour evolves it the rest of the way). A behaviour switched to ``exception``
    since keeps the stored schema as it is: it was applied already."""
    from pyspark.sql.types import StructType

    behavior = "ignore" if behavior == "exception" else behavior
    restored = []
    for target in targets:
        source = target.sources[0]
        stored = state.targets.get(source.table.source)
        if stored is None or not is_plain(target):
            restored.append(target)
            continue
        table = source.table
        schema = evolved_target(
            behavior, StructType.fromJson(_json(stored)), table.schema, table.source, "restart"
        )
        restored.append(plain_target(table, schema))
    return restored


def follow_changes(
    spark: Any,
    offset: str,
    tables: list[SinkTable],
    targets: list[Target],
    probe: SourceProbe,
    sink: Sink,
    behavior: str,
    applied: Callable[[TableId, str | None], None],
) -> None:
    """Apply the schema changes ``offset`` shows to the sink, updating ``tables`` (the
    columns rows are read with) and ``targets`` (what they are written as) in place;
    ``applied(table, target schema JSON or None)`` is told of each (the run state)."""
    changed = probe.table_columns(offset)
    if not changed:
        return
    for i, table in enumerate(tables):
        found = changed.get(table.source)
        if found is None or _fields(found[0]) == _fields(table.schema):
            continue
        columns, statement = found
        t = next(n for n, g in enumerate(targets) if table.source in _sources(g))
        target = targets[t]
        if not is_plain(target):
            raise SchemaError(
                f"schema change of {table.source} ({' '.join(statement.split())[:160]}): the "
                "table is shaped by a transform or merged by a route, and changes of such "
                "tables are not followed yet. Adapt the rules to the new columns and start "
                "from a new checkpoint"
            )
        schema = evolved_target(behavior, target.table.schema, columns, table.source, statement)
        new_table = dataclasses.replace(table, schema=columns)
        new_target = plain_target(new_table, schema)
        if _fields(schema) != _fields(target.table.schema):
            sink.evolve(spark, new_target.table, target.table)
        log.info(
            "schema change of %s (%s) followed (%s): target columns %s",
            table.source,
            " ".join(statement.split())[:160],
            behavior,
            ", ".join(f.name for f in schema.fields),
        )
        tables[i] = new_table
        targets[t] = new_target
        applied(table.source, None if new_target.as_captured else schema.json())


def _sources(target: Target) -> set[Any]:
    return {s.table.source for s in target.sources}


def _fields(schema: Any) -> list[tuple[str, Any, bool]]:
    return [(f.name, f.dataType, f.nullable) for f in schema.fields]


def _json(text: str) -> Any:
    import json

    return json.loads(text)

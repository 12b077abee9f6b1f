"""A running pipeline following its tables' column changes (docs/schema-evolution.md).

The source makes every change a batch of its own whose end offset holds the table's new
columns (snapshot/schema_change.py). Before the runner writes any batch, it compares the
offset's columns with the ones it knows: where they differ, the target's new schema comes
from ``schema.change.behavior`` (pipeline/evolution.py), the sink applies it
(:meth:`Sink.evolve`), and from then on the table's rows are conformed to the target by
name. So every row before the change is written before it is applied, and every row after
it finds the target ready (Flink CDC's flush-before-apply). Targets shaped by a transform
or merged by a route take the change as pipeline/shaped_evolution.py says.

Targets whose schema differs from their table's columns are kept in the run state, so a
restart conforms rows to them too; a replay recomputes the same schema (evolution depends
only on the target before, the columns after and the change's renames and drops). Under
``evolve`` / ``try_evolve`` every evolved target is kept there: the run state is saved
with the change's batch, before Spark commits it, so after a crash in between the target
may already have lost a column the checkpoint's columns still have.

``try_evolve``: where the sink cannot apply a change (it raised), the change is taken as
``ignore`` takes it, from the target as it was, and the pipeline goes on with a warning.
A sink that applied part of the change before failing (a MySQL target's DDL is not
transactional; Delta commits each ALTER) may leave the target with more than the runner
writes into: an added column stays NULL, and a renamed one makes the next write fail,
naming the column, rather than write into the wrong place.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.comments import Comments
from sparkcdc.core.crash_points import SCHEMA_ALTERED, SCHEMA_APPLIED, crash_point
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import ColumnMoves
from sparkcdc.pipeline.evolution import MIRRORING, change_types, evolution, evolved_target
from sparkcdc.pipeline.run_state import RunState
from sparkcdc.pipeline.shaped_evolution import (
    reshaped,
    restored_shaped,
    shaped_behavior,
    shaped_evolution,
    with_source,
)
from sparkcdc.pipeline.source_probe import OffsetColumns
from sparkcdc.pipeline.targets import ShapedSchema, Target, TargetSource
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
    """Written from one table without transform or route: the target follows the table's
    columns per behaviour (others: pipeline/shaped_evolution.py)."""
    (only, *rest) = target.sources
    return not rest and only.transform is None and only.route is None


def restore_targets(targets: Sequence[Target], state: RunState, behavior: str) -> list[Target]:
    """The planned targets with the schemas earlier schema changes gave them (a restart:
    the tables have their columns at the checkpoint, which the stored schema was made
    for, unless the run state is older than the checkpoint's last batch; then the
    behaviour evolves it the rest of the way). A behaviour switched to ``exception``
    since keeps the stored schema as it is: it was applied already, and so does
    ``evolve``: its stored target can be ahead of the checkpoint (see the module's
    docstring), and the replayed change evolves it again, changing nothing."""
    from pyspark.sql.types import StructType

    restored = []
    for target in targets:
        source = target.sources[0]
        stored = state.targets.get(target.table.source)
        if stored is None:
            restored.append(target)
            continue
        if not is_plain(target):
            schema = StructType.fromJson(_json(stored))
            restored.append(restored_shaped(target, schema, behavior))
            continue
        table = source.table
        kind = "ignore" if behavior in ("exception", *MIRRORING) else behavior
        schema = evolved_target(
            kind, StructType.fromJson(_json(stored)), table.schema, table.source, "restart"
        )
        restored.append(plain_target(table, schema))
    return restored


@dataclass(frozen=True)
class SchemaFollower:
    """What following a change of a table's columns needs (pipeline/applier.py makes one
    per batch): the sink and its declaration, the behaviour and the excluded change
    types, a transform's output columns (``shaped``, pipeline/shaping.py), and the run
    state's write-ahead: the sink applies each change under ``applying(target, its schema
    JSON after the change, moves)`` (a crash meanwhile leaves a record a restart
    finishes), and ``applied(table, target, target schema JSON or None)`` is told of it
    after."""

    spark: Any
    sink: Sink
    behavior: str
    excluded: frozenset[str]
    shaped: ShapedSchema
    applying: Callable[[TableId, str, ColumnMoves], AbstractContextManager[None]]
    applied: Callable[[TableId, TableId, str | None], None]

    def follow(
        self, table: SinkTable, target: Target, found: OffsetColumns
    ) -> tuple[SinkTable, Target]:
        """``table`` with the columns ``found`` (the columns its rows are read with from
        now on), and its target after the change, applied to the sink."""
        new_table = dataclasses.replace(table, schema=found.columns, comments=found.comments)
        if not is_plain(target):
            return new_table, self._follow_shaped(target, new_table, found)
        columns, statement, moves = found.columns, found.statement, found.moves
        if not statement and self.behavior in MIRRORING:
            # no change in the log explains the difference: the table changed between the
            # pipeline's start (which planned its target) and the stream's first offset,
            # before any row was written; the target mirrors the table as the stream has it
            gone = tuple(n for n in table.columns if n not in columns.fieldNames())
            moves = ColumnMoves(dropped=gone)
        before = target.table.schema
        excluded = self._excluded(before, columns, moves, table.source, statement)
        change = evolution(self.behavior, before, columns, table.source, statement, moves, excluded)
        schema = change.schema
        new_target = plain_target(new_table, schema)
        if _fields(schema) != _fields(before) or change.moves != ColumnMoves():
            try:
                with self.applying(table.source, schema.json(), change.moves):
                    self.sink.evolve(self.spark, new_target.table, target.table, change.moves)
                crash_point(SCHEMA_ALTERED)
            except Exception as exc:
                if self.behavior not in MIRRORING:
                    raise
                schema = self._failed(exc, before, columns, table.source, statement)
                new_target = plain_target(new_table, schema)
        log.info(
            "schema change of %s (%s) followed (%s): target columns %s",
            table.source,
            _short(statement),
            self.behavior,
            ", ".join(f.name for f in schema.fields),
        )
        keep = self.behavior in MIRRORING or not new_target.as_captured
        self.applied(table.source, table.source, schema.json() if keep else None)
        crash_point(SCHEMA_APPLIED)  # the fault suite's kill (core/crash_points.py)
        return new_table, new_target

    def _follow_shaped(self, target: Target, table: SinkTable, found: OffsetColumns) -> Target:
        """``target`` (shaped by a transform or merged by a route) once ``table``'s rows
        come with its new columns (pipeline/shaped_evolution.py)."""
        statement = found.statement
        before = next(s for s in target.sources if s.table.source == table.source)
        after = reshaped(before, table, self.shaped, statement)
        excluded = self._excluded(
            target.table.schema, after.schema, found.moves, table.source, statement
        )
        change = shaped_evolution(
            self.behavior, target, before, after, statement, found.moves, excluded
        )
        schema = change.schema
        if _fields(schema) != _fields(target.table.schema):
            # a column the change adds keeps its comment (a target's own are kept)
            old = target.table.comments
            added = table.comments.only(n for n in schema.fieldNames() if not old.column(n))
            comments = Comments(old.table, (*old.columns, *added.columns))
            new_table = dataclasses.replace(target.table, schema=schema, comments=comments)
            try:
                with self.applying(target.table.source, schema.json(), change.moves):
                    self.sink.evolve(self.spark, new_table, target.table, change.moves)
                crash_point(SCHEMA_ALTERED)
            except Exception as exc:
                if self.behavior not in MIRRORING:
                    raise
                schema = self._failed(
                    exc, target.table.schema, after.schema, table.source, statement
                )
        log.info(
            "schema change of %s (%s) followed (%s) into %s: target columns %s",
            table.source,
            _short(statement),
            shaped_behavior(self.behavior),
            target.table.source,
            ", ".join(f.name for f in schema.fields),
        )
        self.applied(table.source, target.table.source, schema.json())
        return with_source(target, before, after, schema)

    def _excluded(
        self, before: Any, columns: Any, moves: ColumnMoves, table: TableId, statement: str
    ) -> frozenset[str]:
        """The change types taken as ``ignore`` takes them: those the sink block excludes,
        and, where the behaviour goes on past what the sink cannot apply, those the sink
        does not declare. ``evolve`` stops at those (``exception`` stops at any change)."""
        if self.behavior == "exception":
            return self.excluded
        refused = self.sink.capabilities.refused(change_types(before, columns, moves))
        refused = [k for k in refused if k not in self.excluded]
        if not refused:
            return self.excluded
        reason = f"the {type(self.sink).__name__} does not apply {', '.join(refused)}"
        if self.behavior == "evolve":
            raise _evolve_stops(table, statement, reason)
        if self.behavior == "try_evolve":
            log.warning(
                "schema change of %s (%s): %s; 'try_evolve' goes on without them",
                table,
                _short(statement),
                reason,
            )
        return self.excluded | frozenset(refused)

    def _failed(
        self, exc: Exception, before: Any, columns: Any, table: TableId, statement: str
    ) -> Any:
        """The target schema after the sink failed to apply a change it declares:
        ``evolve`` stops with the sink's reason and the ways on; ``try_evolve`` goes on as
        ``ignore`` would (Flink CDC's ``try_evolve`` tolerates a failed apply)."""
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        if self.behavior == "evolve":
            raise _evolve_stops(table, statement, reason) from exc
        log.warning(
            "schema change of %s (%s): the sink could not apply it (%s); 'try_evolve' goes "
            "on with the target as it was (new columns are not written, columns the table "
            "lost get NULL)",
            table,
            _short(statement),
            reason,
        )
        return evolved_target("ignore", before, columns, table, statement)


def _evolve_stops(table: TableId, statement: str, reason: str) -> SchemaError:
    return SchemaError(
        f"schema change of {table} ({_short(statement)}): the sink could not apply it "
        f"({reason}). Make the target able to take it and run the pipeline again, or set "
        "'schema.change.behavior' to 'try_evolve' (go on with the target as it is) or "
        "'lenient'"
    )


def _short(statement: str) -> str:
    return " ".join(statement.split())[:160]


def _fields(schema: Any) -> list[tuple[str, Any, bool]]:
    return [(f.name, f.dataType, f.nullable) for f in schema.fields]


def _json(text: str) -> Any:
    import json

    return json.loads(text)

"""The one path a batch's table events take to the targets (docs/design.md, "Table events").

The source records every table event in the end offset of a batch of its own;
``SourceOffset.table_events`` decodes them once per batch (core/table_events.py). The
runner hands them here in two steps around the batch's split: tables created and column
changes before it (rows are read with the tables' columns), truncates, drops and lost logs
after it, before the batch is written (the sink applies them with the batch: a Delta
commit under its transaction id, a statement in the JDBC batch's transaction). So every
row before an event is written before it is applied, and every row after it finds the
target ready (Flink CDC's flush-before-apply).

Each event is taken as ``schema.change.behavior`` says, as far as the sink declares it
applies the event's type (``Sink.capabilities``; a sink block's ``exclude.schema.changes``
makes a type ``ignore``):

========================  ==========================================================
behaviour                 truncate / drop (column changes: pipeline/schema_follow.py)
========================  ==========================================================
``evolve``                applied; a sink that does not apply the type stops the run
``try_evolve``            applied where the sink does; elsewhere kept, with a warning
``lenient`` / ``ignore``  not applied: the target keeps its rows, with a warning
``exception``             the run stops, naming the statement
========================  ==========================================================

A lost log's recovery empties each table's target whatever the behaviour (it was asked
for), where the sink applies truncates. A target that keeps rows its table no longer has
is released (``Sink.release``): later snapshot rows into it are merged, never appended
next to a key it keeps. A target that also holds other tables' rows (a route) is neither
emptied nor dropped. Applying an event twice (a replayed batch) changes nothing: the
event's batch has no rows, so the replay finds the target as the first run left it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.errors import SchemaError, SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import (
    AlterColumnsEvent,
    ColumnMoves,
    CreateTableEvent,
    DropTableEvent,
    LostLogEvent,
    TableEvent,
    TruncateTableEvent,
)
from sparkcdc.pipeline.definition import PipelineDefinition
from sparkcdc.pipeline.evolution import MIRRORING
from sparkcdc.pipeline.keyless_targets import refuse_keyless_upserts
from sparkcdc.pipeline.metrics import PipelineMetrics
from sparkcdc.pipeline.plan import targets_of
from sparkcdc.pipeline.run_state import save_run_state
from sparkcdc.pipeline.schema_follow import SchemaFollower
from sparkcdc.pipeline.shaped_evolution import joined_target
from sparkcdc.pipeline.shaping import shaped_schema
from sparkcdc.pipeline.source_probe import OffsetColumns, SourceProbe
from sparkcdc.pipeline.targets import Target, target_holding
from sparkcdc.sinks.base import Sink, SinkTable, shared_targets
from sparkcdc.sinks.write_plan import WritePlan

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Captured:
    """What a run reads and writes: the captured tables (the columns their rows are read
    with) and the targets (what the rows are written as)."""

    tables: list[SinkTable]
    targets: list[Target]

    def without(self, gone: Sequence[TableId]) -> Captured:
        """The run without the tables ``gone`` and the targets only they fill."""
        return Captured(
            [t for t in self.tables if t.source not in gone],
            [t for t in self.targets if not {s.table.source for s in t.sources} <= set(gone)],
        )


class TableEventApplier:
    """Applies table events to a run's sink (see the module's docstring)."""

    def __init__(
        self,
        spark: Any,
        sink: Sink,
        definition: PipelineDefinition,
        probe: SourceProbe,
        metrics: PipelineMetrics,
    ) -> None:
        self.spark = spark
        self.sink = sink
        self.definition = definition
        self.probe = probe
        self.metrics = metrics
        self.behavior = definition.settings.schema_change_behavior
        self.excluded = definition.excluded_changes

    # -- before the split: created tables, column changes -----------------------------
    def before_split(
        self, events: Sequence[TableEvent], captured: Captured, envelope: bool
    ) -> Captured:
        """``captured`` after the batch's created tables (``envelope``: the stream carries
        several tables; a one-table stream takes new tables at its next start) and column
        changes."""
        created = [e for e in events if isinstance(e, CreateTableEvent)]
        if created and envelope:
            captured = self._create(created, captured)
        changes = [e for e in events if isinstance(e, AlterColumnsEvent)]
        return self._alter(changes, captured) if changes else captured

    def _create(self, events: Sequence[CreateTableEvent], captured: Captured) -> Captured:
        """Tables created while the pipeline runs (MySQL, with
        ``scan.newly-added-table.enabled``): their targets are planned with the transform
        and route rules and opened before the batch that has their first rows is split,
        so none of their rows is left out of it."""
        added = []
        for event in events:
            if not event.columns:
                raise SparkCdcError(
                    f"the source captures {event.table}, which the pipeline did not know "
                    "when it started, without its columns in the offset: restart the pipeline"
                )
            added.append(self.probe.sink_table(event.table, event.columns))
        planned = targets_of(self.definition, self.spark, added)
        refuse_keyless_upserts(self.sink.capabilities.write_mode, planned)
        everything = self._joined(captured.targets, planned)
        shared = shared_targets(self.sink, [t.table for t in everything])
        if shared:
            target, sources = next(iter(shared.items()))
            raise SparkCdcError(
                f"{', '.join(str(t.source) for t in added)} was created while the pipeline "
                f"runs and goes into the target {target} of {', '.join(map(str, sources))} "
                "through the sink's 'table-name'; their changes would collide. Merge them "
                "on purpose with a route block, or give each table its own target"
            )
        self.sink.open(self.spark, [t.table for t in everything])
        self.metrics.add_tables([t.source for t in added])
        log.info(
            "capturing %s (created while the pipeline runs) into %s",
            ", ".join(str(t.source) for t in added),
            ", ".join(str(self.sink.target_of(t.table) or t.table.source) for t in planned),
        )
        return Captured([*captured.tables, *added], everything)

    def _joined(self, targets: list[Target], planned: list[Target]) -> list[Target]:
        """The run's targets with ``planned`` (of tables created while it runs): a target
        a route already merges others into takes the new tables in, evolved for their
        columns (pipeline/shaped_evolution.py); the others are new."""
        everything = list(targets)
        at = {t.table.source: i for i, t in enumerate(everything)}
        for target in planned:
            i = at.get(target.table.source)
            if i is None:
                everything.append(target)
                continue
            before = everything[i]
            joined = joined_target(before, target, self.behavior, self.definition.namespace)
            if joined.table.schema != before.table.schema:
                self.sink.evolve(self.spark, joined.table, before.table, ColumnMoves())
            for source in target.sources:
                self.metrics.schema_changed(
                    source.table.source, joined.table.source, joined.table.schema.json()
                )
            everything[i] = joined
        return everything

    def _alter(self, events: Sequence[AlterColumnsEvent], captured: Captured) -> Captured:
        """The tables whose columns at the batch's end differ from the ones the run reads
        them with, each followed into its target (pipeline/schema_follow.py)."""
        follower = SchemaFollower(
            self.spark,
            self.sink,
            self.behavior,
            self.excluded,
            shaped_schema(self.spark, self.definition.namespace),
            self._schema_changing,
            self._schema_changed,
        )
        tables, targets = list(captured.tables), list(captured.targets)
        by_table = {e.table: e for e in events}
        for i, table in enumerate(tables):
            event = by_table.get(table.source)
            if event is None:
                continue
            changed = self.probe.sink_table(table.source, event.columns)
            columns = changed.schema
            if _fields(columns) == _fields(table.schema):
                continue
            t = next(n for n, g in enumerate(targets) if target_holds(g, table.source))
            found = OffsetColumns(columns, event.statement, event.moves, changed.comments)
            tables[i], targets[t] = follower.follow(table, targets[t], found)
        return Captured(tables, targets)

    @contextmanager
    def _schema_changing(self, target: TableId, schema: str, moves: ColumnMoves) -> Iterator[None]:
        """While the sink applies a schema change to ``target``: written ahead into the
        run state (``RunState.pending``), so a crash meanwhile leaves the restart what to
        finish, renames and drops included. A change the sink refuses (an error, not a
        crash) is taken back out: the behaviour decides what follows."""
        checkpoint = self.definition.settings.checkpoint
        self.metrics.schema_changing(target, schema, moves.to_json())
        save_run_state(checkpoint, self.metrics.state)
        try:
            yield
        except BaseException:
            self.metrics.schema_refused(target)
            save_run_state(checkpoint, self.metrics.state)
            raise

    def _schema_changed(self, table: TableId, target: TableId, schema: str | None) -> None:
        """A schema change reached ``target``: recorded, and the run state saved at once.
        The target has the change now, committed batch or not; a restart whose state were
        behind it would plan the target without it (and finish that evolution by adding
        back columns the change renamed or dropped)."""
        self.metrics.schema_changed(table, target, schema)
        save_run_state(self.definition.settings.checkpoint, self.metrics.state)

    # -- before the write: truncates, drops, lost logs --------------------------------
    def before_write(
        self, events: Sequence[TableEvent], captured: Captured, batch: WritePlan
    ) -> tuple[Captured, list[TableId]]:
        """``captured`` after the batch's truncates, drops and lost logs, applied to the
        targets of ``batch`` before it is written; and the tables whose targets the sink
        dropped (they leave the run: one created again gets a new target)."""
        gone: list[TableId] = []
        for event in events:
            target = target_holding(captured.targets, event.table)
            if target is None:  # a table the pipeline does not write (filtered out)
                if isinstance(event, DropTableEvent):
                    self.metrics.table_dropped(event.table, False)
                continue
            if isinstance(event, TruncateTableEvent):
                self._truncate(event, target, batch)
            elif isinstance(event, DropTableEvent):
                if self._drop(event, target, batch):
                    gone.append(event.table)
            elif isinstance(event, LostLogEvent):
                self._recover(event, target, batch)
        return (captured.without(gone) if gone else captured), gone

    def _truncate(self, event: TruncateTableEvent, target: Target, batch: WritePlan) -> None:
        what = f"TRUNCATE of {event.table} ({event.short})"
        behavior = self._behavior(event)
        if behavior == "exception":
            raise SchemaError(
                f"{what} under 'schema.change.behavior: exception'. Choose another behaviour "
                "('evolve' empties the target, 'lenient' keeps its rows) or exclude the "
                "change type (exclude.schema.changes: [truncate.table])"
            )
        if behavior not in MIRRORING:
            log.warning(
                "%s not applied ('%s'): the target keeps the rows the table no longer has "
                "('evolve' applies truncates)",
                what,
                behavior,
            )
            self.sink.release(self.spark, target.table)
            return
        refused = self._empty(event, target, batch)
        if refused is not None:
            if behavior == "evolve":
                raise SchemaError(
                    f"{what}: the sink could not apply it ({refused}). Set "
                    "'schema.change.behavior' to 'try_evolve' (go on, the target keeping its "
                    "rows) or 'lenient', or exclude the change type "
                    "(exclude.schema.changes: [truncate.table])"
                )
            log.warning(
                "%s: the sink could not apply it (%s); 'try_evolve' goes on with the "
                "target's rows kept",
                what,
                refused,
            )
            self.sink.release(self.spark, target.table)
            return
        log.info("%s applied: its target is empty", what)
        self.metrics.truncate_applied(event.table)

    def _drop(self, event: DropTableEvent, target: Target, batch: WritePlan) -> bool:
        """Whether the sink dropped the target."""
        what = f"DROP of {event.table} ({event.short})"
        behavior = self._behavior(event)
        if behavior == "exception":
            raise SchemaError(
                f"{what} under 'schema.change.behavior: exception'. Choose another behaviour "
                "('evolve' drops the target, 'lenient' keeps it) or exclude the change type "
                "(exclude.schema.changes: [drop.table])"
            )
        others = _others(target, event.table)
        if others:
            log.warning(
                "%s: its target %s also holds the rows of %s (a route) and is kept, with "
                "the rows %s had",
                what,
                target.table.source,
                others,
                event.table,
            )
        elif behavior not in MIRRORING:
            log.warning(
                "%s not applied ('%s'): the target keeps its rows ('evolve' drops it)",
                what,
                behavior,
            )
        else:
            refused = self._apply(
                event, lambda: self.sink.drop_table(self.spark, target.table, batch)
            )
            if refused is None:
                log.info("%s applied: its target is dropped", what)
                self.metrics.table_dropped(event.table, True)
                return True
            if behavior == "evolve":
                raise SchemaError(
                    f"{what}: the sink could not apply it ({refused}). Set "
                    "'schema.change.behavior' to 'try_evolve' (go on, the target kept) or "
                    "'lenient', or exclude the change type (exclude.schema.changes: "
                    "[drop.table])"
                )
            log.warning(
                "%s: the sink could not apply it (%s); 'try_evolve' goes on with the target kept",
                what,
                refused,
            )
        self.sink.release(self.spark, target.table)
        self.metrics.table_dropped(event.table, False)
        return False

    def _recover(self, event: LostLogEvent, target: Target, batch: WritePlan) -> None:
        """Empty the target whatever the behaviour: the recovery was asked for, and the
        table's rows all come again in the batches after this one."""
        refused = self._empty(event, target, batch)
        if refused is not None:
            log.warning(
                "the target of %s cannot be emptied (%s): it keeps its rows. The rows read "
                "again replace every key the table has; rows deleted while the log was lost "
                "stay (sparkcdc verify reports them). %s",
                event.table,
                refused,
                event.statement,
            )
            self.sink.release(self.spark, target.table)
            return
        log.info(
            "the target of %s is emptied, its rows are read again: %s",
            event.table,
            event.statement,
        )
        self.metrics.truncate_applied(event.table)

    def _empty(self, event: TableEvent, target: Target, batch: WritePlan) -> str | None:
        """Empty ``event.table``'s target before ``batch`` is written (``Sink.truncate``);
        why it could not be, or None when it is empty. A route's target that also holds
        other tables' rows is not emptied: theirs would go too."""
        others = _others(target, event.table)
        if others:
            return (
                f"the target {target.table.source} also holds the rows of {others} (a "
                "route): emptying it would remove theirs"
            )
        return self._apply(event, lambda: self.sink.truncate(self.spark, target.table, batch))

    def _apply(self, event: TableEvent, apply: Any) -> str | None:
        """Apply ``event`` to the sink where it declares its type; why not, or None.
        A declared apply that fails says why too (``try_evolve`` tolerates that, as Flink
        CDC's does)."""
        capabilities = self.sink.capabilities
        if not capabilities.accepts(event.kind):
            return f"the {type(self.sink).__name__} does not apply {event.kind}"
        try:
            apply()
        except Exception as exc:
            if self.behavior not in MIRRORING and not isinstance(event, LostLogEvent):
                raise
            return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        return None

    def _behavior(self, event: TableEvent) -> str:
        """The behaviour for ``event``: ``ignore`` where the sink block excludes its type."""
        return "ignore" if event.kind in self.excluded else self.behavior


def target_holds(target: Target, table: TableId) -> bool:
    return any(s.table.source == table for s in target.sources)


def _others(target: Target, table: TableId) -> str:
    """The other tables whose rows ``target`` holds (a route), as text ("" for none)."""
    return ", ".join(str(s.table.source) for s in target.sources if s.table.source != table)


def _fields(schema: Any) -> list[tuple[str, Any, bool]]:
    return [(f.name, f.dataType, f.nullable) for f in schema.fields]


__all__ = ["Captured", "TableEventApplier", "dataclasses"]

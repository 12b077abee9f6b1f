"""What the applier does with a batch's truncates, drops and lost logs under each
``schema.change.behavior``, decided from the sink's declared capabilities
(pipeline/applier.py). No Spark: the sinks' own truncates and drops run in
tests/conformance/test_sinks.py and tests/integration/test_pipeline_random_ddl.py, the lost
log's in tests/faults/test_lost_log.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import (
    DROP_TABLE,
    TRUNCATE_TABLE,
    DropTableEvent,
    LostLogEvent,
    TableEvent,
    TruncateTableEvent,
)
from sparkcdc.pipeline.applier import Captured, TableEventApplier
from sparkcdc.pipeline.definition import PipelineDefinition, load_pipeline
from sparkcdc.pipeline.metrics import PipelineMetrics
from sparkcdc.pipeline.run_state import RunState
from sparkcdc.pipeline.targets import Target, TargetSource
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.capabilities import ALL_CHANGES, EXACTLY_ONCE, UPSERT, SinkCapabilities
from sparkcdc.sinks.write_plan import WritePlan

T, U = TableId("app", "t"), TableId("app", "u")
PIPELINE = """\
source:
  type: mysql
  hostname: 127.0.0.1
  username: cdc
  password: x
  tables: app.\\.*
sink:
  type: console
pipeline:
  name: p
  checkpoint: ckpt
"""


class RecordingSink(Sink):
    """Records what it is asked to apply; declares the types ``applies`` and fails every
    apply with ``fails`` (a declared apply that goes wrong)."""

    def __init__(self, applies: frozenset[str] = ALL_CHANGES, fails: str | None = None) -> None:
        self.applies = applies
        self.fails = fails
        self.emptied: list[TableId] = []
        self.dropped: list[TableId] = []
        self.released: list[TableId] = []

    @property
    def capabilities(self) -> SinkCapabilities:
        return SinkCapabilities(self.applies, UPSERT, EXACTLY_ONCE, verifiable=False)

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        del spark, tables

    def write(self, batch: WritePlan) -> None:
        del batch

    def truncate(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        if self.fails:
            raise RuntimeError(self.fails)
        self.emptied.append(table.source)

    def drop_table(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        if self.fails:
            raise RuntimeError(self.fails)
        self.dropped.append(table.source)

    def release(self, spark: Any, table: SinkTable) -> None:
        self.released.append(table.source)


def target(*tables: TableId) -> Target:
    sources = tuple(
        TargetSource(SinkTable(t, None, ("id",)), None, None, None, ("id",)) for t in tables
    )
    return Target(SinkTable(tables[0], None, ("id",)), sources)


@pytest.fixture
def definition(tmp_path: Path) -> PipelineDefinition:
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    return load_pipeline(path)


def apply(
    definition: PipelineDefinition,
    behavior: str,
    event: TableEvent,
    targets: list[Target],
    sink: RecordingSink,
    excluded: frozenset[str] = frozenset(),
) -> list[TableId]:
    """The tables whose targets the sink dropped."""
    settings = dataclasses.replace(definition.settings, schema_change_behavior=behavior)
    definition = dataclasses.replace(definition, settings=settings, excluded_changes=excluded)
    metrics = PipelineMetrics("p", [T, U], RunState(), {})
    applier = TableEventApplier(None, sink, definition, None, metrics)  # type: ignore[arg-type]
    batch: Any = None  # passed through to the sink only
    captured = Captured([s.table for t in targets for s in t.sources], targets)
    after, gone = applier.before_write([event], captured, batch)
    assert [t.source for t in after.tables] == [
        s.table.source for t in targets for s in t.sources if s.table.source not in gone
    ]
    return gone


TRUNCATE = TruncateTableEvent(T, "TRUNCATE t")
DROP = DropTableEvent(T, "DROP TABLE t")
LOST = LostLogEvent(T, "lost (s1)")


def test_a_truncate_under_evolve_empties_the_target_other_behaviours_keep_it(
    definition: PipelineDefinition,
) -> None:
    for behavior in ("evolve", "try_evolve"):
        sink = RecordingSink()
        apply(definition, behavior, TRUNCATE, [target(T), target(U)], sink)
        assert sink.emptied == [T] and sink.released == []
    for behavior in ("lenient", "ignore"):
        sink = RecordingSink()
        apply(definition, behavior, TRUNCATE, [target(T)], sink)
        assert sink.emptied == [] and sink.released == [T]
    with pytest.raises(SchemaError, match=r"TRUNCATE of app\.t \(TRUNCATE t\).*exception"):
        apply(definition, "exception", TRUNCATE, [target(T)], RecordingSink())
    for behavior in ("exception", "evolve"):  # an excluded type is taken as 'ignore'
        sink = RecordingSink()
        apply(definition, behavior, TRUNCATE, [target(T)], sink, frozenset({TRUNCATE_TABLE}))
        assert sink.emptied == [] and sink.released == [T]
    sink = RecordingSink()
    apply(definition, "evolve", TRUNCATE, [target(U)], sink)  # not written: nothing
    assert sink.emptied == sink.released == []


def test_a_truncate_the_sink_does_not_declare_stops_evolve_and_is_kept_by_try_evolve(
    definition: PipelineDefinition,
) -> None:
    for targets, sink, reason in (
        (
            [target(T)],
            RecordingSink(ALL_CHANGES - {TRUNCATE_TABLE}),
            "the RecordingSink does not apply truncate.table",
        ),
        ([target(U, T)], RecordingSink(), r"also holds the rows of app\.u"),  # a route
        ([target(T)], RecordingSink(fails="disk full"), "disk full"),  # a declared apply failed
    ):
        with pytest.raises(SchemaError, match=f"could not apply it .*{reason}.*'try_evolve'"):
            apply(definition, "evolve", TRUNCATE, targets, sink)
        apply(definition, "try_evolve", TRUNCATE, targets, sink)
        assert sink.emptied == [] and sink.released == [targets[0].table.source]


def test_a_drop_under_evolve_drops_the_target_and_the_table_leaves_the_run(
    definition: PipelineDefinition,
) -> None:
    for behavior in ("evolve", "try_evolve"):
        sink = RecordingSink()
        assert apply(definition, behavior, DROP, [target(T), target(U)], sink) == [T]
        assert sink.dropped == [T] and sink.released == []
    for behavior in ("lenient", "ignore"):
        sink = RecordingSink()
        assert apply(definition, behavior, DROP, [target(T)], sink) == []
        assert sink.dropped == [] and sink.released == [T]
    with pytest.raises(SchemaError, match=r"DROP of app\.t \(DROP TABLE t\).*exception"):
        apply(definition, "exception", DROP, [target(T)], RecordingSink())
    for behavior in ("exception", "evolve"):
        sink = RecordingSink()
        assert apply(definition, behavior, DROP, [target(T)], sink, frozenset({DROP_TABLE})) == []
        assert sink.dropped == [] and sink.released == [T]


def test_a_routed_target_is_kept_and_an_undeclared_drop_stops_evolve_only(
    definition: PipelineDefinition,
) -> None:
    sink = RecordingSink()
    assert apply(definition, "evolve", DROP, [target(U, T)], sink) == []  # holds u's rows
    assert sink.dropped == [] and sink.released == [U]
    refusing = RecordingSink(ALL_CHANGES - {DROP_TABLE})
    with pytest.raises(SchemaError, match=r"could not apply it .*drop\.table.*'try_evolve'"):
        apply(definition, "evolve", DROP, [target(T)], refusing)
    assert apply(definition, "try_evolve", DROP, [target(T)], refusing) == []
    assert refusing.dropped == [] and refusing.released == [T]


def test_a_lost_log_empties_the_target_whatever_the_behaviour(
    definition: PipelineDefinition,
) -> None:
    for behavior in ("exception", "lenient", "evolve"):
        sink = RecordingSink()
        apply(definition, behavior, LOST, [target(T), target(U)], sink)
        assert sink.emptied == [T] and sink.released == []
    for targets, keeping in (
        ([target(T)], RecordingSink(ALL_CHANGES - {TRUNCATE_TABLE})),  # e.g. a Kafka upsert topic
        ([target(T)], RecordingSink(fails="disk full")),
        ([target(T, U)], RecordingSink()),  # a route: the target holds both tables' rows
    ):
        apply(definition, "lenient", LOST, targets, keeping)
        assert keeping.emptied == [] and keeping.released == [T]

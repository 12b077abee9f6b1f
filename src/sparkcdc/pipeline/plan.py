"""What a pipeline would capture and where it would write it, checked before anything runs.

``prepare`` plans a run this way before it opens the sink; ``sparkcdc validate`` plans one
and stops there, so everything a run would refuse up front (a server not set up for CDC, a
transform expression Spark rejects, two tables into one target, a sink option's entry that
names no target) it refuses too, without writing anything anywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.core.errors import OptionError
from sparkcdc.pipeline.checkpoint import last_committed_offset
from sparkcdc.pipeline.definition import PipelineDefinition
from sparkcdc.pipeline.keyless_targets import refuse_keyless_upserts
from sparkcdc.pipeline.named_tables import check_named_tables, created_later
from sparkcdc.pipeline.run_state import RunState, load_run_state
from sparkcdc.pipeline.schema_follow import restore_targets
from sparkcdc.pipeline.shaping import shaped_schema
from sparkcdc.pipeline.source_probe import SourceProbe
from sparkcdc.pipeline.tables import captured_tables
from sparkcdc.pipeline.targets import Target, plan_targets
from sparkcdc.sinks.base import Sink, SinkTable, shared_targets
from sparkcdc.sinks.registry import make_sink


@dataclass(frozen=True)
class Plan:
    """A run's tables and targets, as planned from the source and the checkpoint."""

    #: The matching tables with the columns the source has now.
    now: list[SinkTable]
    #: The same with the columns they had at the checkpoint (where the query continues).
    tables: list[SinkTable]
    targets: list[Target]
    probe: SourceProbe
    sink: Sink
    #: The SparkSession the transforms were analysed in (None: none was needed).
    spark: Any
    #: The checkpoint's run state the targets were restored from.
    state: RunState


def plan(
    definition: PipelineDefinition,
    spark: Callable[[], Any],
    pipeline_id: str | None,
    *,
    inspect_only: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Plan:
    """Validate the source server and discover its tables, then apply the
    transform and route rules (Spark analyses the transforms' expressions: ``spark()`` is
    called once the source passed, so a bad server fails before a JVM starts) and refuse
    targets that two tables would share. Discovery makes what capture needs (a
    PostgreSQL slot and publication) unless ``inspect_only``, which writes nothing.
    ``progress`` hears each step as it begins (the commands print them: start-up is slow)."""
    say = progress or (lambda _: None)
    say(f"source: connecting to {source_address(definition)} and finding the tables")
    handle = definition.connector.handle(definition.source_config)
    try:
        now = captured_tables(handle, inspect_only=inspect_only)
    except Exception:
        handle.close()
        raise
    probe = SourceProbe(handle)  # the run's one handle on its source
    try:
        names = ", ".join(str(t.source) for t in now[:5]) + (", ..." if len(now) > 5 else "")
        say(f"source: {len(now)} table{'' if len(now) == 1 else 's'} match: {names}")
        tables = tables_at_checkpoint(now, definition.settings.checkpoint, probe)
        session = spark()
    except BaseException:
        probe.close()
        raise
    sink = make_sink(
        definition.sink_type,
        definition.sink_options,
        definition.path.parent,
        pipeline_id=pipeline_id,
    )
    targets = targets_of(definition, session, tables)
    refuse_keyless_upserts(sink.capabilities.write_mode, targets)
    state = load_run_state(definition.settings.checkpoint)
    targets = restore_targets(targets, state, definition.settings.schema_change_behavior)
    config = definition.source_config
    check_named_tables(
        definition.sink_type,
        sink.named_tables(),
        targets,
        created_later(config.newly_added_tables, config.tables, definition.routes),
        {*state.totals, *state.targets},
    )
    shared = shared_targets(sink, [t.table for t in targets])
    if shared:
        target, sources = next(iter(shared.items()))
        raise OptionError(
            f"sink: option 'table-name' writes {', '.join(str(s) for s in sources)} into one "
            f"target ({target}); their changes would collide (keys of different tables "
            "overwrite each other, or a batch is skipped as a replay). Give each table its own "
            "target with the {database} and {table} placeholders, or merge tables on purpose "
            "with a route block (docs/pipelines.md)"
        )
    return Plan(now, tables, targets, probe, sink, session, state)


def source_address(definition: PipelineDefinition) -> str:
    """``host:port`` of the source server, for progress lines (no credentials)."""
    config = definition.source_config
    host, port = getattr(config, "hostname", "?"), getattr(config, "port", "?")
    return f"{definition.source_type} {host}:{port}"


def targets_of(definition: PipelineDefinition, spark: Any, tables: list[SinkTable]) -> list[Target]:
    """The targets the pipeline's transform and route rules make of ``tables`` (``spark``
    is used only where a transform rule applies)."""
    namespace = definition.namespace
    return plan_targets(
        tables, definition.routes, definition.transforms, shaped_schema(spark, namespace), namespace
    )


def tables_at_checkpoint(
    tables: list[SinkTable], checkpoint: Path, probe: SourceProbe
) -> list[SinkTable]:
    """The captured tables with the columns they had at the checkpoint's last committed
    offset (where the query continues), for connectors that keep them in the offset: the
    targets were evolved up to there, and later changes are applied as their batches come."""
    committed = last_committed_offset(checkpoint)
    if committed is None:
        return tables
    at = probe.table_columns(committed)
    return [
        dataclasses.replace(t, schema=at[t.source].columns) if t.source in at else t for t in tables
    ]

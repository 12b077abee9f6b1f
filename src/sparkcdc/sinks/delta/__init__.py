"""Delta Lake sink: each captured table into its own Delta table, exactly once."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.capabilities import (
    ALL_CHANGES,
    APPEND,
    EXACTLY_ONCE,
    NO_TRUNCATE,
    UPSERT,
    SinkCapabilities,
)
from sparkcdc.sinks.delta.config import SPECS, DeltaSinkConfig


def capabilities(config: DeltaSinkConfig) -> SinkCapabilities:
    """Every table event; a history target (``changelog-mode: append``) no truncate, which
    would rewrite its history. Exactly once (Delta's transaction ids and the pipeline's own
    commits, sinks/delta/sink.py); ``verify`` reads a history replayed by version."""
    upsert = config.changelog_mode == "upsert"
    return SinkCapabilities(
        applies=ALL_CHANGES if upsert else NO_TRUNCATE,
        write_mode=UPSERT if upsert else APPEND,
        delivery=EXACTLY_ONCE,
        verifiable=True,
        needs_before_images=not upsert,
        keeps_comments=True,
    )


def _create(config: DeltaSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.delta.sink import DeltaSink

    return DeltaSink(config.resolved(base_dir), pipeline_id)


SINK = SinkType(
    name="delta",
    parse=DeltaSinkConfig.from_options,
    create=_create,
    capabilities=capabilities,
    specs=SPECS,
)

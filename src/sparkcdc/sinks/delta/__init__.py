"""Delta Lake sink: each captured table into its own Delta table, exactly once."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.delta.config import SPECS, DeltaSinkConfig


def _create(config: DeltaSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.delta.sink import DeltaSink

    return DeltaSink(config.resolved(base_dir), pipeline_id)


SINK = SinkType(name="delta", parse=DeltaSinkConfig.from_options, create=_create, specs=SPECS)

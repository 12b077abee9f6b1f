"""Console sink: every change printed in Flink's print format, for trying things out."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.console.config import SPECS, ConsoleSinkConfig


def _create(config: ConsoleSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.console.sink import ConsoleSink

    return ConsoleSink(config)


SINK = SinkType(name="console", parse=ConsoleSinkConfig.from_options, create=_create, specs=SPECS)

"""Console sink: every change printed in Flink's print format, for trying things out."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.capabilities import ALL_CHANGES, APPEND, AT_LEAST_ONCE, SinkCapabilities
from sparkcdc.sinks.console.config import SPECS, ConsoleSinkConfig


def capabilities(config: ConsoleSinkConfig) -> SinkCapabilities:
    """Every event is printed, and every change in order (a history), again when Spark
    replays a batch; nothing to read back."""
    del config
    return SinkCapabilities(
        applies=ALL_CHANGES, write_mode=APPEND, delivery=AT_LEAST_ONCE, verifiable=False
    )


def _create(config: ConsoleSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.console.sink import ConsoleSink

    return ConsoleSink(config)


SINK = SinkType(
    name="console",
    parse=ConsoleSinkConfig.from_options,
    create=_create,
    capabilities=capabilities,
    specs=SPECS,
)

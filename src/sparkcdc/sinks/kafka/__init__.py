"""Kafka pipeline sink: each captured table's changes as messages, at-least-once."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.kafka.config import SPECS, KafkaSinkConfig


def _create(config: KafkaSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.kafka.sink import KafkaSink

    return KafkaSink(config)


SINK = SinkType(name="kafka", parse=KafkaSinkConfig.from_options, create=_create, specs=SPECS)

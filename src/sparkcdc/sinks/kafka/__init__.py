"""Kafka pipeline sink: each captured table's changes as messages, at-least-once."""

from __future__ import annotations

from pathlib import Path

from sparkcdc.core.table_events import TRUNCATE_TABLE
from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.capabilities import (
    ALL_CHANGES,
    APPEND,
    AT_LEAST_ONCE,
    UPSERT,
    SinkCapabilities,
)
from sparkcdc.sinks.kafka.config import SPECS, KafkaSinkConfig


def capabilities(config: KafkaSinkConfig) -> SinkCapabilities:
    """Column changes need nothing (records carry their own columns), a drop neither (a
    topic is a history); a truncate only debezium-json can say (its ``t`` message). An
    ``upsert`` topic holds the last record per key, the others every change. At least
    once: Kafka has no idempotent replay of a batch. Not readable by ``verify``."""
    truncates = config.format == "debezium-json"
    return SinkCapabilities(
        applies=ALL_CHANGES if truncates else ALL_CHANGES - {TRUNCATE_TABLE},
        write_mode=UPSERT if config.format == "upsert" else APPEND,
        delivery=AT_LEAST_ONCE,
        verifiable=False,
        needs_before_images=config.format != "upsert",
    )


def _create(config: KafkaSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.kafka.sink import KafkaSink

    return KafkaSink(config)


SINK = SinkType(
    name="kafka",
    parse=KafkaSinkConfig.from_options,
    create=_create,
    capabilities=capabilities,
    specs=SPECS,
)

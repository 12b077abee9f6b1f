"""JDBC sink for PostgreSQL and MySQL/MariaDB targets (see docs/sinks-jdbc.md).

Batched upserts and deletes, one target transaction per micro-batch that also records the
batch id, so replays change nothing. ``config`` holds the options, ``dialects`` what
differs between the targets, ``sink`` the algorithm.
"""

from __future__ import annotations

from pathlib import Path

from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.capabilities import ALL_CHANGES, EXACTLY_ONCE, UPSERT, SinkCapabilities
from sparkcdc.sinks.jdbc.config import SPECS, JdbcSinkConfig


def capabilities(config: JdbcSinkConfig) -> SinkCapabilities:
    """Every table event, applied with the batch's transaction (PostgreSQL's DDL is
    transactional, MySQL's commits at once); upserts by key, exactly once (the offsets row
    is written in the batch's transaction); ``verify`` reads a target in one consistent
    transaction."""
    del config
    return SinkCapabilities(
        applies=ALL_CHANGES,
        write_mode=UPSERT,
        delivery=EXACTLY_ONCE,
        verifiable=True,
        keeps_comments=True,
    )


def _create(config: JdbcSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.jdbc.sink import JdbcSink

    return JdbcSink(config, pipeline=pipeline_id)


SINK = SinkType(
    name="jdbc",
    parse=JdbcSinkConfig.from_options,
    create=_create,
    capabilities=capabilities,
    specs=SPECS,
)

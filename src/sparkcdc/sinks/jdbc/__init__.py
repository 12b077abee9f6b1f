"""JDBC sink for PostgreSQL and MySQL/MariaDB targets (see docs/sinks-jdbc.md).

Batched upserts and deletes, one target transaction per micro-batch that also records the
batch id, so replays change nothing. ``config`` holds the options, ``dialects`` what
differs between the targets, ``sink`` the algorithm.
"""

from __future__ import annotations

from pathlib import Path

from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.jdbc.config import SPECS, JdbcSinkConfig


def _create(config: JdbcSinkConfig, base_dir: Path | None, pipeline_id: str | None) -> Sink:
    from sparkcdc.sinks.jdbc.sink import JdbcSink

    return JdbcSink(config, pipeline=pipeline_id)


SINK = SinkType(name="jdbc", parse=JdbcSinkConfig.from_options, create=_create, specs=SPECS)

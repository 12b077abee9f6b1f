"""Sink types by name: option validation (offline) and construction."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from sparkcdc.core.errors import OptionError
from sparkcdc.sinks.base import Sink

SINK_TYPES = ("delta", "jdbc", "console", "kafka")


def validate_sink_options(kind: str, options: Mapping[str, str]) -> object:
    """Parse a sink's options; raises OptionError naming the option and the valid values."""
    if kind == "delta":
        from sparkcdc.sinks.delta.config import DeltaSinkConfig

        return DeltaSinkConfig.from_options(options)
    if kind == "console":
        from sparkcdc.sinks.console.config import ConsoleSinkConfig

        return ConsoleSinkConfig.from_options(options)
    if kind == "jdbc":
        from sparkcdc.sinks.jdbc.config import JdbcSinkConfig

        return JdbcSinkConfig.from_options(options)
    if kind == "kafka":
        from sparkcdc.sinks.kafka.config import KafkaSinkConfig

        return KafkaSinkConfig.from_options(options)
    raise OptionError(f"sink: invalid type '{kind}'. Valid values: {', '.join(SINK_TYPES)}")


def make_sink(
    kind: str,
    options: Mapping[str, str],
    base_dir: Path | None = None,
    pipeline_id: str | None = None,
) -> Sink:
    """A sink of type ``kind``; relative paths in its options resolve against ``base_dir``
    (the pipeline file's folder). ``pipeline_id`` (name and query id, see MicroBatch) lets a
    sink that keeps per-pipeline bookkeeping find it before the first batch (``verify``)."""
    config = validate_sink_options(kind, options)
    if kind == "delta":
        from sparkcdc.sinks.delta.config import DeltaSinkConfig
        from sparkcdc.sinks.delta.sink import DeltaSink

        assert isinstance(config, DeltaSinkConfig)
        return DeltaSink(config.resolved(base_dir))
    if kind == "console":
        from sparkcdc.sinks.console.config import ConsoleSinkConfig
        from sparkcdc.sinks.console.sink import ConsoleSink

        assert isinstance(config, ConsoleSinkConfig)
        return ConsoleSink(config)
    if kind == "jdbc":
        from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
        from sparkcdc.sinks.jdbc.sink import JdbcSink

        assert isinstance(config, JdbcSinkConfig)
        return JdbcSink(config, pipeline=pipeline_id)
    from sparkcdc.sinks.kafka.config import KafkaSinkConfig
    from sparkcdc.sinks.kafka.sink import KafkaSink

    assert isinstance(config, KafkaSinkConfig)
    return KafkaSink(config)

"""Kafka pipeline sink: each captured table's changes as changelog-json, debezium-json or
upsert messages, one topic per table (a pattern) or one topic for all.

Messages are keyed by the primary key JSON and produced in ``_commit_version`` order per
key (see :mod:`sparkcdc.spark.kafka.sink`). Kafka has no idempotent replay of a batch, so
this sink is **at-least-once**, unlike the pipeline's exactly-once sinks: a batch Spark
re-runs after a crash is produced again. Upsert readers are unaffected (a duplicate of a
key's last row normalises to nothing); changelog readers must tolerate duplicates.
Schema changes are not applied (messages carry the row as it is).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import OptionSpec, parse_options
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import MicroBatch, Sink, SinkTable

FORMATS = ("changelog-json", "debezium-json", "upsert")

SPECS = (
    OptionSpec(
        "properties.bootstrap.servers",
        required=True,
        hint="Kafka brokers, host:port[,...]",
        doc="Kafka brokers, `host:port[,...]`",
    ),
    OptionSpec(
        "value.format",
        choices=FORMATS,
        default="debezium-json",
        doc="message format: "
        + ", ".join(f"`{f}`" for f in FORMATS)
        + " (Flink CDC's Kafka sink defaults to `debezium-json`)",
    ),
    OptionSpec("topic", default=None, doc="one topic for every table (instead of the pattern)"),
    OptionSpec(
        "topic-pattern",
        default="{database}.{table}",
        doc="topic per table, with `{database}` and `{table}` placeholders",
    ),
    OptionSpec(
        "properties.",
        prefix=True,
        doc="Kafka producer settings, e.g. `properties.acks`",
    ),
)


@dataclass(frozen=True)
class KafkaSinkConfig:
    bootstrap_servers: str
    format: str
    topic: str | None
    topic_pattern: str
    producer: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KafkaSinkConfig:
        opts = parse_options(options, SPECS, context="kafka sink")
        pattern = str(opts["topic-pattern"])
        try:
            pattern.format(database="d", table="t")
        except (KeyError, IndexError, ValueError) as exc:
            raise OptionError(
                f"kafka sink: option 'topic-pattern' has invalid value '{pattern}'; expected "
                "a name with only {database} and {table} placeholders"
            ) from exc
        return cls(
            bootstrap_servers=str(opts["properties.bootstrap.servers"]),
            format=str(opts["value.format"]),
            topic=opts["topic"],
            topic_pattern=pattern,
            producer=dict(opts.groups.get("properties.", {})),
        )

    def topic_of(self, table: TableId) -> str:
        if self.topic is not None:
            return self.topic
        return self.topic_pattern.format(database=table.database, table=table.table)


class KafkaSink(Sink):
    """Writes every table's batch to its topic; at-least-once (see the module doc)."""

    def __init__(self, config: KafkaSinkConfig) -> None:
        self.config = config
        self.tables: dict[TableId, SinkTable] = {}

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        keyless = [str(t.source) for t in tables if not t.key]
        if keyless:
            raise OptionError(
                f"kafka sink: tables {keyless} have no primary key; Kafka messages are keyed "
                "by it (so one key's changes stay in order)"
            )
        self.tables = {t.source: t for t in tables}

    def writer(self, table: TableId) -> Any:
        from sparkcdc.spark.kafka.sink import KafkaChangelogWriter

        return KafkaChangelogWriter(
            self.config.bootstrap_servers,
            self.config.format,
            self.tables[table].key,
            topic=self.config.topic_of(table),
            database=table.database,
            table=table.table,
            kafka_options=self.config.producer,
        )

    def write(self, batch: MicroBatch) -> None:
        for table, changes in batch.changes.items():
            if batch.has_changes(table):
                self.writer(table).write(changes)

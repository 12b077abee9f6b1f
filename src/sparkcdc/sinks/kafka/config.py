"""Options of the Kafka pipeline sink: brokers, message format, topic per table or for all.

No pyspark here: a pipeline file's sink block validates offline and fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import OptionSpec, parse_options
from sparkcdc.core.secret import SecretSettings
from sparkcdc.core.table import TableId
from sparkcdc.sinks.names import fill_name

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
    OptionSpec(
        "topic",
        default=None,
        doc="one topic for every table (instead of the pattern); with several tables only for "
        "`debezium-json`, whose records name their table",
    ),
    OptionSpec(
        "topic-pattern",
        default="{database}.{table}",
        doc="topic per table, with `{database}` and `{table}` placeholders",
    ),
    OptionSpec(
        "properties.",
        prefix=True,
        doc="Kafka producer settings (the Java client's names), e.g. `properties.acks`; TLS: "
        "`properties.security.protocol: SSL` with `properties.ssl.truststore.type: PEM` and "
        "`properties.ssl.truststore.location` ([docs/kafka.md](docs/kafka.md))",
    ),
)


@dataclass(frozen=True)
class KafkaSinkConfig:
    """The Kafka sink's validated options."""

    bootstrap_servers: str
    format: str
    topic: str | None
    topic_pattern: str
    #: producer settings; their repr hides SASL and key passwords
    producer: Mapping[str, str] = field(default_factory=SecretSettings)

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
            producer=SecretSettings(opts.groups.get("properties.", {})),
        )

    def topic_of(self, table: TableId) -> str:
        if self.topic is not None:
            return self.topic
        return fill_name(self.topic_pattern, table.database, table.table)

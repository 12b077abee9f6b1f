"""The Kafka signal channel (Debezium's ``signal.kafka.topic``), read by the driver.

Before each batch the driver reads the topic from the positions in the stream's offset up
to each partition's end (its high watermark then), so a signal is consumed by the batch
Spark commits with it, exactly once across restarts, like the file channel. No consumer
group offset is committed: the offset is the only state. A stream's first batch starts at
the topic's end (a new stream has no signals yet; old ones are not executed again).
``signal.kafka.key``, when set, takes only messages with that key: other streams' signals
may share the topic, as Debezium's connectors share one by their topic prefix.

Not every offset below a partition's end is a message the consumer sees: a transaction's
commit or abort marker, an aborted transaction's messages and records compacted away
take offsets too, and retention deletes a partition's oldest ones. So a partition is read
until the consumer says it reached the end (librdkafka's end-of-partition event, or its
position), not until a message at the last offset arrives; a position retention passed is
read from the oldest offset left (with a warning: those signals are gone); and the
position kept is the one the consumer reached, which under an open transaction is the
last stable offset before it (read_committed), so its signals are read once it commits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.snapshot.signal import Received, received

log = logging.getLogger(__name__)


class KafkaSignals:
    name = "kafka"

    def __init__(
        self,
        servers: str,
        topic: str,
        key: str | None,
        timeout: float,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        """``settings``: librdkafka settings of the consumer (``signal.consumer.*``: TLS,
        SASL); the brokers and the never-committing group stay ours."""
        self.servers, self.topic, self.key, self.timeout = servers, topic, key, timeout
        self.settings = dict(settings or {})
        self._consumer: Any = None

    def read(self, position: Any) -> tuple[list[Received], dict[str, int]]:
        from confluent_kafka import TopicPartition

        consumer = self._connected()
        bounds = self._bounds()
        if position is None:  # a new stream: from the topic's end
            return [], {str(p): hi for p, (_, hi) in bounds.items()}
        start: dict[int, int] = {}
        for p, (low, _) in bounds.items():
            start[p] = int(position.get(str(p), 0))
            if start[p] < low:
                log.warning(
                    "signal topic %s, partition %d: offsets %d to %d were deleted (retention) "
                    "before this stream read them; signals there are lost",
                    self.topic,
                    p,
                    start[p],
                    low - 1,
                )
                start[p] = low
        pending = {p: hi for p, (_, hi) in bounds.items() if start[p] < hi}
        reached = {p: max(start[p], hi) for p, (_, hi) in bounds.items() if p not in pending}
        found: list[Received] = []
        if pending:
            consumer.assign([TopicPartition(self.topic, p, start[p]) for p in pending])
            try:
                found = self._take(consumer, pending, start, reached)
            finally:
                consumer.unassign()
        return found, {str(p): reached[p] for p in sorted(reached)}

    def _take(
        self,
        consumer: Any,
        pending: dict[int, int],
        start: dict[int, int],
        reached: dict[int, int],
    ) -> list[Received]:
        """The signals of each pending partition up to its end (``pending``), read until
        the consumer reaches it; ``reached`` gets where each partition's reading ended."""
        from confluent_kafka import KafkaError

        found: list[Received] = []
        at_least = dict(start)
        deadline = time.monotonic() + self.timeout
        while pending:
            message = consumer.poll(0.5)
            if message is None:
                self._ended(consumer, pending, at_least, reached)
                if pending and time.monotonic() > deadline:
                    raise SparkCdcError(
                        f"signal topic {self.topic!r}: messages up to offsets {pending} did "
                        f"not arrive within {self.timeout:.0f} s ('connect.timeout')"
                    )
                continue
            partition, at = message.partition(), message.offset()
            end = pending.get(partition)
            if message.error():
                if message.error().code() != KafkaError._PARTITION_EOF:
                    raise SparkCdcError(f"signal topic {self.topic!r}: {message.error()}")
                if end is not None:  # the end there is now (the last stable offset)
                    reached[partition] = max(at_least[partition], min(at, end))
                    del pending[partition]
                continue
            if end is None:
                continue
            if at < end and (self.key is None or message.key() == self.key.encode()):
                where = f"signal topic {self.topic}, partition {partition}, offset {at}"
                found.append(received(where, f"{partition}:{at}", message.value() or b""))
            at_least[partition] = min(at + 1, end)
            if at + 1 >= end:
                reached[partition] = end
                del pending[partition]
        return found

    def _ended(
        self,
        consumer: Any,
        pending: dict[int, int],
        at_least: dict[int, int],
        reached: dict[int, int],
    ) -> None:
        """Partitions whose consumer position passed their end meanwhile (markers and
        compacted offsets advance it without a message) are done."""
        from confluent_kafka import TopicPartition

        positions = consumer.position([TopicPartition(self.topic, p) for p in pending])
        for part in positions:
            end = pending.get(part.partition)
            if end is not None and part.offset >= end:
                reached[part.partition] = end
                del pending[part.partition]
            elif end is not None and part.offset > at_least[part.partition]:
                at_least[part.partition] = part.offset

    def _bounds(self) -> dict[int, tuple[int, int]]:
        """Each partition's oldest offset and end (high watermark)."""
        from confluent_kafka import KafkaException, TopicPartition

        consumer = self._connected()
        try:
            metadata = consumer.list_topics(self.topic, timeout=self.timeout)
        except KafkaException as exc:
            raise SparkCdcError(
                f"signal topic {self.topic!r}: cannot reach the brokers {self.servers} "
                f"within {self.timeout:.0f} s ('connect.timeout'): {exc.args[0]}. Check "
                "'signal.kafka.bootstrap.servers'; a broker that takes TLS or SASL clients "
                "only needs 'signal.consumer.security.protocol' and its settings"
            ) from None
        topic = metadata.topics.get(self.topic)
        if topic is None or topic.error is not None:
            problem = topic.error if topic is not None else "not found"
            raise SparkCdcError(
                f"signal topic {self.topic!r} on {self.servers}: {problem} (create it, with "
                "one partition as Debezium's, or fix 'signal.kafka.topic')"
            )
        return {
            p: tuple(
                consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=self.timeout)
            )
            for p in sorted(topic.partitions)
        }

    def _connected(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer, KafkaException

            try:
                self._consumer = Consumer(
                    {
                        "group.id": "sparkcdc-signals",  # required; never committed
                        "isolation.level": "read_committed",
                        "socket.timeout.ms": int(self.timeout * 1000),
                        **self.settings,
                        "bootstrap.servers": self.servers,
                        "enable.auto.commit": False,
                        "enable.partition.eof": True,  # how a read knows it reached the end
                        "auto.offset.reset": "earliest",  # retention passed it: the oldest left
                    }
                )
            except KafkaException as exc:
                raise SparkCdcError(
                    f"signal topic {self.topic!r}: the Kafka client refused the "
                    f"'signal.consumer.*' settings: {self._scrubbed(str(exc))} (librdkafka's "
                    "names, e.g. 'ssl.ca.location', not the Java client's "
                    "'ssl.truststore.location')"
                ) from None
        return self._consumer

    def _scrubbed(self, message: str) -> str:
        """``message`` without the values of secret settings (SASL passwords, key
        passwords), which a refused value's message may quote."""
        for name, value in self.settings.items():
            if value and any(word in name for word in ("password", "secret")):
                message = message.replace(value, "******")
        return message

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

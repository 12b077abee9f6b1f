"""The Kafka signal channel (Debezium's ``signal.kafka.topic``), read by the driver.

Before each batch the driver reads the topic from the positions in the stream's offset up
to each partition's end (its high watermark then), so a signal is consumed by the batch
Spark commits with it, exactly once across restarts, like the file channel. No consumer
group offset is committed: the offset is the only state. A stream's first batch starts at
the topic's end (a new stream has no signals yet; old ones are not executed again).
``signal.kafka.key``, when set, takes only messages with that key: other streams' signals
may share the topic, as Debezium's connectors share one by their topic prefix.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.snapshot.signal import Received, received


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
        ends = self._ends()
        if position is None:  # a new stream: from the topic's end
            return [], {str(p): hi for p, hi in ends.items()}
        start = {p: int(position.get(str(p), 0)) for p in ends}
        pending = {p: hi for p, hi in ends.items() if start[p] < hi}
        found: list[Received] = []
        if pending:
            consumer.assign([TopicPartition(self.topic, p, start[p]) for p in pending])
            try:
                found = self._take(consumer, pending)
            finally:
                consumer.unassign()
        return found, {str(p): max(start[p], hi) for p, hi in ends.items()}

    def _take(self, consumer: Any, pending: dict[int, int]) -> list[Received]:
        found: list[Received] = []
        deadline = time.monotonic() + self.timeout
        while pending:
            message = consumer.poll(0.5)
            if message is None:
                if time.monotonic() > deadline:
                    raise SparkCdcError(
                        f"signal topic {self.topic!r}: messages up to offsets {pending} did "
                        f"not arrive within {self.timeout:.0f} s ('connect.timeout')"
                    )
                continue
            if message.error():
                raise SparkCdcError(f"signal topic {self.topic!r}: {message.error()}")
            partition, at = message.partition(), message.offset()
            end = pending.get(partition)
            if end is None:
                continue
            if at < end and (self.key is None or message.key() == self.key.encode()):
                where = f"signal topic {self.topic}, partition {partition}, offset {at}"
                found.append(received(where, f"{partition}:{at}", message.value() or b""))
            if at + 1 >= end:
                del pending[partition]
        return found

    def _ends(self) -> dict[int, int]:
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
            p: consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=self.timeout)[
                1
            ]
            for p in sorted(topic.partitions)
        }

    def _connected(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer, KafkaException

            try:
                self._consumer = Consumer(
                    {
                        "group.id": "sparkcdc-signals",  # required; never committed
                        "enable.partition.eof": False,
                        "socket.timeout.ms": int(self.timeout * 1000),
                        **self.settings,
                        "bootstrap.servers": self.servers,
                        "enable.auto.commit": False,
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

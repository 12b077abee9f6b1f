"""Kafka helpers for tests: topics, producing and consuming with confluent-kafka, and
running any streaming DataFrame until it has caught up."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def create_topic(bootstrap_servers: str, topic: str, partitions: int = 1) -> str:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions)])
    futures[topic].result(30)
    return topic


def produce(
    bootstrap_servers: str,
    topic: str,
    messages: Sequence[tuple[str | None, str | None]],
    partition: int | None = None,
) -> None:
    """Produce ``(key, value)`` messages in order (to ``partition`` if given)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True})
    for key, value in messages:
        if partition is None:
            producer.produce(topic, key=key, value=value)
        else:
            producer.produce(topic, key=key, value=value, partition=partition)
    assert producer.flush(30) == 0


def consume_all(bootstrap_servers: str, topic: str, expected: int) -> list[Any]:
    """The first ``expected`` messages of ``topic`` (fails after 30 s without them)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"test-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    out: list[Any] = []
    try:
        for _ in range(300):
            if len(out) >= expected:
                break
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                out.append(message)
    finally:
        consumer.close()
    assert len(out) >= expected, f"{len(out)} of {expected} messages in {topic}"
    return out


def run_available_now(stream: Any, checkpoint: Path, each: Callable[[Any, int], None]) -> Any:
    """Run a streaming DataFrame into ``each`` until caught up; raise its failure."""
    query = (
        stream.writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(600)
    if query.exception():
        raise query.exception()
    return query


def collect_available_now(stream: Any, checkpoint: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []

    def each(batch: Any, _: int) -> None:
        rows.extend(r.asDict() for r in batch.collect())

    run_available_now(stream, checkpoint, each)
    return rows

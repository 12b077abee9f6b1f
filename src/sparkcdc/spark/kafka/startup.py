"""Where a Kafka read starts: Flink's startup modes as Spark Kafka source options.

Spark's Kafka source knows earliest, latest, per-partition offsets and timestamps; the
consumer group's committed offsets (``group-offsets``) it does not, so they are read here
with confluent-kafka when the query is defined. A restarted query continues from its
checkpoint whatever the mode says (as in Spark and Flink).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MODES = ("earliest", "latest", "group-offsets", "timestamp", "specific-offsets")
_EARLIEST = -2  # Spark's startingOffsets JSON: -2 earliest, -1 latest


@dataclass(frozen=True)
class Startup:
    """A startup mode and its parameters.

    - ``timestamp_ms``: for ``timestamp``, epoch milliseconds; each partition starts at its
      first message at or after it (partitions without one start at their end).
    - ``specific_offsets``: for ``specific-offsets``, Flink's text
      ``partition:0,offset:42;partition:1,offset:300`` or ``{partition: offset}``; unlisted
      partitions start at the earliest offset. With several topics, ``{topic: {p: o}}``.
    - ``group_id`` / ``group_offsets_reset``: for ``group-offsets``, the consumer group and
      where partitions without a committed offset start (``earliest`` or ``latest``).
    """

    mode: str = "earliest"
    timestamp_ms: int | None = None
    specific_offsets: str | Mapping[Any, Any] | None = None
    group_id: str | None = None
    group_offsets_reset: str = "earliest"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown startup mode {self.mode!r}; valid: {', '.join(MODES)}")
        if self.mode == "timestamp" and self.timestamp_ms is None:
            raise ValueError("startup mode 'timestamp' needs timestamp_ms")
        if self.mode == "specific-offsets" and self.specific_offsets is None:
            raise ValueError("startup mode 'specific-offsets' needs specific_offsets")
        if self.mode == "group-offsets" and not self.group_id:
            raise ValueError("startup mode 'group-offsets' needs group_id")
        if self.group_offsets_reset not in ("earliest", "latest"):
            raise ValueError("group_offsets_reset must be 'earliest' or 'latest'")


def parse_specific_offsets(text: str) -> dict[int, int]:
    """Flink's ``partition:0,offset:42;partition:1,offset:300`` as ``{0: 42, 1: 300}``."""
    out: dict[int, int] = {}
    for item in filter(None, (s.strip() for s in text.split(";"))):
        fields = dict(part.split(":", 1) for part in item.split(","))
        try:
            out[int(fields["partition"])] = int(fields["offset"])
        except (KeyError, ValueError) as exc:
            raise ValueError(
                f"specific offsets {text!r}: expected 'partition:<n>,offset:<n>;...'"
            ) from exc
    return out


def spark_options(
    startup: Startup, bootstrap_servers: str, topics: Sequence[str], client: Mapping[str, str]
) -> dict[str, str]:
    """Spark Kafka source options for ``startup`` (``client``: extra librdkafka settings
    for the lookups group-offsets and specific-offsets need)."""
    if startup.mode in ("earliest", "latest"):
        return {"startingOffsets": startup.mode}
    if startup.mode == "timestamp":
        return {
            "startingTimestamp": str(startup.timestamp_ms),
            "startingOffsetsByTimestampStrategy": "latest",
        }
    partitions = partitions_of(bootstrap_servers, topics, client)
    if startup.mode == "specific-offsets":
        offsets = _specific(startup.specific_offsets, topics)
    else:
        assert startup.group_id is not None
        offsets = committed_offsets(bootstrap_servers, startup.group_id, partitions, client)
    reset = _EARLIEST if startup.mode == "specific-offsets" else _reset(startup)
    starting = {
        t: {str(p): offsets.get(t, {}).get(p, reset) for p in sorted(ps)}
        for t, ps in partitions.items()
    }
    return {"startingOffsets": json.dumps(starting)}


def _reset(startup: Startup) -> int:
    return _EARLIEST if startup.group_offsets_reset == "earliest" else -1


def _specific(
    value: str | Mapping[Any, Any] | None, topics: Sequence[str]
) -> dict[str, dict[int, int]]:
    if isinstance(value, str):
        if len(topics) != 1:
            raise ValueError("specific offsets as text need exactly one topic; use a mapping")
        return {topics[0]: parse_specific_offsets(value)}
    assert value is not None
    if all(isinstance(k, int) for k in value):
        if len(topics) != 1:
            raise ValueError("{partition: offset} needs exactly one topic; use {topic: {...}}")
        return {topics[0]: {int(k): int(v) for k, v in value.items()}}
    return {str(t): {int(p): int(o) for p, o in ps.items()} for t, ps in value.items()}


def _consumer(bootstrap_servers: str, group_id: str, client: Mapping[str, str]) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group_id,
            "enable.auto.commit": False,
            **client,
        }
    )


def partitions_of(
    bootstrap_servers: str, topics: Sequence[str], client: Mapping[str, str] | None = None
) -> dict[str, list[int]]:
    """Partition numbers of each topic (the topic must exist)."""
    consumer = _consumer(bootstrap_servers, "sparkcdc-metadata", client or {})
    try:
        out: dict[str, list[int]] = {}
        for topic in topics:
            meta = consumer.list_topics(topic, timeout=30).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise ValueError(f"Kafka topic {topic!r} not found ({getattr(meta, 'error', '')})")
            out[topic] = sorted(meta.partitions)
        return out
    finally:
        consumer.close()


def committed_offsets(
    bootstrap_servers: str,
    group_id: str,
    partitions: Mapping[str, Sequence[int]],
    client: Mapping[str, str] | None = None,
) -> dict[str, dict[int, int]]:
    """The group's committed offsets (the next offset to read); partitions without one
    are left out."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(bootstrap_servers, group_id, client or {})
    try:
        wanted = [TopicPartition(t, p) for t, ps in partitions.items() for p in ps]
        out: dict[str, dict[int, int]] = {}
        for tp in consumer.committed(wanted, timeout=30):
            if tp.error is not None:
                raise ValueError(f"committed offset of {tp.topic}[{tp.partition}]: {tp.error}")
            if tp.offset >= 0:
                out.setdefault(tp.topic, {})[tp.partition] = tp.offset
        return out
    finally:
        consumer.close()


def commit_group_offsets(
    bootstrap_servers: str,
    group_id: str,
    offsets: Mapping[str, Mapping[int, int]],
    client: Mapping[str, str] | None = None,
) -> None:
    """Record ``{topic: {partition: next offset}}`` as the group's committed offsets, for
    readers that start with ``group-offsets`` (Spark itself keeps offsets in checkpoints;
    e.g. call this from ``foreachBatch`` with the batch's end offsets)."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(bootstrap_servers, group_id, client or {})
    try:
        consumer.commit(
            offsets=[
                TopicPartition(t, int(p), int(o))
                for t, ps in offsets.items()
                for p, o in ps.items()
            ],
            asynchronous=False,
        )
    finally:
        consumer.close()

"""Kafka startup modes and malformed-message policies on a real broker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.embedded import EmbeddedKafka
from sparkcdc.spark.kafka.source import (
    MALFORMED_METRIC,
    Malformed,
    decode_changelog_json,
    read_kafka,
)
from sparkcdc.spark.kafka.startup import Startup, commit_group_offsets
from tests.support.kafka_topics import (
    collect_available_now,
    consume_all,
    create_topic,
    produce,
    run_available_now,
)


def _insert(i: int) -> tuple[str, str]:
    return f'{{"id":{i}}}', f'{{"data":{{"id":{i}}},"op":"+I"}}'


def test_startup_modes(spark: Any, kafka: EmbeddedKafka, topic: str, scratch: Path) -> None:
    from confluent_kafka import Producer

    servers = kafka.bootstrap_servers
    create_topic(servers, topic, partitions=1)
    producer = Producer({"bootstrap.servers": servers})
    # recent message times: the broker's time-based retention (7 days) deletes older ones
    base = int(time.time() * 1000) - 3_600_000
    for i, stamp in enumerate([base + 1_000_000, base + 2_000_000, base + 3_000_000]):
        key, value = _insert(i)
        producer.produce(topic, key=key, value=value, timestamp=stamp)
    assert producer.flush(30) == 0

    def offsets(startup: Startup, streaming: bool = False, name: str = "") -> list[int]:
        raw = read_kafka(spark, servers, topic, startup=startup, streaming=streaming)
        if streaming:
            return sorted(r["offset"] for r in collect_available_now(raw, scratch / name))
        return sorted(r["offset"] for r in raw.select("offset").collect())

    assert offsets(Startup()) == [0, 1, 2]
    assert offsets(Startup("timestamp", timestamp_ms=base + 1_500_000)) == [1, 2]
    assert offsets(Startup("specific-offsets", specific_offsets="partition:0,offset:2")) == [2]
    commit_group_offsets(servers, "readers", {topic: {0: 1}})
    assert offsets(Startup("group-offsets", group_id="readers")) == [1, 2]
    assert offsets(Startup("group-offsets", group_id="nobody")) == [0, 1, 2]
    reset = Startup("group-offsets", group_id="nobody", group_offsets_reset="latest")
    assert offsets(reset, streaming=True, name="reset") == []  # latest: streaming only
    latest = Startup("latest")
    assert offsets(latest, streaming=True, name="latest") == []
    produce(servers, topic, [_insert(3)])
    assert offsets(latest, streaming=True, name="latest") == [3]  # from the checkpoint


@pytest.fixture
def dirty_topic(kafka: EmbeddedKafka, topic: str) -> str:
    create_topic(kafka.bootstrap_servers, topic, partitions=1)
    produce(
        kafka.bootstrap_servers,
        topic,
        [
            _insert(1),
            ('{"id":2}', "not json"),
            ('{"id":3}', '{"data":{"id":"three"},"op":"+I"}'),
            ('{"id":4}', '{"data":{"id":4},"op":"+X"}'),
            _insert(5),
        ],
    )
    return topic


SCHEMA = "id long"


def _decoded(spark: Any, kafka: EmbeddedKafka, topic: str, malformed: Malformed) -> Any:
    from pyspark.sql.types import StructType

    raw = read_kafka(spark, kafka.bootstrap_servers, topic, streaming=False)
    return decode_changelog_json(raw, StructType.fromDDL(SCHEMA), malformed)


def test_malformed_fail_names_topic_partition_offset(
    spark: Any, kafka: EmbeddedKafka, dirty_topic: str
) -> None:
    with pytest.raises(Exception, match=rf"topic {dirty_topic}, partition 0, offset 1: not"):
        _decoded(spark, kafka, dirty_topic, Malformed()).collect()


def test_malformed_skip_counts(
    spark: Any, kafka: EmbeddedKafka, dirty_topic: str, scratch: Path
) -> None:
    from pyspark.sql.types import StructType

    raw = read_kafka(spark, kafka.bootstrap_servers, dirty_topic)
    decoded = decode_changelog_json(raw, StructType.fromDDL(SCHEMA), Malformed("skip"))
    rows: list[int] = []
    query = run_available_now(
        decoded, scratch / "ckpt", lambda b, _: rows.extend(r["id"] for r in b.collect())
    )
    assert sorted(rows) == [1, 5]
    counted = sum(
        p.observedMetrics[MALFORMED_METRIC]["malformed"]
        for p in query.recentProgress
        if MALFORMED_METRIC in p.observedMetrics
    )
    assert counted == 3


def test_malformed_dead_letter(spark: Any, kafka: EmbeddedKafka, dirty_topic: str) -> None:
    dead = create_topic(kafka.bootstrap_servers, f"{dirty_topic}_dlq")
    policy = Malformed("dead-letter", dead, kafka.bootstrap_servers)
    rows = _decoded(spark, kafka, dirty_topic, policy).collect()
    assert sorted(r["id"] for r in rows) == [1, 5]
    letters = consume_all(kafka.bootstrap_servers, dead, 3)
    assert sorted(dict(m.headers())["sparkcdc.offset"] for m in letters) == [b"1", b"2", b"3"]
    assert {m.value() for m in letters} == {
        b"not json",
        b'{"data":{"id":"three"},"op":"+I"}',
        b'{"data":{"id":4},"op":"+X"}',
    }
    assert all(dict(m.headers())["sparkcdc.topic"] == dirty_topic.encode() for m in letters)

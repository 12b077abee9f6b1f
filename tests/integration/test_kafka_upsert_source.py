"""The upsert-kafka source's keep-last-row normalisation on a real broker: keyless messages
keyed through key fields, tombstones, harmless replays, and state kept across a restart."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedKafka
from sparkcdc.spark.kafka.source import read_kafka, read_upsert_kafka
from tests.support.kafka_topics import collect_available_now, create_topic, produce

SCHEMA = "id long, v string, n decimal(5,2)"


def _changes(rows: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    rank = {"update_preimage": 0, "delete": 0, "insert": 1, "update_postimage": 1}
    ordered = sorted(rows, key=lambda r: (r["_commit_version"], rank[r["_change_type"]]))
    return [(r["_change_type"], r["id"], r["v"]) for r in ordered]


def test_keyless_topic_normalised_through_key_fields_keeps_state_across_restart(
    spark: Any, kafka: EmbeddedKafka, topic: str, scratch: Path
) -> None:
    from pyspark.sql.types import StructType

    servers = kafka.bootstrap_servers
    create_topic(servers, topic, partitions=1)
    schema = StructType.fromDDL(SCHEMA)

    def run() -> list[tuple[str, int, str]]:
        raw = read_kafka(spark, servers, topic)
        stream = read_upsert_kafka(raw, schema, ["id"])
        return _changes(collect_available_now(stream, scratch / "ckpt"))

    produce(
        servers,
        topic,
        [
            (None, '{"id":1,"v":"a","n":"1.50"}'),
            (None, '{"id":2,"v":"x","n":null}'),
            (None, '{"v":"a","id":1,"n":1.5}'),  # the same row, written differently
            (None, '{"id":1,"v":"b","n":"1.50"}'),
            ('{"id":2}', None),  # tombstone
            ('{"id":9}', None),  # tombstone of a key never seen: nothing
        ],
    )
    assert run() == [
        ("insert", 1, "a"),
        ("insert", 2, "x"),
        ("update_preimage", 1, "a"),
        ("update_postimage", 1, "b"),
        ("delete", 2, "x"),
    ]
    produce(
        servers,
        topic,
        [
            (None, '{"id":1,"v":"b","n":"1.5"}'),  # a replay after the restart: nothing
            ('{"id":1}', '{"id":1,"v":"c","n":"1.50"}'),
            (None, '{"id":2,"v":"y","n":"0.01"}'),
        ],
    )
    assert run() == [  # state came back from the checkpoint: no spurious +I for key 1
        ("update_preimage", 1, "b"),
        ("update_postimage", 1, "c"),
        ("insert", 2, "y"),
    ]


def test_state_ttl_forgets_idle_keys(
    spark: Any, kafka: EmbeddedKafka, topic: str, scratch: Path
) -> None:
    from confluent_kafka import Producer
    from pyspark.sql.types import StructType

    servers = kafka.bootstrap_servers
    create_topic(servers, topic, partitions=1)
    schema = StructType.fromDDL(SCHEMA)

    def run(*messages: tuple[str, int]) -> list[tuple[str, int, str]]:
        producer = Producer({"bootstrap.servers": servers})
        for value, stamp in messages:  # message time drives the TTL
            producer.produce(topic, value=value, timestamp=stamp)
        assert producer.flush(30) == 0
        raw = read_kafka(spark, servers, topic)
        stream = read_upsert_kafka(raw, schema, ["id"], state_ttl_ms=5_000)
        return _changes(collect_available_now(stream, scratch / "ckpt"))

    a, b = '{"id":1,"v":"a","n":null}', '{"id":2,"v":"b","n":null}'
    # recent message times: the broker's time-based retention (7 days) deletes older ones
    t = int(time.time() * 1000) - 600_000
    assert run((a, t)) == [("insert", 1, "a")]
    assert run((a, t + 3_000)) == []  # within the TTL: the key is known
    assert run((b, t + 20_000)) == [("insert", 2, "b")]  # key 1 times out behind this
    assert run((a, t + 21_000), (b, t + 22_000)) == [("insert", 1, "a")]  # 1 was forgotten

"""The Kafka signal channel against the harness's real broker, driving the real driver over
the fake dialect (no Spark needed to see what the offset does with a signal): a new stream
starts at the topic's end, a signal is taken once, read again by a run that stopped
before committing it, never by a restart from the offset after it; other streams' keys
and bad messages are skipped."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.embedded.kafka import EmbeddedKafka
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.spark.kafka.signals import KafkaSignals
from tests.support.fake_dialect import FakeDatabase, FakeSettings
from tests.support.kafka_topics import create_topic, produce

A = TableId("db", "a")


def execute(sid: str, **extra: Any) -> str:
    data = {"data-collections": ["db.a"], "type": "incremental", **extra}
    return json.dumps({"id": sid, "type": "execute-snapshot", "data": data})


def test_signals_from_a_kafka_topic_are_taken_once(kafka: EmbeddedKafka, topic: str) -> None:
    servers = kafka.bootstrap_servers
    create_topic(servers, topic)
    produce(servers, topic, [("me", execute("before-the-stream"))])
    db = FakeDatabase([], {A: {k: (k, 0) for k in range(40)}}, FakeSettings(chunk_size=8))

    def source() -> IncrementalSource[Any, Any]:
        made = IncrementalSource(db)
        made.channels.append(KafkaSignals(servers, topic, "me", 30.0))
        return made

    stream = source()
    offset = stream.latest_offset(stream.initial_offset(), None)  # the snapshot, whole
    assert stream.parse_offset(offset).tables[A].done
    assert offset["signals"] == {"kafka": {"0": 1}}  # from the end: the old one is not run

    produce(
        servers,
        topic,
        [
            ("someone-else", execute("not-mine")),
            ("me", "{not json"),
            (
                "me",
                execute(
                    "ranged",
                    **{
                        "additional-conditions": [
                            {"data-collection": "db.a", "key-range": {"from": 8, "to": 24}}
                        ]
                    },
                ),
            ),
        ],
    )
    end = stream.latest_offset(offset, None)
    again = stream.parse_offset(end).tables[A].again
    assert again is not None and (again.lo, again.hi) == (8, 24) and again.done
    assert again.signal == "ranged@kafka:0:3"
    assert end["signals"] == {"kafka": {"0": 4}}

    # stopped before the batch was committed: the next run reads the signal again
    rerun = source().latest_offset(offset, None)
    assert rerun == end
    # a restart from the committed batch does not run it again (its re-read ends)
    after = source().latest_offset(end, None)
    assert source().parse_offset(after).tables[A].again is None
    assert after["signals"] == {"kafka": {"0": 4}}


def test_a_missing_signal_topic_fails_with_the_option(kafka: EmbeddedKafka, topic: str) -> None:
    db = FakeDatabase([], {A: {1: (1, 1)}}, FakeSettings())
    stream = IncrementalSource(db)
    stream.channels.append(KafkaSignals(kafka.bootstrap_servers, topic, None, 5.0))
    with pytest.raises(SparkCdcError, match=r"signal\.kafka\.topic"):
        stream.latest_offset(stream.initial_offset(), None)


def transactional(servers: str, name: str) -> Any:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": servers, "transactional.id": name})
    producer.init_transactions(30)
    return producer


def read_all(channel: KafkaSignals, position: dict[str, int], end: int) -> tuple[list[str], Any]:
    """Read until the position reaches ``end``: the coordinator writes a transaction's
    markers after the producer's commit returns, and until then the transaction is open to
    a read_committed consumer (a read stops before it, at once)."""
    ids: list[str] = []
    for _ in range(60):
        found, position = channel.read(position)
        ids += [r.signal.id for r in found if r.signal]
        if position == {"0": end}:
            return ids, position
        time.sleep(0.5)
    raise AssertionError(f"the reads never reached offset {end}: {position}")


def test_transactional_compacted_and_trimmed_topics_are_read_to_their_end(
    kafka: EmbeddedKafka, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Offsets a consumer never sees as messages (a transaction's commit and abort markers,
    an aborted transaction's messages, records retention deleted) end a read as well as a
    message would; a read used to wait for the last offset's message until its timeout
    (#63). An open transaction holds the position before it until it commits."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    servers = kafka.bootstrap_servers
    create_topic(servers, topic)
    channel = KafkaSignals(servers, topic, None, 10.0)
    try:
        producer = transactional(servers, f"{topic}-tx")
        producer.begin_transaction()
        producer.produce(topic, value=execute("committed"))
        producer.commit_transaction(30)  # offsets 0 (the signal) and 1 (the commit marker)
        producer.begin_transaction()
        producer.produce(topic, value=execute("aborted"))
        producer.flush(30)  # written, not purged by the abort
        producer.abort_transaction(30)  # offsets 2 and 3 (the abort marker)
        assert read_all(channel, {"0": 0}, 4) == (["committed"], {"0": 4})

        producer.begin_transaction()
        producer.produce(topic, value=execute("held"))
        producer.flush(30)
        found, held = channel.read({"0": 4})  # the transaction is open: read up to it
        assert found == [] and held == {"0": 4}
        producer.commit_transaction(30)
        assert read_all(channel, held, 6) == (["held"], {"0": 6})

        produce(servers, topic, [(None, execute("trimmed")), (None, execute("kept"))])
        admin = AdminClient({"bootstrap.servers": servers})
        done = admin.delete_records([TopicPartition(topic, 0, 7)])  # retention, at once
        for future in done.values():
            future.result(30)
        assert read_all(channel, {"0": 5}, 8) == (["kept"], {"0": 8})
        assert "offsets 5 to 6 were deleted" in caplog.text
    finally:
        channel.close()


def compacted_topic(servers: str, topic: str) -> None:
    """A topic whose log cleaner runs as soon as a segment is closed: segments roll every
    100 ms, any dirty share is worth cleaning, no lag before a record may go."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    config = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.0001",
        "min.compaction.lag.ms": "0",
    }
    admin = AdminClient({"bootstrap.servers": servers})
    admin.create_topics([NewTopic(topic, num_partitions=1, config=config)])[topic].result(30)


def visible_offsets(servers: str, topic: str, end: int) -> list[int]:
    """The offsets a consumer sees as messages, read from the start up to ``end``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": servers, "group.id": "probe", "enable.auto.commit": False}
    )
    seen: list[int] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        for _ in range(60):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                at = int(message.offset() or 0)
                seen.append(at)
                if at + 1 >= end:
                    break
    finally:
        consumer.close()
    return seen


def test_a_topic_the_log_cleaner_compacted_is_read_to_its_end(
    kafka: EmbeddedKafka, topic: str
) -> None:
    """Offsets compaction removed (an older message under a key written again) are read
    past, from before them and from inside them; what compaction kept is taken (#63)."""
    servers = kafka.bootstrap_servers
    compacted_topic(servers, topic)
    produce(servers, topic, [("a", execute("a")), ("k", execute("k-old"))])
    produce(servers, topic, [("k", execute("k-new"))])
    time.sleep(0.3)  # the segment is older than segment.ms: the next message rolls it
    produce(servers, topic, [("b", execute("b"))])
    for _ in range(240):  # the cleaner wakes every 15 s (log.cleaner.backoff.ms)
        if visible_offsets(servers, topic, 4) == [0, 2, 3]:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"the log cleaner never compacted {topic}")
    channel = KafkaSignals(servers, topic, None, 10.0)
    try:
        assert read_all(channel, {"0": 0}, 4) == (["a", "k-new", "b"], {"0": 4})
        assert read_all(channel, {"0": 1}, 4) == (["k-new", "b"], {"0": 4})
    finally:
        channel.close()

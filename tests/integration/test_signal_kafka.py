"""The Kafka signal channel against the harness's real broker, driving the real driver over
the fake dialect (no Spark needed to see what the offset does with a signal): a new stream
starts at the topic's end, a signal is taken once, read again by a run that stopped
before committing it, never by a restart from the offset after it; other streams' keys
and bad messages are skipped."""

from __future__ import annotations

import json
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

"""Kafka over TLS: a broker whose listener speaks TLS only gets the pipeline's records
when the producer settings (``properties.security.protocol`` and the truststore) say so
and the broker's certificate checks out; a broker signed by an unknown CA is a clear
failure of the batch, not a silent loss. The signal channel reads such a broker with
``signal.consumer.*``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedKafka
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.kafka.config import KafkaSinkConfig
from sparkcdc.sinks.kafka.sink import KafkaSink
from sparkcdc.sinks.write_plan import plan_of
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.spark.kafka.signals import KafkaSignals
from sparkcdc.spark.kafka.source import decode_changelog_json, read_kafka
from tests.support.fake_dialect import FakeDatabase, FakeSettings
from tests.support.kafka_topics import create_topic, produce

A = TableId("db", "a")


@pytest.fixture(scope="module")
def tls_kafka(certificates: Path) -> Iterator[EmbeddedKafka]:
    with EmbeddedKafka(tls=(certificates / "server.pem", certificates / "server.key")) as broker:
        yield broker


def _tls(certificates: Path, ca: str = "ca.pem") -> dict[str, str]:
    """Producer/consumer settings: TLS, the server checked against ``ca`` and its name."""
    return {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certificates / ca),
    }


def _sink(broker: EmbeddedKafka, tls: dict[str, str]) -> KafkaSink:
    return KafkaSink(
        KafkaSinkConfig.from_options(
            {
                "properties.bootstrap.servers": broker.ssl_bootstrap_servers,
                "value.format": "changelog-json",
                "topic-pattern": "{database}.{table}",
                **{f"properties.{k}": v for k, v in tls.items()},
            }
        )
    )


def test_the_sink_produces_over_verified_tls_and_refuses_an_unknown_ca(
    spark: Any, tls_kafka: EmbeddedKafka, certificates: Path
) -> None:
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL("id long, v string")
    table = TableId("shop", "secure")
    at = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    changes = spark.createDataFrame(
        [
            (1, "a", "insert", 1, at),
            (1, "a", "update_preimage", 2, at),
            (1, "b", "update_postimage", 2, at),
        ],
        "id long, v string, _change_type string, _commit_version long, _commit_timestamp timestamp",
    )
    sink = _sink(tls_kafka, _tls(certificates))
    sink.open(spark, [SinkTable(table, schema, ("id",))])
    sink.write(plan_of("p", 0, {table: changes}))
    raw = read_kafka(
        spark,
        tls_kafka.ssl_bootstrap_servers,
        "shop.secure",
        kafka_options={f"kafka.{k}": v for k, v in _tls(certificates).items()},
        streaming=False,
    )
    back = decode_changelog_json(raw, schema).collect()
    assert sorted((r["_change_type"], r["v"]) for r in back) == [
        ("insert", "a"),
        ("update_postimage", "b"),
        ("update_preimage", "a"),
    ]

    wrong = {**_tls(certificates, "other-ca.pem"), "max.block.ms": "5000"}
    refused = _sink(tls_kafka, wrong)
    refused.open(spark, [SinkTable(table, schema, ("id",))])
    with pytest.raises(Exception, match="SSL handshake failed"):
        refused.write(plan_of("p", 1, {table: changes}))
    # nothing of the failed batch reached the topic (read on the plain-text listener)
    assert (
        read_kafka(spark, tls_kafka.bootstrap_servers, "shop.secure", streaming=False).count() == 3
    )


def test_the_signal_channel_reads_a_tls_broker_with_signal_consumer_settings(
    tls_kafka: EmbeddedKafka, certificates: Path
) -> None:
    """``signal.consumer.*`` reaches the librdkafka consumer of the signal topic: a signal
    is read through the TLS-only listener; the Java client's names are refused, saying so."""
    topic = "signals-over-tls"
    create_topic(tls_kafka.bootstrap_servers, topic)
    settings = {"security.protocol": "SSL", "ssl.ca.location": str(certificates / "ca.pem")}
    db = FakeDatabase([], {A: {k: (k, 0) for k in range(40)}}, FakeSettings(chunk_size=8))
    stream = IncrementalSource(db)
    channel = KafkaSignals(tls_kafka.ssl_bootstrap_servers, topic, "me", 30.0, settings)
    stream.channels.append(channel)
    try:
        offset = stream.latest_offset(stream.initial_offset(), None)
        produce(tls_kafka.bootstrap_servers, topic, [("me", execute_snapshot_of("db.a"))])
        end = stream.latest_offset(offset, None)
    finally:
        channel.close()
    again = stream.parse_offset(end).tables[A].again
    assert again is not None and again.signal == "resnap@kafka:0:0"

    java = KafkaSignals(
        tls_kafka.ssl_bootstrap_servers,
        topic,
        None,
        5.0,
        {"security.protocol": "SSL", "ssl.truststore.location": "/x.jks"},
    )
    with pytest.raises(SparkCdcError, match=r"signal.consumer.*ssl\.truststore\.location"):
        java.read(None)
    clear = KafkaSignals(tls_kafka.ssl_bootstrap_servers, topic, None, 3.0)  # no TLS
    with pytest.raises(SparkCdcError, match=r"cannot reach the brokers.*signal\.consumer"):
        clear.read(None)
    clear.close()


def execute_snapshot_of(table: str) -> str:
    data = {"data-collections": [table], "type": "incremental"}
    return json.dumps({"id": "resnap", "type": "execute-snapshot", "data": data})

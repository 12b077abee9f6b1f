"""The pipeline's Kafka sink: options, one topic per table, and what a batch produces."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedKafka
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.kafka.config import KafkaSinkConfig
from sparkcdc.sinks.kafka.sink import KafkaSink
from sparkcdc.sinks.write_plan import plan_of
from sparkcdc.spark.kafka.source import decode_changelog_json, read_kafka


def test_sink_writes_each_table_to_its_topic(spark: Any, kafka: EmbeddedKafka, topic: str) -> None:
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL("id long, v string")
    table = TableId("shop", topic)
    sink = KafkaSink(
        KafkaSinkConfig.from_options(
            {
                "properties.bootstrap.servers": kafka.bootstrap_servers,
                "value.format": "changelog-json",
                "topic-pattern": "{database}.{table}",
            }
        )
    )
    sink.open(spark, [SinkTable(table, schema, ("id",))])
    at = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    changes = spark.createDataFrame(
        [
            (1, "a", "insert", 1, at),
            (1, "a", "update_preimage", 2, at),
            (1, "b", "update_postimage", 2, at),
        ],
        "id long, v string, _change_type string, _commit_version long, _commit_timestamp timestamp",
    )
    sink.write(plan_of("p", 0, {table: changes}))
    raw = read_kafka(spark, kafka.bootstrap_servers, f"shop.{topic}", streaming=False)
    back = decode_changelog_json(raw, schema).orderBy("_commit_version").collect()
    assert [(r["_change_type"], r["v"]) for r in back] == [
        ("insert", "a"),
        ("update_preimage", "a"),
        ("update_postimage", "b"),
    ]


def test_keyless_table_keeps_its_order_in_one_partition_beside_a_keyed_table(
    spark: Any, kafka: EmbeddedKafka, topic: str
) -> None:
    """A table without a key has no Kafka key (as Debezium writes it: null), so nothing
    but its partition keeps its records in order: all of them go to partition 0, in
    version order, whatever the topic's partitions (a truncate's record too); a keyed
    table in the same batch is still spread by its key. Duplicate rows stay two records
    each."""
    import json

    from pyspark.sql.types import StructType

    from tests.support.kafka_topics import consume_all, create_topic

    schema = StructType.fromDDL("id long, v string")
    keyless, keyed = TableId("shop", f"{topic}_log"), TableId("shop", f"{topic}_kv")
    for table in (keyless, keyed):
        create_topic(kafka.bootstrap_servers, f"shop.{table.table}", partitions=3)
    sink = KafkaSink(
        KafkaSinkConfig.from_options(
            {
                "properties.bootstrap.servers": kafka.bootstrap_servers,
                "value.format": "debezium-json",
                "topic-pattern": "{database}.{table}",
            }
        )
    )
    sink.open(spark, [SinkTable(keyless, schema, ()), SinkTable(keyed, schema, ("id",))])
    at = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    columns = (
        "id long, v string, _change_type string, _commit_version long, _commit_timestamp timestamp"
    )
    snapshot = [(3, "s", "insert", 0, at)] * 2  # a snapshot batch's rows: not shuffled
    only = {keyless: 2}
    frames = {keyless: spark.createDataFrame(snapshot, columns)}
    sink.write(plan_of("p", 0, frames, rows=only, snapshot_version=0, snapshot_rows=only))
    log = [(1, "a", "insert", 1, at), (1, "a", "insert", 2, at)]  # two identical rows
    log += [(1, "a", "update_preimage", 3, at), (1, "b", "update_postimage", 3, at)]
    log += [(2, "c", "insert", 4, at), (1, "a", "delete", 5, at), (2, "c", "delete", 6, at)]
    kv = [(i, "x", "insert", i, at) for i in range(1, 31)]
    sink.write(
        plan_of(
            "p",
            1,
            {
                keyless: spark.createDataFrame(log, columns),
                keyed: spark.createDataFrame(kv, columns),
            },
        )
    )
    sink.truncate(spark, SinkTable(keyless, schema, ()), plan_of("p", 2, {}))
    records = consume_all(kafka.bootstrap_servers, f"shop.{keyless.table}", len(log) + 2)
    assert {r.partition() for r in records} == {0}
    assert all(r.key() is None for r in records)
    values = [json.loads(r.value()) for r in records]
    assert [
        (v["op"], (v["before"] or {}).get("v"), (v["after"] or {}).get("v")) for v in values
    ] == [
        ("r", None, "s"),
        ("r", None, "s"),
        ("c", None, "a"),
        ("c", None, "a"),
        ("u", "a", "b"),
        ("c", None, "c"),
        ("d", "a", None),
        ("d", "c", None),
        ("t", None, None),
    ]
    spread = consume_all(kafka.bootstrap_servers, f"shop.{keyed.table}", len(kv))
    assert len({r.partition() for r in spread}) > 1

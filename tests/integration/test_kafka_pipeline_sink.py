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

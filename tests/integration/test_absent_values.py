"""Absent values (``_unchanged``: PostgreSQL's changelog-mode upsert) where no target can
keep a stored value: a Kafka record must be the whole row (sinks/absent_values.py), and a
transform's projection that renames or computes from a column names no target column that
lacks a value (pipeline/shaping.py). Rows without absent values pass; a row with one fails
its batch naming the fix, rather than carry NULL."""

from __future__ import annotations

from typing import Any

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.projection import parse_projection
from sparkcdc.pipeline.rules import TransformRule
from sparkcdc.pipeline.shaping import shape
from sparkcdc.pipeline.targets import TargetSource
from sparkcdc.sinks.absent_values import without_absent_values
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.options import table_patterns

SCHEMA = (
    "id BIGINT, big STRING, n INT, _change_type STRING, _commit_version BIGINT, "
    "_commit_timestamp TIMESTAMP, _unchanged ARRAY<STRING>"
)
ROWS = [
    (1, "whole", 1, "update_postimage", 1, None, None),
    (2, None, 2, "update_postimage", 2, None, ["big"]),
]
FAILED = (PySparkException, Py4JJavaError)


def test_a_kafka_sink_refuses_a_batch_with_an_absent_value(spark: Any) -> None:
    changes = spark.createDataFrame(ROWS, SCHEMA)
    whole = without_absent_values(changes.where("id = 1"), TableId("s", "t"), "Kafka sink")
    assert "_unchanged" not in whole.columns and [r["id"] for r in whole.collect()] == [1]
    guarded = without_absent_values(changes, TableId("s", "t"), "Kafka sink")
    with pytest.raises(FAILED, match=r"left TOASTed values unchanged.*REPLICA IDENTITY FULL"):
        guarded.collect()


def test_a_projection_passes_absent_values_only_of_columns_kept_by_name(spark: Any) -> None:
    changes = spark.createDataFrame(ROWS, SCHEMA)
    own = spark.createDataFrame([], "id BIGINT, big STRING, n INT").schema
    table = SinkTable(TableId("s", "t"), own, ("id",))

    def shaped(projection: str) -> Any:
        items = parse_projection(projection)
        rule = TransformRule(table_patterns("s.t"), items, None, (), (), "p.yaml:1")
        source = TargetSource(table, rule, None, None, ("id",))
        return shape(changes, source, None)

    kept = shaped("id, big, n * 2 AS twice")  # big passes by name: the target keeps it
    assert [r["_unchanged"] for r in kept.orderBy("id").collect()] == [None, ["big"]]
    with pytest.raises(FAILED, match=r"TOASTed values of big.*projection renames"):
        shaped("id, big AS body, n").collect()
    with pytest.raises(FAILED, match="projection renames or computes"):
        shaped("id, upper(big) AS loud").collect()
    # names in any case, and a star inside a call, read the absent column too (review)
    with pytest.raises(FAILED, match="projection renames or computes"):
        shaped("id, upper(BIG) AS loud").collect()
    with pytest.raises(FAILED, match="projection renames or computes"):
        shaped("id, to_json(struct(*)) AS j").collect()
    # a projection that drops the column leaves nothing absent for its targets
    dropped = shaped("id, n")
    assert [r["_unchanged"] for r in dropped.orderBy("id").collect()] == [None, None]
    everything = shaped("*")
    assert [r["_unchanged"] for r in everything.orderBy("id").collect()] == [None, ["big"]]

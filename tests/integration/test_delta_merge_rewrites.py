"""A MERGE into a small target rewrites the files it touches; into a big one it writes
deletion vectors (sinks/delta/spark_merge.py, ``REWRITE_BELOW_BYTES``). Either way the target
holds the batch's result, and a session's own setting of Delta's switch outlives it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta import spark_merge as delta_sink
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.write_plan import plan_of

_SWITCH = "spark.databricks.delta.merge.deletionVectors.persistent"


def _updated(spark: Any, tmp_path: Path, batch_id: int = 1) -> tuple[DeltaSink, dict[str, str]]:
    """A target of 1,000 rows with deletion vectors on, then one batch updating key 7 and
    deleting key 8: the sink, and the operation metrics of the batch's commit."""
    from pyspark.sql.types import StructType

    schema = StructType.fromDDL("k bigint, v string")
    table = SinkTable(TableId("db", "t"), schema, ("k",))
    sink = DeltaSink(DeltaSinkConfig.from_options({"path": str(tmp_path)}))
    sink.open(spark, [table])
    path = sink.target_path(table.source)
    spark.range(1000).selectExpr("id AS k", "CAST(id AS STRING) AS v").coalesce(1).write.format(
        "delta"
    ).mode("append").save(path)
    changes = spark.createDataFrame(
        [
            (7, "7", "update_preimage", 1, None),
            (7, "new", "update_postimage", 2, None),
            (8, "8", "delete", 3, None),
        ],
        "k bigint, v string, _change_type string, _commit_version bigint, "
        "_commit_timestamp timestamp",
    ).cache()
    sink.write(
        plan_of(
            pipeline="rewrites-test",
            batch_id=batch_id,
            changes={table.source: changes},
            rows={table.source: 3},
        )
    )
    changes.unpersist()
    got = dict(spark.read.format("delta").load(path).collect())
    assert len(got) == 999 and got[7] == "new" and 8 not in got and got[9] == "9"
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1")
    (metrics,) = history.select("operationMetrics").first()
    return sink, dict(metrics)


def test_a_small_target_is_rewritten_not_marked(spark: Any, tmp_path: Path) -> None:
    _, metrics = _updated(spark, tmp_path)
    assert metrics.get("numTargetDeletionVectorsAdded", "0") == "0", metrics
    assert metrics["numTargetFilesRemoved"] == "1", metrics
    assert metrics["numTargetRowsCopied"] == "998", metrics
    assert spark.conf.get(_SWITCH, None) is None  # unset again


def test_a_big_target_gets_deletion_vectors(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delta_sink, "REWRITE_BELOW_BYTES", 0)
    _, metrics = _updated(spark, tmp_path)
    assert metrics.get("numTargetDeletionVectorsAdded", "0") == "1", metrics
    assert metrics["numTargetRowsCopied"] == "0", metrics


def test_a_sessions_own_setting_outlives_the_merge(spark: Any, tmp_path: Path) -> None:
    spark.conf.set(_SWITCH, "true")
    try:
        _, metrics = _updated(spark, tmp_path)
        assert metrics.get("numTargetDeletionVectorsAdded", "0") == "0", metrics
        assert spark.conf.get(_SWITCH) == "true"
    finally:
        spark.conf.unset(_SWITCH)

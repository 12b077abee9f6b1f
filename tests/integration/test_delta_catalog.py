"""Delta targets by catalog name (sinks/delta/catalog.py): a pipeline into
``spark_catalog.lake.orders``, a table of a Hive metastore (Derby, beside the checkpoint),
through a route's ``sink-table`` as Flink CDC users write it, partitioned by a transform's
``partition-keys``, with table properties; SIGKILLed mid-snapshot under random writes, it
resumes exactly once and ``verify`` finds the target equal. And, in this session's
in-memory catalog: external tables registered again when the catalog forgot them, managed
ones refused there."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import committed_offsets, pipeline_file, snapshot_done, wait_until
from tests.support.runs import ROOT, kill, start_run

__all__ = ["orders"]  # the fixture, re-used

SINK = """
type: delta
table.properties.delta.logRetentionDuration: interval 45 days
table.properties.owner.team: data-eng
"""
#: The route names the catalog table (Flink CDC's way to name a target); the transform
#: partitions it; Spark's session catalog is a Hive metastore.
BLOCKS = """\
  spark-conf:
    spark.sql.catalogImplementation: hive
transform:
  - source-table: {db}.orders
    projection: \\*, id % 3 AS bucket
    partition-keys: bucket
route:
  - source-table: {db}.orders
    sink-table: spark_catalog.lake.orders
"""
#: Run in a process of its own (the metastore is Derby's, which one process opens at a
#: time): the catch-up of ``sparkcdc run --available-now``, then ``verify`` and the
#: catalog's own view of the table, in one JVM.
CATCH_UP_AND_VERIFY = """
import json, sys
from pathlib import Path
from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import session_for
from tests.support.pipelines import run_available_now

pipeline = Path(sys.argv[1])
definition = load_pipeline(pipeline)
spark = session_for(definition)
run_available_now(spark, pipeline)
verdicts = verify_pipeline(definition, spark)
described = spark.sql("DESCRIBE TABLE EXTENDED spark_catalog.lake.orders").collect()
detail = spark.sql("DESCRIBE DETAIL spark_catalog.lake.orders").first()
print(json.dumps({
    "verdicts": [v.status for v in verdicts],
    "described": {r[0]: r[1] for r in described},
    "location": detail["location"],
    "partitions": list(detail["partitionColumns"]),
}))
"""


def test_a_metastore_table_by_route_survives_a_sigkill_and_verifies_equal(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    pipeline = pipeline_file(
        scratch, mariadb, f"{orders}.orders", SINK, max_rows=600, blocks=BLOCKS.format(db=orders)
    )
    checkpoint = scratch / "checkpoint"

    def batches() -> int:
        return len(committed_offsets(checkpoint)) if (checkpoint / "commits").exists() else 0

    writer = mariadb_writer(mariadb, orders, seed=65, key_space=7000)
    writer.limit = 600
    writer.start()
    try:
        first = start_run(pipeline)
        wait_until(lambda: batches() >= 2 or first.poll() is not None, "two batches")
        assert first.poll() is None, "sparkcdc run exited early (see run-*.log)"
        assert not snapshot_done(committed_offsets(checkpoint)[-1]), "the snapshot was over"
        kill(first)  # mid-snapshot, while the writes go on
    finally:
        writer.stop()

    done = subprocess.run(
        [sys.executable, "-c", CATCH_UP_AND_VERIFY, str(pipeline)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-5000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["verdicts"] == ["equal"]
    # managed: in the warehouse beside the checkpoint, the metastore there too (no stray
    # metastore_db/ or derby.log where sparkcdc ran)
    warehouse_table = scratch / "checkpoint.warehouse" / "lake.db" / "orders"
    assert found["location"].rstrip("/").endswith(str(warehouse_table))
    assert (scratch / "checkpoint.metastore" / "metastore_db").is_dir()
    assert not (ROOT / "metastore_db").exists() and not (ROOT / "derby.log").exists()
    assert found["partitions"] == ["bucket"]
    properties = found["described"]["Table Properties"]
    for wanted in (
        "delta.logRetentionDuration=interval 45 days",
        "owner.team=data-eng",
        "delta.enableChangeDataFeed=true",
    ):
        assert wanted in properties, properties
    # the rows themselves, read by the table's location in this session (no metastore)
    rows = spark.read.format("delta").load(str(warehouse_table)).collect()
    target = {r["id"]: tuple(r)[:-1] for r in rows}  # without the transform's bucket
    assert len(target) == len(rows), "duplicate keys in the target"
    assert all(r["bucket"] == r["id"] % 3 for r in rows)
    assert target == table_state(mariadb, orders, "orders")


def test_external_tables_are_registered_again_and_managed_ones_refused_in_memory(
    spark: Any, scratch: Path
) -> None:
    """This session's catalog is in-memory: an external target (``location``) is created
    with its properties, registered again from its folder once the catalog forgot it (as
    after a restart), and a managed one is refused before anything is written."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema_name = f"lake_{uuid.uuid4().hex[:8]}"
    table = SinkTable(
        TableId("app", "orders"),
        StructType([StructField("id", LongType(), False), StructField("v", StringType())]),
        ("id",),
    )
    options = {
        "table-name": f"spark_catalog.{schema_name}.{{table}}",
        "table.properties.owner.team": "data-eng",
    }
    external = DeltaSinkConfig.from_options({**options, "location": str(scratch / "ext")})
    name = f"spark_catalog.{schema_name}.orders"
    try:
        DeltaSink(external, "p:1").open(spark, [table])
        folder = scratch / "ext" / schema_name / "orders"
        assert (folder / "_delta_log").is_dir()
        spark.sql(f"DROP TABLE {name}")  # external: the catalog forgets, the folder stays
        assert (folder / "_delta_log").is_dir()
        sink = DeltaSink(external, "p:1")
        sink.open(spark, [table])
        assert spark.catalog.tableExists(name)
        assert sink.target_path(table.source).rstrip("/").endswith(str(folder))
        properties = dict(spark.sql(f"SHOW TBLPROPERTIES {name}").collect())
        assert properties["owner.team"] == "data-eng"
        assert properties["sparkcdc.appends-for"] == "p:1"

        managed = DeltaSinkConfig.from_options(options)
        with pytest.raises(SparkCdcError, match="in-memory session catalog"):
            DeltaSink(managed, "p:1").open(spark, [table])
        # the session catalog named in another case is the session catalog all the same
        shouted = {**options, "table-name": f"SPARK_CATALOG.{schema_name}.{{table}}"}
        with pytest.raises(SparkCdcError, match="in-memory session catalog"):
            DeltaSink(DeltaSinkConfig.from_options(shouted), "p:1").open(spark, [table])
    finally:
        spark.sql(f"DROP SCHEMA IF EXISTS spark_catalog.{schema_name} CASCADE")


def test_another_catalogs_target_in_its_earlier_folder_is_refused_never_taken(
    spark: Any, scratch: Path
) -> None:
    """Earlier versions kept a non-session catalog's external target in
    ``<location>/<schema>/<table>``; when its catalog forgot it, the folder of now is
    empty: a table there that may be the target (this pipeline's, or whose cannot be told)
    stops the run with what to do, never taken (it may be a same-named target of another
    catalog); another pipeline's is left alone (sinks/delta/moved_folders.py)."""
    from sparkcdc.sinks.delta.moved_folders import refuse_earlier_target

    parts = ("uc", "s", "t")
    earlier, folder = str(scratch / "ext" / "s" / "t"), str(scratch / "ext" / "uc" / "s" / "t")
    refuse_earlier_target(spark, parts, earlier, folder, "p:1")  # nothing there
    spark.range(3).write.format("delta").save(earlier)
    with pytest.raises(SparkCdcError, match=r"neither in catalog 'uc'.*move that folder to"):
        refuse_earlier_target(spark, parts, earlier, folder, "p:1")
    spark.sql(f"ALTER TABLE delta.`{earlier}` SET TBLPROPERTIES ('sparkcdc.appends-for' = 'p:2')")
    refuse_earlier_target(spark, parts, earlier, folder, "p:1")  # another pipeline's
    with pytest.raises(SparkCdcError, match=r"it is this pipeline's\. If it is this target"):
        refuse_earlier_target(spark, parts, earlier, folder, "p:2")
    with pytest.raises(SparkCdcError, match="not marked as this pipeline's"):
        refuse_earlier_target(spark, parts, earlier, folder, None)  # whose cannot be told

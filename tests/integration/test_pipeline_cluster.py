"""A pipeline on a Spark standalone cluster: a master and two workers on loopback, each
executor in its own JVM with its own Python workers, sparkcdc installed there from its
wheel (not this checkout). ``local[N]`` runs every task in the driver's JVM and Python
environment; here a task that needed the driver's process (a module global filled by
planning, a file the wheel lacks) fails. The short form of the cluster checks:
SIGKILL mid-snapshot, random writes, a resume, and the target equal to the source."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedSparkCluster
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from sparkcdc.verify.run import verify_tables
from tests.integration.test_mysql_source import orders
from tests.integration.test_pipeline_delta import delta_rows
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import (
    at_or_after,
    committed_offsets,
    master_position,
    pipeline_file,
    snapshot_done,
    wait_until,
)
from tests.support.runs import kill, start_run
from tests.support.worker_python import ROOT, imported_from, worker_python

__all__ = ["orders"]  # the fixture, re-used


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedSparkCluster]:
    with EmbeddedSparkCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2) as started:
        yield started


@pytest.fixture(scope="module")
def executors_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    python = worker_python(tmp_path_factory.mktemp("worker-python"))
    assert not imported_from(python).is_relative_to(ROOT), "the executors would use the checkout"
    return python


def test_a_pipeline_on_a_standalone_cluster_resumes_after_sigkill_and_equals_the_source(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,
    scratch: Path,
    cluster: EmbeddedSparkCluster,
    executors_python: Path,
) -> None:
    """``spark.master`` in the pipeline's ``spark-conf`` is all a user changes (the README's
    "Running on a cluster"): the snapshot's chunks and the log are read by executors on
    both workers, a SIGKILL of the driver mid-snapshot loses nothing, and the Delta target
    equals the table after random writes. The Delta target is named by a ``file://`` URI."""
    spark_conf = (
        "  spark-conf:\n"
        f"    spark.master: {cluster.master_url}\n"
        f"    spark.pyspark.python: {executors_python}\n"
        "    spark.executor.memory: 1g\n"
    )
    # the lake by URI, as storage every executor reaches is named on a real cluster
    sink = f"type: delta\npath: file://{scratch / 'lake'}"
    pipeline = pipeline_file(
        scratch, mariadb, f"{orders}.orders", sink, max_rows=1600, blocks=spark_conf
    )
    checkpoint = scratch / "checkpoint"
    lake = scratch / "lake" / orders / "orders"

    def offsets() -> list[dict[str, Any]]:
        return committed_offsets(checkpoint) if (checkpoint / "commits").exists() else []

    first = start_run(pipeline)
    wait_until(lambda: len(offsets()) >= 1 or first.poll() is not None, "a first batch")
    assert first.poll() is None, "sparkcdc run exited early"
    assert not snapshot_done(offsets()[-1]), "the snapshot was already over"
    kill(first)

    writer = mariadb_writer(mariadb, orders, seed=17, key_space=7000)
    writer.limit = 300
    writer.start()
    second = start_run(pipeline)
    wait_until(
        lambda: (
            (any(snapshot_done(o) for o in offsets()) and not writer.is_alive())
            or second.poll() is not None
        ),
        "the snapshot and the writes",
    )
    writer.stop()
    file, pos = master_position(mariadb)
    wait_until(
        lambda: any(at_or_after(o, file, pos) for o in offsets()) or second.poll() is not None,
        "the pipeline to catch up",
    )
    assert second.poll() is None, "sparkcdc run exited early"
    os.killpg(second.pid, signal.SIGTERM)
    assert second.wait(120) == 0, "sparkcdc run did not stop cleanly"

    # every worker ran tasks of the pipeline in its executor's own JVM
    for worker in range(cluster.workers):
        logs = " ".join(p.read_text(errors="replace") for p in cluster.executor_logs(worker))
        assert "Running task" in logs, f"worker {worker} ran no task"

    assert delta_rows(spark, lake) == table_state(mariadb, orders, "orders")
    definition = load_pipeline(pipeline)
    run = prepare(definition, spark=spark)
    assert [
        v.status for v in verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    ] == ["equal"]

"""Spark's own folders go beside the pipeline's checkpoint unless ``spark-conf`` names
them: the warehouse (managed catalog tables) and a Hive session catalog's embedded Derby
metastore, which must outlive the process (the Delta sink's catalog targets) and must
not land in the working directory (pipeline/runner.py ``session_conf``)."""

from __future__ import annotations

import shlex
from pathlib import Path

from sparkcdc.pipeline.runner import session_conf

HIVE = {"spark.sql.catalogImplementation": "hive"}


def test_the_warehouse_and_a_hive_metastore_go_beside_the_checkpoint(tmp_path: Path) -> None:
    checkpoint = tmp_path / "my pipeline" / "checkpoint"
    conf = session_conf({**HIVE, "spark.driver.extraJavaOptions": "-Xss4m"}, checkpoint)
    assert conf["spark.sql.warehouse.dir"] == str(tmp_path / "my pipeline/checkpoint.warehouse")
    options = shlex.split(conf["spark.driver.extraJavaOptions"])  # a space in the path kept
    assert options == [f"-Dderby.system.home={tmp_path}/my pipeline/checkpoint.metastore", "-Xss4m"]


def test_what_spark_conf_names_is_kept_and_no_metastore_without_hive(tmp_path: Path) -> None:
    own = {**HIVE, "spark.driver.extraJavaOptions": "-Dderby.system.home=/srv/derby"}
    own["spark.sql.warehouse.dir"] = "s3a://bucket/warehouse"
    assert session_conf(own, tmp_path / "checkpoint") == own
    plain = session_conf({}, tmp_path / "checkpoint")
    assert "spark.driver.extraJavaOptions" not in plain

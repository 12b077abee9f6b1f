"""The harness's Kafka broker and Delta Lake work from PySpark with the Maven jars, in a driver
JVM that maps its class-data archive."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedKafka


def test_kafka_produce_and_consume_from_pyspark(
    spark: Any, kafka: EmbeddedKafka, topic: str
) -> None:
    out = spark.createDataFrame([("k1", "hello"), ("k2", "world")], "key string, value string")
    (
        out.write.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("topic", topic)
        .save()
    )
    back = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
    )
    assert sorted(tuple(r) for r in back.collect()) == [("k1", "hello"), ("k2", "world")]


def test_delta_write_merge_and_read_back(spark: Any, scratch: Path) -> None:
    path = str(scratch / "delta")
    spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string").write.format("delta").save(path)
    spark.createDataFrame([(2, "B"), (3, "c")], "id int, v string").createOrReplaceTempView("src")
    spark.sql(
        f"MERGE INTO delta.`{path}` t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    rows = spark.read.format("delta").load(path).orderBy("id").collect()
    assert [tuple(r) for r in rows] == [(1, "a"), (2, "B"), (3, "c")]


def test_the_driver_jvm_maps_the_class_data_archive(spark: Any) -> None:
    """Bootstrap built the archive for this JDK and these jars, and the suite's JVM (as every
    ``sparkcdc run``) really uses it: the file is mapped into the JVM's memory, which a JVM
    that rejected it (another JDK, other class path) does not do."""
    from sparkcdc.spark.class_archive import archive_path

    archive = archive_path()
    assert archive is not None and archive.is_file(), "run ./scripts/bootstrap.sh"
    jvm = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM: same process
    assert str(archive) in Path(f"/proc/{jvm}/maps").read_text()


def test_a_jvm_that_cannot_use_the_archive_warns_on_standard_error() -> None:
    """The archive for the Spark class path, given to a JVM of another class path (the
    case of a JDK or jar replaced in place): the JVM starts without it and says so on its
    standard error (``sparkcdc run``'s log file), not on standard output (its terminal)."""
    from sparkcdc.spark.class_archive import archive_path, driver_java_options, java_binary

    java, archive = java_binary(), archive_path()
    assert java is not None and archive is not None and archive.is_file()
    options = driver_java_options()
    assert f"-XX:SharedArchiveFile={archive}" in options
    done = subprocess.run(
        [str(java), *options, "-version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == ""
    assert "Unable to use shared archive" in done.stderr and "openjdk version" in done.stderr

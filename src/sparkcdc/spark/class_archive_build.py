"""Builds the class-data archive (spark/class_archive.py) by a training run of Spark, Delta
and a Python streaming data source in a JVM of its own, which writes the archive as it
exits. ``python -m sparkcdc.spark.class_archive_build [--force | --check]`` is bootstrap's
step. Apart from class_archive.py, which every driver JVM's options come from, because the
training run needs a session (spark/session.py), and the session needs those options."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from sparkcdc.spark.class_archive import archive_folder, archive_path
from sparkcdc.spark.session import local_session


def build(force: bool = False) -> Path | None:
    """Build the archive for this install unless it is there; remove archives of other
    installs. Returns its path (None when there is no JDK). The training run happens in a
    JVM of its own, which writes the archive as it exits."""
    path = archive_path()
    if path is None:
        return None
    if path.is_file() and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".building-", suffix=".jsa")
    os.close(handle)
    os.unlink(tmp)  # the JVM creates it
    (archive_folder() / "build.log").unlink(missing_ok=True)
    try:
        _train(Path(tmp))
        if not Path(tmp).is_file():
            raise RuntimeError("the training JVM exited without writing the archive")
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    for other in path.parent.glob("driver-*.jsa"):
        if other != path:
            other.unlink(missing_ok=True)
    return path


def _train(target: Path) -> None:
    """Load what a pipeline's driver loads: Delta create, append, MERGE and DESCRIBE DETAIL,
    an aggregate, and an available-now stream of a Python data source into ``foreachBatch``;
    then stop and wait for the JVM to exit (it writes ``target`` on the way out)."""
    spark = local_session(
        "sparkcdc-class-archive",
        conf={"spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={target}"},
        jvm_log=archive_folder() / "build.log",  # CDS lists every class it skips
        class_archive=False,
    )
    jvm = spark.sparkContext._gateway.proc
    with tempfile.TemporaryDirectory(prefix="sparkcdc-class-archive-") as scratch:
        _workload(spark, Path(scratch))
    spark.stop()
    jvm.stdin.close()  # PySpark's JVM exits when its standard input closes
    jvm.wait(timeout=600)


def _workload(spark: Any, scratch: Path) -> None:
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from sparkcdc.spark.class_archive_training import register_training_source

    path = str(scratch / "delta")
    rows = spark.range(2000).select(
        F.col("id"),
        F.col("id").cast("string").alias("name"),
        (F.col("id") / 3).cast("decimal(10,2)").alias("amount"),
        F.current_timestamp().alias("at"),
    )
    rows.write.format("delta").save(path)
    target = DeltaTable.forPath(spark, path)
    changes = rows.where("id % 7 = 0").withColumn("name", F.lit("changed"))
    (
        target.alias("t")
        .merge(changes.alias("s"), "t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()
    spark.read.format("delta").load(path).groupBy("name").agg(F.count("*")).collect()

    register_training_source(spark)

    def write(batch: Any, batch_id: int) -> None:
        batch.cache()
        batch.agg(F.count("*"), F.max("id")).collect()
        batch.write.format("delta").mode("append").save(path)
        batch.unpersist()

    query = (
        spark.readStream.format("sparkcdc-class-archive-training")
        .load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(scratch / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def main() -> int:
    """``python -m sparkcdc.spark.class_archive_build [--force | --check]``: build the archive
    (bootstrap's step) and print its path; ``--check`` only says (exit status) whether it is
    built."""
    if "--check" in sys.argv[1:]:
        path = archive_path()
        return 0 if path is not None and path.is_file() else 1
    path = build(force="--force" in sys.argv[1:])
    if path is None:
        print("no JDK found (JAVA_HOME or java on PATH): no class-data archive", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

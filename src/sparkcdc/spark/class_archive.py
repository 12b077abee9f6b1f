"""A class-data archive (JDK AppCDS) of the classes a sparkcdc driver JVM loads.

Why: a fresh ``sparkcdc run`` spends most of its first minute loading and verifying the
same tens of thousands of Spark and Delta classes every time (measured on a 2-core
machine: a 5,000-row ``--available-now`` run into Delta took ~50 s, 42-46 s with the
archive). Every restart after a failure, a deploy or a kill pays that again.

The archive is built once (``python -m sparkcdc.spark.class_archive``; ``scripts/bootstrap.sh``
does it) by a short training run of Spark, Delta and a Python streaming data source with
``-XX:ArchiveClassesAtExit``, and used by every later driver JVM through
``-XX:SharedArchiveFile``. It only speeds up the start: classes it lacks load as usual, and
a JVM that cannot use it says so in one warning line and starts without it (on its
standard error: see :data:`WARNINGS_TO_STDERR`). Its file name
carries a key of everything it depends on (the JDK, the paths and sizes of Spark's jars and
ours), so a changed install looks for, and builds, another file instead.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from sparkcdc.spark.jars import jars_root

#: Extra options for the driver JVM sparkcdc starts (space-separated).
JAVA_OPTIONS_ENV = "SPARKCDC_JAVA_OPTIONS"
#: The JVM's own warnings (unified logging: an archive it cannot use, and the like) go to
#: its standard error, which ``sparkcdc run`` sends to the Spark log file, not to standard
#: output, the run's terminal, where the JVM writes them by default.
WARNINGS_TO_STDERR = ["-Xlog:disable", "-Xlog:all=warning:stderr"]


def archive_folder() -> Path:
    return jars_root() / "class-data"


def archive_path() -> Path | None:
    """Where the archive for this JDK and these jars lives, or None when no JDK is found."""
    key = _install_key()
    return None if key is None else archive_folder() / f"driver-{key}.jsa"


def driver_java_options() -> list[str]:
    """The driver JVM's options: its warnings to standard error, the archive when it is
    built, then ``$SPARKCDC_JAVA_OPTIONS``."""
    options = list(WARNINGS_TO_STDERR)
    path = archive_path()
    if path is not None and path.is_file():
        options.append(f"-XX:SharedArchiveFile={path}")
    options += os.environ.get(JAVA_OPTIONS_ENV, "").split()
    return options


def java_binary() -> Path | None:
    """The ``java`` that Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).exists():
        return None
    return Path(found).resolve()


def _install_key() -> str | None:
    """A digest of the JDK (its binary's path, size and time) and of every jar on the driver's
    class path (Spark's own and ours: paths and sizes; the JVM checks the paths too, so a
    moved checkout or venv needs an archive of its own)."""
    java = java_binary()
    if java is None:
        return None
    import pyspark

    digest = hashlib.sha256()
    stat = java.stat()
    digest.update(f"{java}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    spark_jars = Path(pyspark.__file__).parent / "jars"
    ours = jars_root() / "spark"
    for folder in (spark_jars, ours):
        for jar in sorted(folder.glob("*.jar")):
            digest.update(f"{jar.resolve()}\0{jar.stat().st_size}\0".encode())
    return digest.hexdigest()[:16]


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
    from sparkcdc.spark.session import local_session

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
    """``python -m sparkcdc.spark.class_archive [--force | --check]``: build the archive
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

"""A local SparkSession with sparkcdc's JVM side (Delta, Spark's Kafka connector) attached:
a folder of jars or Maven packages Spark resolves (spark/jars.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sparkcdc.spark.class_archive import driver_java_options
from sparkcdc.spark.jars import jar_settings

DELTA_CONF: Mapping[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"

#: Generated classes Spark keeps compiled (its default is 100). A streaming batch into a
#: Delta table runs about 100 different ones (the MERGE, Delta's log replay, our batch
#: reduction); measured on a one-row batch into a 2,000-row table: 100 compilations and
#: about 1 s of compiling per batch with the default, 12 and 0.2 s with this, for about
#: 3 MiB more metaspace and 20 MiB more live heap.
CODEGEN_CACHE_ENTRIES = 2000


def local_session(
    app_name: str = "sparkcdc",
    *,
    master: str = "local[2]",
    conf: Mapping[str, str] | None = None,
    jvm_log: Path | None = None,
    class_archive: bool = True,
) -> Any:
    """Build (or get) a local SparkSession with the JVM side attached and sparkcdc
    registered.

    The JVM side is a folder of jars through ``spark.jars`` when there is one (a checkout's
    ``jvm/jars``, ``$SPARKCDC_JARS_DIR``: nothing resolved at run time), else the Maven
    packages ``conf`` and Spark's own jars do not bring yet, through ``spark.jars.packages``
    (resolved by Spark as it starts, from ``~/.m2`` or a repository; ``conf`` may set
    ``spark.jars.repositories`` or ``spark.jars.ivySettings``).

    With ``jvm_log``, a JVM started here writes its standard error (Spark's log, the JVM's
    own warnings, the Python workers' output) to that file instead of the terminal.
    A JVM started here uses the class-data archive when it is built (``class_archive``:
    it starts faster) and takes ``$SPARKCDC_JAVA_OPTIONS``, before ``conf``'s own
    ``spark.driver.extraJavaOptions``.
    """
    from pyspark.sql import SparkSession

    from sparkcdc.spark.registry import register

    # Workers must run this interpreter (the venv that has sparkcdc), and everything stays
    # on loopback: Spark otherwise binds to the first external interface.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        # Delta's default of 50 snapshot partitions costs seconds per small table.
        .config("spark.databricks.delta.snapshotPartitions", "2")
        # Spark keeps 100 compiled classes; one table's MERGE batch generates about 100
        # different ones, so with the default every batch compiled all of them again.
        .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
    )
    given = {**DELTA_CONF, **(conf or {})}
    settings = with_java_options(
        {**given, **jar_settings(given)}, driver_java_options() if class_archive else []
    )
    for key, value in settings.items():
        builder = builder.config(key, value)
    with nullcontext() if jvm_log is None else _stderr_to(jvm_log):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def with_java_options(settings: Mapping[str, str], options: list[str]) -> dict[str, str]:
    """``settings`` with ``options`` first in the driver's JVM options: the user's own
    ``spark.driver.extraJavaOptions`` come after, so they win where both set a flag."""
    merged = dict(settings)
    given = merged.get(_JAVA_OPTIONS_KEY)
    if options:
        merged[_JAVA_OPTIONS_KEY] = " ".join([*options, *([given] if given else [])])
    return merged


@contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """File descriptor 2 points to ``path`` meanwhile: processes started meanwhile (the
    JVM) keep it; this process gets its own standard error back afterwards."""
    path.parent.mkdir(parents=True, exist_ok=True)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved = os.dup(2)
    sys.stderr.flush()
    os.dup2(target, 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)

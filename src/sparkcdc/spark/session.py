"""A local SparkSession with sparkcdc's JVM side (Delta, Spark's Kafka connector) attached:
a folder of jars or Maven packages Spark resolves (spark/jars.py)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
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
#: The environment variable PySpark adds to ``spark-submit``'s arguments when it starts a JVM.
_SUBMIT_ARGS = "PYSPARK_SUBMIT_ARGS"

#: Generated classes Spark keeps compiled (its default is 100). A streaming batch into a
#: Delta table runs about 100 different ones (the MERGE, Delta's log replay, our batch
#: reduction); measured on a one-row batch into a 2,000-row table: 100 compilations and
#: about 1 s of compiling per batch with the default, 12 and 0.2 s with this, for about
#: 3 MiB more metaspace and 20 MiB more live heap.
CODEGEN_CACHE_ENTRIES = 2000


#: What every session here sets; ``conf`` (a pipeline's ``spark-conf``) may override each.
SESSION_CONF: Mapping[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.pyspark.python": sys.executable,
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    # Delta's default of 50 snapshot partitions costs seconds per small table.
    "spark.databricks.delta.snapshotPartitions": "2",
    # Spark keeps 100 compiled classes; one table's MERGE batch generates about 100
    # different ones, so with the default every batch compiled all of them again.
    "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
    # sparkcdc writes table and column names into SQL text (quoted), where Spark would
    # substitute ${...} (inside literals and identifiers alike): a column named ${x}
    # would be read as another name, its values silently NULL.
    "spark.sql.variable.substitute": "false",
}


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
    ``spark.driver.extraJavaOptions``. It gets the settings from a file only this user
    can read, never on its command line (:func:`_settings_file`): ``conf`` may hold
    secrets (storage keys) that ``ps`` would show any local user.
    """
    from pyspark.sql import SparkSession

    from sparkcdc.spark.registry import register

    _stay_on_loopback()
    settings = session_settings(conf or {}, class_archive)
    # the builder's own master and name reach the JVM as --conf arguments, which win over
    # the settings file: a master or name in ``conf`` must be the builder's
    builder = SparkSession.builder.master(settings.get("spark.master", master)).appName(
        settings.get("spark.app.name", app_name)
    )
    output = nullcontext() if jvm_log is None else _stderr_to(jvm_log)
    with _settings_reach_jvm(builder, settings), output:
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def _stay_on_loopback() -> None:
    """Workers must run this interpreter (the venv that has sparkcdc), and everything stays
    on loopback: Spark otherwise binds to the first external interface."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def session_settings(conf: Mapping[str, str], class_archive: bool) -> dict[str, str]:
    """Every Spark setting of a session here: ours, Delta's, then ``conf`` (which wins),
    the jars the JVM side needs and the driver's JVM options."""
    given = {**DELTA_CONF, **conf}
    return with_java_options(
        {**SESSION_CONF, **given, **jar_settings(given)},
        driver_java_options() if class_archive else [],
    )


@contextmanager
def _settings_reach_jvm(builder: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """Meanwhile, ``settings`` reach the JVM ``builder.getOrCreate()`` uses. PySpark puts
    a builder's settings on the command line of the JVM it starts (``--conf k=v``), where
    any local user sees them; so when no JVM runs yet they go into a properties file only
    this user can read, which Spark's launcher and ``SparkSubmit`` read as they read
    ``spark-defaults.conf`` (``--properties-file``, with ``--load-spark-defaults`` so that
    the installation's own defaults still apply beneath them), removed once the JVM has
    started. A JVM already running (this process's, or that of a ``spark-submit`` that
    started this process) gets them through py4j, as before."""
    from pyspark import SparkContext

    # a JVM already running: this process's, or the one that started this process
    # (``spark-submit app.py`` hands its gateway over in the environment)
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        for key, value in settings.items():
            builder = builder.config(key, value)
        yield
        return
    with _settings_file(settings) as path:
        given = os.environ.get(_SUBMIT_ARGS)
        os.environ[_SUBMIT_ARGS] = (
            f"--properties-file {shlex.quote(str(path))} --load-spark-defaults "
            + (given if given is not None else "pyspark-shell")
        )
        try:
            yield
        finally:
            if given is None:
                os.environ.pop(_SUBMIT_ARGS, None)
            else:
                os.environ[_SUBMIT_ARGS] = given


@contextmanager
def _settings_file(settings: Mapping[str, str]) -> Iterator[Path]:
    """A Java properties file of ``settings`` in a new folder only this user can enter
    (``0700``, the file ``0600``), removed with the folder afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="sparkcdc-conf-"))
    try:
        path = folder / "spark.properties"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(properties_text(settings))
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def properties_text(settings: Mapping[str, str]) -> str:
    """``settings`` as a Java properties file that ``java.util.Properties.load`` (Spark
    reads it as UTF-8) gives back unchanged, except that Spark trims white space around
    values (as for ``spark-defaults.conf``)."""
    return "".join(f"{_escaped(k)}={_escaped(v)}\n" for k, v in settings.items())


def _escaped(text: str) -> str:
    """``text`` escaped for a properties file: backslashes, line ends, tabs, and the
    characters that would end a key or start a comment."""
    escapes = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}
    return "".join(escapes.get(c, "\\" + c if c in "=:#! " else c) for c in text)


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

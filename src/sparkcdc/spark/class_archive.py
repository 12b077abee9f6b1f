"""A class-data archive (JDK AppCDS) of the classes a sparkcdc driver JVM loads.

Why: a fresh ``sparkcdc run`` spends most of its first minute loading and verifying the
same tens of thousands of Spark and Delta classes every time (measured on a 2-core
machine: a 5,000-row ``--available-now`` run into Delta took ~50 s, 42-46 s with the
archive). Every restart after a failure, a deploy or a kill pays that again.

The archive is built once (``python -m sparkcdc.spark.class_archive_build``;
``scripts/bootstrap.sh`` does it) by a short training run of Spark, Delta and a Python
streaming data source with ``-XX:ArchiveClassesAtExit``, and used by every later driver JVM through
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
from pathlib import Path

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

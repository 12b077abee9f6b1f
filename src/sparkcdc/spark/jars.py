"""The JVM side of sparkcdc: which Maven packages Spark needs for it, and where a folder of
already fetched jars lives.

Spark users attach JVM libraries by Maven coordinates (``spark.jars.packages``,
``spark-submit --packages``, a platform's library manager), so sparkcdc names its own:
:data:`SPARK_PACKAGES`, printed by ``sparkcdc jars``. A session sparkcdc builds
(:func:`jar_settings`) gets them in one of two ways:

- **a folder of jars**, handed to Spark through ``spark.jars``: ``$SPARKCDC_JARS_DIR/spark``,
  or a checkout's ``jvm/jars/spark`` (filled by scripts/bootstrap.sh with Maven from
  ``jvm/pom.xml``). Nothing is resolved at run time: the offline, air-gapped way, and the
  checkout's way;
- otherwise **Spark's package mechanism**: the coordinates not already on the classpath go
  into ``spark.jars.packages`` (with ``spark.jars.excludes`` for what PySpark already
  has), which Spark's Ivy resolves when the JVM starts (from the local Maven repository
  ``~/.m2/repository``, then Maven Central, or wherever the user's
  ``spark.jars.repositories`` / ``spark.jars.ivySettings`` point).

This module imports neither pyspark nor a driver: ``sparkcdc jars`` answers at once.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: ``spark.jars.packages``: Maven coordinates Spark resolves (with their dependencies).
PACKAGES_KEY = "spark.jars.packages"
#: ``spark.jars.excludes``: ``group:artifact`` pairs the package resolution leaves out.
EXCLUDES_KEY = "spark.jars.excludes"
#: ``spark.jars``: jar files (or URLs) added to the driver's and executors' class path.
JARS_KEY = "spark.jars"
#: A folder of fetched jars (its ``spark`` subfolder is handed to Spark).
JARS_DIR_ENV = "SPARKCDC_JARS_DIR"


@dataclass(frozen=True)
class SparkPackage:
    """One Maven artifact Spark needs for sparkcdc, and what for."""

    group: str
    artifact: str
    version: str
    purpose: str

    @property
    def coordinate(self) -> str:
        """``group:artifact:version``, as ``--packages`` takes it."""
        return f"{self.group}:{self.artifact}:{self.version}"

    def jar_name_prefix(self) -> str:
        """How its jar's file name starts, whatever the version (Maven and Ivy name jars
        ``artifact-version.jar`` and ``group_artifact-version.jar``)."""
        return f"{self.artifact}-"

    def is_jar(self, name: str) -> bool:
        return name.endswith(".jar") and (
            name.startswith(self.jar_name_prefix())
            or name.startswith(f"{self.group}_{self.jar_name_prefix()}")
        )


#: What sparkcdc's own code runs on the JVM, with what Spark resolves for them (below) the
#: same jars as a checkout's ``jvm/jars/spark``. Versions follow jvm/pom.xml (a unit test
#: keeps the two equal): Delta 4.4 is built against Spark 4.2, Spark's Kafka connector is
#: Spark's own version. Spark's JDBC drivers are not needed: the JDBC sink talks to its
#: targets with Python drivers (the checkout's folder keeps them for the benchmarks).
SPARK_PACKAGES: tuple[SparkPackage, ...] = (
    SparkPackage(
        "io.delta",
        "delta-spark_2.13",
        "4.4.0",
        "Delta Lake: the delta sink, verify of Delta targets, the demo",
    ),
    SparkPackage(
        "org.apache.spark",
        "spark-sql-kafka-0-10_2.13",
        "4.2.0",
        "Spark's Kafka connector: the kafka sink and the Kafka changelog sources",
    ),
    SparkPackage(
        "com.fasterxml.jackson.datatype",
        "jackson-datatype-jdk8",
        "2.21.2",
        "used by Delta's kernel; PySpark's own Jackson version, not the older one Delta names",
    ),
    SparkPackage(
        "org.openapitools",
        "jackson-databind-nullable",
        "0.2.6",
        "used by Delta's Unity Catalog client (managed commits)",
    ),
)

#: ``spark.jars.excludes``: dependencies of those packages that PySpark's own jars already
#: hold (Hadoop's client, Parquet, Jackson, log4j, compression codecs ...). Resolved, they
#: would put a second, often older, copy of each on the class path (Jackson 2.13 next to
#: PySpark's 2.21) and download ~100 MB; without them the packages resolve to exactly the
#: jars a checkout's Maven step copies (jvm/pom.xml's flat list).
EXCLUDED_DEPENDENCIES: tuple[str, ...] = (
    "at.yawk.lz4:lz4-java",
    "org.lz4:lz4-java",
    "com.fasterxml.jackson.core:jackson-annotations",
    "com.fasterxml.jackson.core:jackson-core",
    "com.fasterxml.jackson.core:jackson-databind",
    "com.github.luben:zstd-jni",
    "com.google.code.findbugs:jsr305",
    "commons-logging:commons-logging",
    "commons-pool:commons-pool",
    "io.airlift:aircompressor",
    "javax.annotation:javax.annotation-api",
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "org.apache.logging.log4j:log4j-api",
    "org.apache.logging.log4j:log4j-core",
    "org.apache.logging.log4j:log4j-slf4j2-impl",
    "org.apache.parquet:parquet-column",
    "org.apache.parquet:parquet-common",
    "org.apache.parquet:parquet-encoding",
    "org.apache.parquet:parquet-format-structures",
    "org.apache.parquet:parquet-hadoop",
    "org.apache.parquet:parquet-jackson",
    "org.locationtech.jts:jts-core",
    "org.roaringbitmap:RoaringBitmap",
    "org.roaringbitmap:shims",
    "org.scala-lang.modules:scala-parallel-collections_2.13",
    "org.scala-lang:scala-library",
    "org.slf4j:slf4j-api",
    "org.xerial.snappy:snappy-java",
)


class JarsMissingError(RuntimeError):
    """A folder of jars was named but holds none; the message says how to fill it."""


def checkout_root() -> Path | None:
    """The repository this module runs from, when it runs from a checkout (an editable
    install), else None (an installed wheel)."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "jvm" / "pom.xml").is_file() else None


def jars_root() -> Path:
    """``$SPARKCDC_JARS_DIR``, else the checkout's ``jvm/jars`` (filled by
    scripts/bootstrap.sh). An installed wheel without the variable gets a folder that does
    not exist: it has no jars of its own."""
    env = os.environ.get(JARS_DIR_ENV)
    if env:
        return Path(env)
    root = checkout_root()
    if root is None:
        return Path(__file__).resolve().parent / "no-jars-folder"
    return root / "jvm" / "jars"


def jar_files(group: str) -> list[Path]:
    """The jars of one group: ``spark`` (handed to Spark) or ``kafka`` (the test broker)."""
    folder = jars_root() / group
    jars = sorted(folder.glob("*.jar"))
    if not jars:
        raise JarsMissingError(
            f"no JVM jars in {folder}; in a checkout run ./scripts/bootstrap.sh (or `make "
            f"setup`) to fetch them with Maven, or point {JARS_DIR_ENV} at a folder that has "
            "them; without the variable, an installed sparkcdc lets Spark resolve "
            f"`sparkcdc jars` by {PACKAGES_KEY}"
        )
    return jars


def jar_folder() -> Path | None:
    """The folder of Spark jars to use, or None for Spark's package mechanism. A folder the
    user named must hold jars (:class:`JarsMissingError` otherwise); a checkout's is used
    once bootstrap filled it."""
    if os.environ.get(JARS_DIR_ENV):
        jar_files("spark")  # raises, naming the folder, when it is empty
        return jars_root() / "spark"
    folder = jars_root() / "spark"
    return folder if any(folder.glob("*.jar")) else None


def classpath_folders() -> list[Path]:
    """Where Spark's own jars are: the installed PySpark's ``jars``, and ``$SPARK_HOME``'s
    (a platform's Spark may bring Delta or the Kafka connector there)."""
    folders = []
    spec = importlib.util.find_spec("pyspark")
    if spec is not None and spec.origin is not None:
        folders.append(Path(spec.origin).parent / "jars")
    home = os.environ.get("SPARK_HOME")
    if home:
        folders.append(Path(home) / "jars")
    return [f for f in folders if f.is_dir()]


def _listed(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def missing_packages(conf: Mapping[str, str]) -> list[SparkPackage]:
    """The packages neither Spark's own jars nor ``conf`` (the user's ``spark.jars`` and
    ``spark.jars.packages``) already bring, in any version: a second Delta next to a
    platform's would break both."""
    on_disk = [jar.name for folder in classpath_folders() for jar in folder.glob("*.jar")]
    named_jars = [Path(item).name for item in _listed(conf.get(JARS_KEY))]
    named_packages = [":".join(c.split(":")[:2]) for c in _listed(conf.get(PACKAGES_KEY))]
    return [
        package
        for package in SPARK_PACKAGES
        if not any(package.is_jar(name) for name in [*on_disk, *named_jars])
        and f"{package.group}:{package.artifact}" not in named_packages
    ]


def jar_settings(conf: Mapping[str, str]) -> dict[str, str]:
    """The settings a session sparkcdc builds needs for its JVM side, given the user's
    ``conf`` (whose own entries are kept, first): ``spark.jars`` with the folder's jars when
    there is a folder, else ``spark.jars.packages`` with the packages still missing and
    ``spark.jars.excludes`` (nothing when no package is missing)."""
    folder = jar_folder()
    if folder is not None:
        jars = [str(p) for p in sorted(folder.glob("*.jar"))]
        return {JARS_KEY: ",".join([*_listed(conf.get(JARS_KEY)), *jars])}
    missing = missing_packages(conf)
    if not missing:
        return {}
    packages = [*_listed(conf.get(PACKAGES_KEY)), *(p.coordinate for p in missing)]
    excludes = [*_listed(conf.get(EXCLUDES_KEY)), *EXCLUDED_DEPENDENCIES]
    return {PACKAGES_KEY: ",".join(packages), EXCLUDES_KEY: ",".join(excludes)}

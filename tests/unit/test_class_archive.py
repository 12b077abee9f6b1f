"""The class-data archive's key and the driver JVM's options (no JVM started here: the
suite's own SparkSession and every ``sparkcdc run`` process of the integration tests start
with the archive that bootstrap built)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.spark import class_archive
from sparkcdc.spark.session import with_java_options


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A JDK (only its ``bin/java`` file) and a jars folder of our own."""
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_bytes(b"java")
    jars = tmp_path / "jars"
    (jars / "spark").mkdir(parents=True)
    (jars / "spark" / "delta.jar").write_bytes(b"delta 1")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    monkeypatch.setenv("SPARKCDC_JARS_DIR", str(jars))
    monkeypatch.delenv(class_archive.JAVA_OPTIONS_ENV, raising=False)
    return tmp_path


def test_the_archive_is_used_only_once_it_is_built(install: Path) -> None:
    quiet = class_archive.WARNINGS_TO_STDERR
    assert class_archive.driver_java_options() == quiet
    path = class_archive.archive_path()
    assert path is not None and path.parent == install / "jars" / "class-data"
    path.parent.mkdir()
    path.write_bytes(b"archive")
    assert class_archive.driver_java_options() == [*quiet, f"-XX:SharedArchiveFile={path}"]


def test_another_jar_or_jdk_means_another_archive(install: Path) -> None:
    first = class_archive.archive_path()
    (install / "jars" / "spark" / "delta.jar").write_bytes(b"delta 1.1")  # other size
    second = class_archive.archive_path()
    (install / "jars" / "spark" / "kafka.jar").write_bytes(b"kafka")
    third = class_archive.archive_path()
    (install / "jdk" / "bin" / "java").write_bytes(b"another java")
    fourth = class_archive.archive_path()
    assert len({first, second, third, fourth}) == 4
    assert class_archive.archive_path() == fourth  # and stable while nothing changes


def test_no_jdk_no_archive(install: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(install / "nothing-here"))
    assert class_archive.archive_path() is None
    assert class_archive.driver_java_options() == class_archive.WARNINGS_TO_STDERR


def test_options_from_the_environment_follow_the_archive(
    install: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(class_archive.JAVA_OPTIONS_ENV, " -XX:TieredStopAtLevel=1  -Xss4m ")
    assert class_archive.driver_java_options() == [
        *class_archive.WARNINGS_TO_STDERR,
        "-XX:TieredStopAtLevel=1",
        "-Xss4m",
    ]


def test_the_users_own_java_options_come_last() -> None:
    key = "spark.driver.extraJavaOptions"
    assert with_java_options({"a": "1"}, []) == {"a": "1"}
    assert with_java_options({"a": "1"}, ["-X1", "-X2"]) == {"a": "1", key: "-X1 -X2"}
    assert with_java_options({key: "-Dmine=1"}, ["-X1"]) == {key: "-X1 -Dmine=1"}

"""The JVM side of a session sparkcdc builds (spark/jars.py): a folder of jars when there is
one, else the Maven packages that Spark's own jars and the user's settings do not bring;
``sparkcdc jars`` prints them. (The packages' resolution itself, by Spark from a local Maven
repository, runs in tests/integration/test_installed_wheel.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkcdc.cli.main import main
from sparkcdc.spark import jars
from sparkcdc.spark.jars import (
    EXCLUDED_DEPENDENCIES,
    EXCLUDES_KEY,
    JARS_KEY,
    PACKAGES_KEY,
    SPARK_PACKAGES,
    JarsMissingError,
    jar_settings,
    missing_packages,
)

ROOT = Path(__file__).resolve().parents[2]
COORDINATES = [p.coordinate for p in SPARK_PACKAGES]


@pytest.fixture
def no_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An installed sparkcdc: no jars folder, a Spark of its own (``$SPARK_HOME/jars``) and
    a PySpark whose jars hold neither Delta nor the Kafka connector."""
    monkeypatch.delenv(jars.JARS_DIR_ENV, raising=False)
    monkeypatch.setattr(jars, "checkout_root", lambda: None)
    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    (spark_home / "jars" / "spark-core_2.13-4.2.0.jar").write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(spark_home))
    return spark_home / "jars"


def test_an_installed_sparkcdc_asks_spark_for_its_packages(no_folder: Path) -> None:
    settings = jar_settings({})
    assert settings[PACKAGES_KEY].split(",") == COORDINATES
    assert settings[EXCLUDES_KEY].split(",") == list(EXCLUDED_DEPENDENCIES)
    assert JARS_KEY not in settings


def test_packages_spark_already_has_are_not_asked_for_again(no_folder: Path) -> None:
    """A platform's Spark with Delta in its jars (any version: two Deltas break both)."""
    (no_folder / "delta-spark_2.13-4.3.1.jar").write_bytes(b"")
    missing = [p.artifact for p in missing_packages({})]
    assert "delta-spark_2.13" not in missing and "spark-sql-kafka-0-10_2.13" in missing


def test_the_users_own_settings_come_first_and_count(no_folder: Path) -> None:
    conf = {
        PACKAGES_KEY: "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0, com.example:x:1",
        JARS_KEY: "/opt/jars/io.delta_delta-spark_2.13-4.4.0.jar",
        EXCLUDES_KEY: "com.example:y",
    }
    settings = jar_settings(conf)
    packages = settings[PACKAGES_KEY].split(",")
    assert packages[:2] == ["org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0", "com.example:x:1"]
    assert not any(
        p.startswith(("io.delta:", "org.apache.spark:spark-sql-kafka")) for p in packages[2:]
    )
    assert settings[EXCLUDES_KEY].split(",")[0] == "com.example:y"


def test_nothing_is_asked_for_when_everything_is_there(no_folder: Path) -> None:
    for package in SPARK_PACKAGES:
        (no_folder / f"{package.artifact}-{package.version}.jar").write_bytes(b"")
    assert jar_settings({}) == {}


def test_a_folder_of_jars_goes_through_spark_jars_and_resolves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "spark").mkdir()
    for name in ("b.jar", "a.jar"):
        (tmp_path / "spark" / name).write_bytes(b"")
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(tmp_path))
    settings = jar_settings({JARS_KEY: "/mine.jar"})
    assert settings == {JARS_KEY: f"/mine.jar,{tmp_path}/spark/a.jar,{tmp_path}/spark/b.jar"}


def test_a_named_folder_without_jars_says_how_to_fill_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(jars.JARS_DIR_ENV, str(tmp_path))
    with pytest.raises(
        JarsMissingError, match=r"no JVM jars in .*bootstrap.sh.*spark.jars.packages"
    ):
        jar_settings({})


def test_the_checkout_uses_its_own_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jars.JARS_DIR_ENV, raising=False)
    assert jars.checkout_root() == ROOT
    assert jars.jar_folder() == ROOT / "jvm" / "jars" / "spark"  # bootstrap filled it


def test_the_versions_are_jvm_pom_xmls() -> None:
    """One list for the checkout's Maven step and one for Spark's resolution: they must
    name the same versions."""
    pom = (ROOT / "jvm" / "pom.xml").read_text(encoding="utf-8")
    properties = dict(re.findall(r"<([\w.]+)>([^<]+)</\1>", pom))
    by_artifact = {p.artifact: p.version for p in SPARK_PACKAGES}
    assert by_artifact["delta-spark_2.13"] == properties["delta.version"]
    assert by_artifact["spark-sql-kafka-0-10_2.13"] == properties["spark.kafka.version"]
    assert by_artifact["jackson-datatype-jdk8"] == properties["pyspark.jackson.version"]
    assert (
        by_artifact["jackson-databind-nullable"] == properties["jackson.databind.nullable.version"]
    )


def test_no_excluded_dependency_is_one_of_the_packages() -> None:
    named = {f"{p.group}:{p.artifact}" for p in SPARK_PACKAGES}
    assert not named & set(EXCLUDED_DEPENDENCIES)


def test_sparkcdc_jars_prints_coordinates_for_packages_and_excludes(
    capsys: pytest.CaptureFixture[str], no_folder: Path
) -> None:
    assert main(["jars"]) == 0
    assert capsys.readouterr().out == ",".join(COORDINATES) + "\n"
    assert main(["jars", "--excludes"]) == 0
    assert capsys.readouterr().out == ",".join(EXCLUDED_DEPENDENCIES) + "\n"
    assert main(["jars", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == COORDINATES
    assert all("resolved by Spark at start" in line for line in lines)

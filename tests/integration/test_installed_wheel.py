"""sparkcdc as a user installs it: README's "With pip" commands, run as they are, in a fresh
venv outside the repository, from the source distribution of this checkout; then
``sparkcdc --help``, a pipeline from an embedded MariaDB into Delta, ``status`` and
``verify`` there.

Nothing of the checkout reaches that venv: no editable install, no ``jvm/jars`` folder, no
``SPARKCDC_*`` setting of the harness but one a user may set too, ``SPARKCDC_JAVA_OPTIONS``
as for every driver JVM the tests start (C1 only, tests/conftest.py: how the JIT compiles,
not what runs; the four commands that start Spark here are most of the test's time). The
JVM side is resolved the way a user's Spark resolves it, by Spark's package mechanism
(``spark.jars.packages``, spark/jars.py), here from the local Maven repository alone
(``~/.m2``, filled by bootstrap's Maven step; an Ivy settings file names no other
repository, so a missing jar fails the run instead of being fetched). The Python packages
come from pip's cache and its index (the registries).

PySpark is checked at both ends of what sparkcdc allows (pyproject.toml's ``>=4.2,<4.3``):
the install takes the highest that resolves with the extras (delta-spark caps PySpark at
4.2.0 itself), and the pipeline runs again with each end of the range on the index that
differs from it, installed over the resolution as a platform's own PySpark would be.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.spark.class_archive import JAVA_OPTIONS_ENV
from sparkcdc.spark.jars import SPARK_PACKAGES

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
M2 = Path.home() / ".m2" / "repository"
#: pip's cache, shared with the harness's own installs (PySpark alone is ~300 MB).
PIP_CACHE = Path(os.environ.get("PIP_CACHE_DIR", Path.home() / ".cache" / "pip"))


def readme_install_commands() -> list[str]:
    """The shell lines of README's "### With pip" section, the first ``sh`` block."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### With pip", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "README's 'With pip' section has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def allowed_pyspark_range() -> tuple[str, str]:
    """The lowest and the highest PySpark on the index that pyproject.toml's range allows."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(r'"pyspark>=([\d.]+),<([\d.]+)"', pyproject)
    assert found is not None, "pyproject.toml pins PySpark to a range >=X,<Y"
    low, high = (tuple(int(n) for n in bound.split(".")) for bound in found.groups())
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", "pyspark"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    available = re.search(r"Available versions: (.*)", listed)
    assert available is not None, listed
    allowed = sorted(
        tuple(int(n) for n in v.split("."))
        for v in available.group(1).split(", ")
        if re.fullmatch(r"\d+\.\d+\.\d+", v) and low <= tuple(int(n) for n in v.split(".")) < high
    )
    assert allowed, f"no PySpark in >={found.group(1)},<{found.group(2)} on the index"
    return ".".join(map(str, allowed[0])), ".".join(map(str, allowed[-1]))


def sdist(folder: Path) -> Path:
    """The source distribution of this checkout (setuptools' build backend), what an index
    would serve: a wheel built from it proves it carries what the build needs."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))",
            str(folder),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (built,) = folder.glob("sparkcdc-*.tar.gz")
    return built


def user_environment(home: Path) -> dict[str, str]:
    """This process's environment without the harness's own settings (but the driver JVM's
    options), with ``home`` as HOME (README's ``~``) and pip's cache kept."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPARKCDC_", "PYSPARK_", "PYTEST_"))
        and k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_HOME")
    }
    env["HOME"] = str(home)
    env["PIP_CACHE_DIR"] = str(PIP_CACHE)
    env[JAVA_OPTIONS_ENV] = os.environ[JAVA_OPTIONS_ENV]  # the JIT's choice (see above)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    return env


def ivy_artifact(jar: str) -> str:
    """The artifact of a jar Ivy named ``group_artifact-version.jar``."""
    _group, rest = jar.split("_", 1)
    return rest.rsplit("-", 1)[0]


def checkout_spark_artifacts() -> set[str]:
    """The artifacts jvm/pom.xml's spark profile copies into a checkout's ``jvm/jars/spark``,
    but the JDBC drivers (sparkcdc's JDBC sink uses Python drivers; the benchmarks use them)."""
    pom = (ROOT / "jvm" / "pom.xml").read_text(encoding="utf-8")
    profile = pom.split("<id>spark</id>", 1)[1].split("</profile>", 1)[0]
    artifacts = set(re.findall(r"<artifactId>([^<*]+)</artifactId>", profile))
    return artifacts - {"mariadb-java-client", "postgresql"}


def m2_only_ivy_settings(path: Path, cache: Path) -> Path:
    """Ivy settings that resolve from the local Maven repository and nowhere else."""
    path.write_text(
        f"""<ivysettings>
  <settings defaultResolver="local-m2"/>
  <caches defaultCacheDir="{cache}"/>
  <resolvers>
    <ibiblio name="local-m2" m2compatible="true" root="{M2.as_uri()}" usepoms="true"/>
  </resolvers>
</ivysettings>
""",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def user_home() -> Iterator[Path]:
    """A user's home outside the repository, with the source distribution unpacked as
    ``sparkcdc/`` (README's ``./sparkcdc``: a checkout of this repository)."""
    home = Path(tempfile.mkdtemp(prefix="sparkcdc-user-"))
    assert not home.is_relative_to(ROOT)
    try:
        with tarfile.open(sdist(home / "dist")) as archive:
            archive.extractall(home / "unpacked", filter="data")
        (unpacked,) = (home / "unpacked").iterdir()
        unpacked.rename(home / "sparkcdc")
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def installed(user_home: Path) -> Path:
    """README's install commands run in ``user_home``; returns the venv's ``bin``."""
    script = "set -euo pipefail\n" + "\n".join(readme_install_commands()) + "\n"
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=user_home,
        env=user_environment(user_home),
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, f"README's install failed:\n{done.stdout}\n{done.stderr}"
    assert "usage: sparkcdc" in done.stdout, "README's install ends with sparkcdc --help"
    (activate,) = user_home.glob("**/bin/activate")
    return activate.parent


def run(bin_dir: Path, home: Path, *args: str, timeout: float = 600) -> str:
    """``args`` in the installed venv, from ``home``; returns standard output."""
    env = user_environment(home)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        [str(bin_dir / args[0]), *args[1:]],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"{' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


#: Two PySpark versions, each a pipeline run and a verify; a PySpark wheel pip has not built
#: before (PySpark is an sdist of 450 MB) takes minutes more.
@pytest.mark.timeout(1800)
def test_readme_install_into_a_fresh_venv_runs_a_pipeline_into_delta(
    installed: Path, user_home: Path, mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    python = installed / "python"
    imported = run(
        installed, user_home, "python", "-c", "import sparkcdc; print(sparkcdc.__file__)"
    )
    assert Path(imported.strip()).is_relative_to(user_home), "sparkcdc came from elsewhere"
    built = run(
        installed,
        user_home,
        "python",
        "-c",
        "import sparkcdc.connectors.mysql.binlog.rowdecode._rowdecode, "
        "sparkcdc.connectors.mysql.snapshot._mysqlarrow, "
        "sparkcdc.connectors.postgres.wal._pgdecode; print('built')",
    )
    assert built.strip() == "built", "the wheel lacks a C extension"
    assert run(installed, user_home, "sparkcdc", "jars").strip() == ",".join(
        p.coordinate for p in SPARK_PACKAGES
    )

    mariadb.execute(
        f"CREATE TABLE `{mysql_db}`.orders (id INT PRIMARY KEY, item VARCHAR(20), qty INT)"
    )
    mariadb.execute(
        f"INSERT INTO `{mysql_db}`.orders VALUES (1, 'apple', 3), (2, 'pear', 5), (3, 'fig', 1)"
    )
    ivy = user_home / "ivy"
    settings = m2_only_ivy_settings(user_home / "ivysettings.xml", ivy / "cache")
    pipeline = user_home / "pipeline.yaml"
    pipeline.write_text(
        mariadb.pipeline_source(f"{mysql_db}.orders")
        + f"""sink:
  type: delta
  path: lakehouse
pipeline:
  name: installed-wheel
  checkpoint: checkpoint
  spark-conf:
    spark.jars.ivySettings: {settings}
    spark.jars.ivy: {ivy}
""",
        encoding="utf-8",
    )

    def pyspark_version() -> str:
        code = "import pyspark; print(pyspark.__version__)"
        return run(installed, user_home, "python", "-c", code).strip()

    first = pyspark_version()
    versions = [first, *(v for v in dict.fromkeys(allowed_pyspark_range()) if v != first)]
    for round_, version in enumerate(versions):
        if round_:  # pip says delta-spark wants <=4.2.0, and installs it all the same
            run(installed, user_home, "pip", "install", "-q", f"pyspark=={version}", timeout=1200)
            assert pyspark_version() == version
            mariadb.execute(f"INSERT INTO `{mysql_db}`.orders VALUES ({10 + round_}, 'kiwi', 2)")
        run(installed, user_home, "sparkcdc", "run", str(pipeline), "--available-now")
        status = run(installed, user_home, "sparkcdc", "status", str(pipeline))
        assert "installed-wheel" in status and "orders" in status, status
        verdict = run(installed, user_home, "sparkcdc", "verify", str(pipeline), "--json")
        assert '"equal"' in verdict and '"different"' not in verdict, verdict

    # the JVM side came through Spark's package mechanism, as exactly the jars a checkout's
    # Maven step copies (no second Jackson, Parquet or Hadoop next to PySpark's)
    jars = {ivy_artifact(p.name) for p in (ivy / "jars").glob("*.jar")}
    assert jars == checkout_spark_artifacts()
    assert (user_home / "lakehouse" / mysql_db / "orders" / "_delta_log").is_dir()
    assert not python.resolve().is_relative_to(ROOT)

"""What building sparkcdc from source needs, and what it says when something is missing
(setup.py): a failed compile names the compiler and header packages; the native MySQL
snapshot reader is built where the MariaDB client library is found, left out where it is
not (a PostgreSQL-only machine), and required when asked for. Nothing is compiled here but
the one attempt meant to fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def setup_py(*args: str, env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(cwd / "setup.py"), *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def without_mariadb_config(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has no ``mariadb_config`` and whose pkg-config finds no
    libmariadb: a machine without libmariadb-dev."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("pkg-config", "cc", "gcc"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return {"PATH": str(bin_dir), "PKG_CONFIG_LIBDIR": str(tmp_path / "no-pc-files")}


def test_without_the_mariadb_client_library_the_reader_is_left_out_saying_so(
    tmp_path: Path,
) -> None:
    done = setup_py("--name", env=without_mariadb_config(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "building without the native MySQL snapshot reader" in done.stderr
    assert "libmariadb-dev" in done.stderr


def test_the_reader_can_be_required_or_left_out(tmp_path: Path) -> None:
    required = setup_py(
        "--name", env={**without_mariadb_config(tmp_path), "SPARKCDC_MYSQL_NATIVE": "1"}
    )
    assert required.returncode != 0
    assert (
        "libmariadb-dev pkg-config" in required.stderr
        and "SPARKCDC_MYSQL_NATIVE=1" in required.stderr
    )
    left_out = setup_py("--name", env={"SPARKCDC_MYSQL_NATIVE": "0"})
    assert left_out.returncode == 0 and "building without" in left_out.stderr
    wrong = setup_py("--name", env={"SPARKCDC_MYSQL_NATIVE": "yes"})
    assert wrong.returncode != 0 and "valid values: auto, 0, 1" in wrong.stderr


def test_with_the_library_nothing_is_said() -> None:
    done = setup_py("--name", env={})
    assert done.returncode == 0 and "building without" not in done.stderr


def test_a_missing_compiler_is_named_with_the_packages_that_bring_it(tmp_path: Path) -> None:
    copy = tmp_path / "src-tree"
    shutil.copytree(ROOT / "csrc", copy / "csrc")
    for name in ("setup.py", "pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy(ROOT / name, copy / name)
    shutil.copytree(
        ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    done = setup_py(
        "build_ext",
        "--build-temp",
        str(tmp_path / "temp"),
        "--build-lib",
        str(tmp_path / "lib"),
        env={"CC": str(tmp_path / "no-such-cc"), "SPARKCDC_MYSQL_NATIVE": "0"},
        cwd=copy,
    )
    assert done.returncode != 0
    assert "sparkcdc's C extensions need a C compiler and this Python's headers" in done.stderr
    assert "apt-get install gcc python3-dev" in done.stderr

"""A Python environment for a cluster's executors with sparkcdc installed from its wheel.

The test harness's own venv has sparkcdc as an editable install of this checkout: executors
running that interpreter would import the source tree, and a module or a C extension the
wheel forgets would go unnoticed. So the executors get a venv of their own, where sparkcdc
is installed from the wheel built from this checkout (``pip wheel``, C extensions
compiled), as a user installs it on every node. Its other dependencies (PySpark, pyarrow,
the drivers) come from the harness's venv through a path file: installing them again
would cost minutes and test pip, not sparkcdc. Path files in that folder (the editable
install's) are not read from there, so the checkout stays out of the executors' reach.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build_wheel(folder: Path) -> Path:
    """``pip wheel`` of this checkout into ``folder``: the wheel users install."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(folder), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = folder.glob("sparkcdc-*.whl")
    return wheel


def worker_python(folder: Path) -> Path:
    """A venv in ``folder`` with the wheel installed; returns its ``python``."""
    wheel = build_wheel(folder / "dist")
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "harness-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    subprocess.run(
        [*pip, "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
    )
    return python


def imported_from(python: Path) -> Path:
    """Where ``python`` imports sparkcdc from (a test checks: not this checkout)."""
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import sparkcdc.connectors.mysql.binlog.rowdecode._rowdecode as m;"
            "import sparkcdc; print(sparkcdc.__file__)",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd="/",
    ).stdout.strip()
    return Path(found)

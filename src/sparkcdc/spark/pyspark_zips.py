"""Spark's Python processes import PySpark from the installed package, not from its zips.

Spark starts every Python process of a session (the data-source planners, the streaming
source runner, the worker daemons) with ``$SPARK_HOME/python/lib/pyspark.zip`` and the
py4j zip first on ``PYTHONPATH``. With a pip-installed PySpark those zips hold the very
modules installed beside them, but as source only: Python caches no compiled modules for a
zip, so each such process compiled PySpark again, ~0.8 CPU-s of the ~1 s it took to start
(a cold ``sparkcdc run`` starts six; every query start runs a fresh streaming runner).

``python -m sparkcdc.spark.pyspark_zips`` (run by ``scripts/bootstrap.sh``) writes a ``.pth``
file into the site-packages that holds PySpark. Python runs its line at every start of that
environment's interpreter: it drops from ``sys.path`` the zips of that PySpark's own
``python/lib`` folder, and only those, so the same modules come from the installed package
and its compiled cache. A ``SPARK_HOME`` of another Spark keeps its zips (its PySpark may be
another version); an interpreter of another environment never reads the file.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

#: The file's name in site-packages (Python reads ``*.pth`` files there in name order).
PTH_NAME = "sparkcdc-pyspark-zips.pth"


def pyspark_lib() -> Path | None:
    """The installed PySpark's ``python/lib`` folder (its zips), or None without one."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return None
    lib = Path(spec.origin).parent / "python" / "lib"
    return lib if (lib / "pyspark.zip").is_file() else None


def pth_line(lib: Path) -> str:
    """The ``.pth`` line: an ``import`` line, which ``site`` executes (other lines are paths)."""
    folder = os.path.realpath(lib)
    return (
        "import os, sys; sys.path[:] = [p for p in sys.path if not (p.endswith('.zip') and "
        f"os.path.realpath(os.path.dirname(p)) == {folder!r})]\n"
    )


def install() -> Path | None:
    """Write the ``.pth`` file beside the installed PySpark; returns its path (None: no
    PySpark with zips here, nothing to do)."""
    lib = pyspark_lib()
    if lib is None:
        return None
    target = lib.parents[2] / PTH_NAME  # site-packages/pyspark/python/lib -> site-packages
    target.write_text(pth_line(lib), encoding="utf-8")
    return target


if __name__ == "__main__":
    written = install()
    print(written if written is not None else "no pip-installed PySpark here", file=sys.stderr)

"""The ``.pth`` file bootstrap writes (spark/pyspark_zips.py): an interpreter of this
environment started with the installed PySpark's zips on ``PYTHONPATH``, as Spark starts its
Python processes, imports PySpark and py4j from the installed packages; zips elsewhere stay."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from sparkcdc.spark.pyspark_zips import PTH_NAME, pyspark_lib

SHOW = "import sys, pyspark, py4j; print(pyspark.__file__); print(py4j.__file__); print(sys.path)"


def started_with(pythonpath: list[Path], code: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_the_installed_pyspark_zips_give_way_to_the_installed_packages() -> None:
    lib = pyspark_lib()
    assert lib is not None
    assert (lib.parents[2] / PTH_NAME).is_file(), "run scripts/bootstrap.sh"
    zips = sorted(lib.glob("*.zip"))
    assert len(zips) == 2  # pyspark.zip and py4j's
    pyspark_file, py4j_file, path = started_with(zips, SHOW)
    assert ".zip" not in pyspark_file and ".zip" not in py4j_file
    assert not any(str(z) in path for z in zips)


def test_zips_of_another_folder_stay_on_the_path(tmp_path: Path) -> None:
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("elsewhere_module.py", "WHERE = 'zip'\n")
    (line,) = started_with([other], "import elsewhere_module as m; print(m.__file__)")
    assert line == str(other / "elsewhere_module.py")

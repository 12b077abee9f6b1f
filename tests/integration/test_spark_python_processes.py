"""Spark's own Python processes (here a worker) import PySpark from the installed package
and its compiled cache, not from the source-only ``pyspark.zip`` Spark puts first on their
path (spark/pyspark_zips.py)."""

from __future__ import annotations

from typing import Any


def where_pyspark_is(_: Any) -> str:
    import pyspark

    return str(pyspark.__file__)


def test_a_python_worker_imports_the_installed_pyspark(spark: Any) -> None:
    (found,) = spark.sparkContext.parallelize([0], 1).map(where_pyspark_is).collect()
    assert ".zip" not in found and found.endswith("pyspark/__init__.py"), found

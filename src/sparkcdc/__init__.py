"""sparkcdc: change data capture for Apache Spark.

``sparkcdc.register(spark)`` makes the package's data sources (``format("mysql-cdc")`` and
friends) available on a SparkSession. It is the one supported way to do so.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0.dev0"

__all__ = ["__version__", "data_sources", "register"]


def data_sources() -> list[type[Any]]:
    """Every ``pyspark.sql.datasource.DataSource`` class this package provides."""
    from sparkcdc.spark.registry import DATA_SOURCES

    return list(DATA_SOURCES)


def register(spark: Any) -> list[str]:
    """Register every sparkcdc data source on ``spark``; return their format names.
    The registered classes carry the session's counter of the source's retries in Spark
    tasks (spark/read_counters.py)."""
    from sparkcdc.spark.registry import register as register_sources

    return register_sources(spark)

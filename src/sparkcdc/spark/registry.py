"""The data sources that ``sparkcdc.register`` installs on a SparkSession: one
:class:`CdcDataSource` subclass per registered connector, importable by name from this
module (Spark pickles data source classes by reference)."""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.connectors.registry import connectors
from sparkcdc.spark.read_counters import counting_sources
from sparkcdc.spark.source import CdcDataSource


def _data_source(found: Connector[Any]) -> type[CdcDataSource]:
    name = f"{found.name.capitalize()}CdcDataSource"
    cls = type(name, (CdcDataSource,), {"connector_name": found.name, "__module__": __name__})
    globals()[name] = cls
    return cls


DATA_SOURCES: tuple[type[Any], ...] = tuple(_data_source(c) for c in connectors())


def register(spark: Any) -> list[str]:
    """Register every sparkcdc data source on ``spark``; return their format names. The
    registered classes carry the session's counter of the source's retries in Spark tasks
    (spark/read_counters.py)."""
    names = []
    for source in counting_sources(spark, DATA_SOURCES):
        spark.dataSource.register(source)
        names.append(source.name())
    return names

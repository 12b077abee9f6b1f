"""The data sources that ``sparkcdc.register`` installs on a SparkSession: one
:class:`CdcDataSource` subclass per registered connector, importable by name from this
module (Spark pickles data source classes by reference)."""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.connectors.registry import connectors
from sparkcdc.spark.source import CdcDataSource


def _data_source(found: Connector[Any]) -> type[CdcDataSource]:
    name = f"{found.name.capitalize()}CdcDataSource"
    cls = type(name, (CdcDataSource,), {"connector_name": found.name, "__module__": __name__})
    globals()[name] = cls
    return cls


DATA_SOURCES: tuple[type[Any], ...] = tuple(_data_source(c) for c in connectors())

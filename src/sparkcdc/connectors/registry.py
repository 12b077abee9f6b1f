"""Source connectors by name: the pipeline's ``source: type:`` and the Spark format.

The table below says which folder under ``connectors/`` holds a connector; the folder's
``__init__`` declares it as ``CONNECTOR`` (:class:`~sparkcdc.connectors.connector.Connector`)
and imports only its options module, so listing or validating connectors imports neither a
driver nor pyspark. Adding a database: a folder with a dialect (snapshot/dialect.py) and a
``CONNECTOR``, and one line in :data:`_CONNECTORS` (as sinks do in sinks/registry.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.core.errors import OptionError

#: Source type name -> the package whose ``CONNECTOR`` declares it.
_CONNECTORS: Mapping[str, str] = {
    "mysql": "sparkcdc.connectors.mysql",
    "postgres": "sparkcdc.connectors.postgres",
}

#: The names a pipeline file's ``source: type:`` accepts.
SOURCE_TYPES = tuple(_CONNECTORS)


def connector(name: str) -> Connector[Any]:
    """The connector called ``name`` (a pipeline's source type), or an error listing them."""
    package = _CONNECTORS.get(name.lower())
    if package is None:
        raise OptionError(f"source: invalid type '{name}'. Valid values: {', '.join(SOURCE_TYPES)}")
    declared: Connector[Any] = importlib.import_module(package).CONNECTOR
    return declared


def connectors() -> list[Connector[Any]]:
    """Every registered connector (Spark registers one data source per connector)."""
    return [connector(name) for name in SOURCE_TYPES]

"""Source connectors by name: the pipeline's ``source: type:`` and the Spark format.

Adding a database is a folder under ``connectors/`` with a dialect (snapshot/dialect.py)
and one entry here. Entries name their functions by import path, so listing or validating
connectors imports no driver and no pyspark.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId


@dataclass(frozen=True)
class Connector:
    """One source connector.

    ``config``: ``parse_config(options) -> config`` (raises OptionError naming the option);
    ``source``: a class built from that config, an ``IncrementalSource``;
    ``one_table``: ``(TableId) -> options`` selecting exactly that table (verify).
    """

    name: str
    format: str
    config: str
    source: str
    one_table: str

    def parse_config(self, options: Mapping[str, str]) -> Any:
        return _load(self.config)(options)

    def create_source(self, config: Any) -> Any:
        return _load(self.source)(config)

    def table_options(self, table: TableId) -> dict[str, str]:
        options: dict[str, str] = _load(self.one_table)(table)
        return options


CONNECTORS: dict[str, Connector] = {
    c.name: c
    for c in (
        Connector(
            name="mysql",
            format="mysql-cdc",
            config="sparkcdc.connectors.mysql.config:parse_config",
            source="sparkcdc.connectors.mysql.source:MySqlCdcSource",
            one_table="sparkcdc.connectors.mysql.config:one_table_options",
        ),
    )
}

SOURCE_TYPES: tuple[str, ...] = tuple(CONNECTORS)


def connector(name: str) -> Connector:
    """The connector called ``name`` (a pipeline's source type), or an error listing them."""
    found = CONNECTORS.get(name.lower())
    if found is None:
        raise OptionError(f"source: invalid type '{name}'. Valid values: {', '.join(SOURCE_TYPES)}")
    return found


def _load(path: str) -> Any:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)

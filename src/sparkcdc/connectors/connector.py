"""What a connector folder declares so the registry can find it: its ``CONNECTOR``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sparkcdc.core.options import OptionSpec
from sparkcdc.core.table import TableId

Config = TypeVar("Config")


@dataclass(frozen=True)
class Connector(Generic[Config]):
    """A source connector as :mod:`sparkcdc.connectors.registry` finds it by name.

    ``parse`` runs when a pipeline file is validated, offline and fast, so it and the module
    declaring ``CONNECTOR`` import neither pyspark nor drivers; ``create`` builds the
    engine-neutral source (snapshot/driver.py) over the connector's dialect.
    """

    #: The pipeline's ``source: type:``.
    name: str
    #: The Spark format (``spark.readStream.format(...)``).
    format: str
    #: Options -> the validated config; raises OptionError naming the option.
    parse: Callable[[Mapping[str, str]], Config]
    #: Config -> an ``IncrementalSource`` (no connection opened yet).
    create: Callable[[Config], Any]
    #: A table -> options that capture exactly it (``sparkcdc verify`` reads one at a time).
    one_table: Callable[[TableId], dict[str, str]]
    #: The option specs ``parse`` validates against (the README's table is made of them).
    specs: tuple[OptionSpec, ...] = ()
    #: The options a pipeline's ``tables: namespace.table`` fills (Flink CDC's syntax): the
    #: namespace (a MySQL database, a PostgreSQL schema) and the table patterns.
    tables_options: tuple[str, str] = ("database-name", "table-name")

    def parse_config(self, options: Mapping[str, str]) -> Config:
        return self.parse(options)

    def create_source(self, config: Config) -> Any:
        return self.create(config)

    def table_options(self, table: TableId) -> dict[str, str]:
        return self.one_table(table)

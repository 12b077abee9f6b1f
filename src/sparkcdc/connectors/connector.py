"""What a connector folder declares so the registry can find it: its ``CONNECTOR``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from sparkcdc.core.options import OptionSpec
from sparkcdc.core.table import TableId

if TYPE_CHECKING:  # the framework imports pyarrow: only when a source is made
    from sparkcdc.snapshot.dialect import Dialect
    from sparkcdc.snapshot.driver import IncrementalSource
    from sparkcdc.snapshot.handle import SourceHandle

Config = TypeVar("Config")


@dataclass(frozen=True)
class Connector(Generic[Config]):
    """A source connector as :mod:`sparkcdc.connectors.registry` finds it by name.

    ``parse`` runs when a pipeline file is validated, offline and fast, so it and the module
    declaring ``CONNECTOR`` import neither pyspark nor drivers; ``create`` builds the
    connector's dialect (snapshot/dialect.py), over which the framework makes the stream's
    source (:meth:`source`) and the read-only handle the other layers ask (:meth:`handle`).
    """

    #: The pipeline's ``source: type:``.
    name: str
    #: The Spark format (``spark.readStream.format(...)``).
    format: str
    #: Options -> the validated config; raises OptionError naming the option.
    parse: Callable[[Mapping[str, str]], Config]
    #: Config -> the connector's dialect (no connection opened yet).
    create: Callable[[Config], Dialect[Any, Any]]
    #: A table -> options that capture exactly it (``sparkcdc verify`` reads one at a time).
    one_table: Callable[[TableId], dict[str, str]]
    #: The option specs ``parse`` validates against (the README's table is made of them).
    specs: tuple[OptionSpec, ...] = ()
    #: Config -> the name above a table's namespace (transforms' ``__namespace_name__``):
    #: PostgreSQL's database; None where tables have no such level (MySQL).
    namespace: Callable[[Config], str | None] = lambda _config: None

    def parse_config(self, options: Mapping[str, str]) -> Config:
        return self.parse(options)

    def source(self, config: Config) -> IncrementalSource[Any, Any]:
        """The engine-neutral stream source over the connector's dialect (what Spark's data
        source drives; no connection opened yet)."""
        from sparkcdc.snapshot.driver import IncrementalSource

        return IncrementalSource(self.create(config))

    def handle(self, config: Config) -> SourceHandle[Any, Any]:
        """Read-only questions to the source (pipeline, command line, verify)."""
        from sparkcdc.snapshot.handle import SourceHandle

        return SourceHandle(self.create(config))

    def one_table_of(self, options: Mapping[str, str], table: TableId) -> dict[str, str]:
        """``options`` narrowed to capture exactly ``table``: its own table options replace
        whichever of ``tables`` or the connector's pair of options selected it."""
        one = self.one_table(table)
        kept = {k: v for k, v in options.items() if k.lower() not in one and k.lower() != "tables"}
        return kept | one

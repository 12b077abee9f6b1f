"""What the sink conformance suite needs of a sink: one small fixture class per sink.

The suite (tests/conformance/test_sinks.py) is written against this interface, the sink's
public surface (``Sink``, a write plan) and its declared capabilities
(sinks/capabilities.py), so every registered sink is held to the same properties as far
as it declares them. A new sink adds a subclass here and an entry in ``SINK_FIXTURES``
(tests/conformance/conftest.py); test_every_sink_type_has_a_fixture fails until it does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.registry import make_sink, sink_type
from tests.conformance.connector import BadOption


class SinkUnderTest(ABC):
    """A configured sink on its real storage, as the sink conformance tests drive it."""

    #: The sink's registry name (``sink: type:``).
    name: str
    #: What tells this fixture apart in test ids (a sink type may have several).
    variant: str

    @abstractmethod
    def options(self, scratch: Path, stem: str) -> dict[str, str]:
        """Sink block options writing into a place of its own for one test (``stem`` is
        unique to it; ``scratch`` an empty folder)."""

    def create(self, options: dict[str, str], pipeline: str) -> Sink:
        """The sink as a pipeline makes it (the registry)."""
        return make_sink(self.name, options, None, pipeline_id=pipeline)

    def declared(self, options: dict[str, str]) -> SinkCapabilities:
        """What the sink type declares for ``options``."""
        declared = sink_type(self.name)
        return declared.capabilities(declared.parse(options))

    def mirror(self, spark: Any, sink: Sink, table: SinkTable) -> dict[Any, tuple[Any, ...]]:
        """The target read as the table it mirrors, by its first column: an upsert target's
        rows, a history's changes replayed. By default what ``verify`` reads."""
        rows = sink.snapshot(spark, table).rows.collect()
        return {r[0]: tuple(r) for r in rows}

    def repeated(self, spark: Any, sink: Sink, table: SinkTable) -> int:
        """Changes the target holds more than once (a history written twice)."""
        return sink.snapshot(spark, table).repeated_changes

    def exists(self, spark: Any, sink: Sink, table: SinkTable) -> bool | None:
        """Whether the target exists (None: the sink's targets are streams, which a drop
        leaves)."""
        return None

    @abstractmethod
    def bad_options(self) -> list[BadOption]:
        """Wrong options and the message each must give (parsed offline)."""

    def table(self, stem: str) -> TableId:
        """The source table a test writes."""
        return TableId("conf", stem)

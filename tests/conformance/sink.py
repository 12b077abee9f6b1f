"""What the sink conformance suite needs of a sink: one small fixture class per sink.

The suite (tests/conformance/test_sinks.py) is written against this interface, the sink's
public surface (``Sink``, a write plan) and its declared capabilities
(sinks/capabilities.py), so every registered sink is held to the same properties as far
as it declares them. A new sink adds a subclass here and an entry in ``SINK_FIXTURES``
(tests/conformance/conftest.py); test_every_sink_type_has_a_fixture fails until it does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.registry import make_sink, sink_type
from tests.conformance.connector import BadOption


@dataclass(frozen=True)
class TargetRead:
    """A target as a test reads it back."""

    #: The rows of the table it mirrors, by their first column.
    rows: dict[Any, tuple[Any, ...]]
    #: Changes it holds more than once (a batch written twice).
    repeated: int
    #: The source offset it records (None: it records none, or is not read by ``verify``).
    offset: str | None = None


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

    def read_back(self, spark: Any, sink: Sink, table: SinkTable) -> TargetRead:
        """The target read as the table it mirrors (an upsert target's rows, a history's
        changes replayed) with what it holds twice, in one read. By default what
        ``verify`` reads."""
        snapshot = sink.snapshot(spark, table)
        rows = {r[0]: tuple(r) for r in snapshot.rows.collect()}
        return TargetRead(rows, snapshot.repeated_changes, snapshot.source_offset)

    def mirror(self, spark: Any, sink: Sink, table: SinkTable) -> dict[Any, tuple[Any, ...]]:
        """The target's rows by their first column (:meth:`read_back`)."""
        return self.read_back(spark, sink, table).rows

    def exists(self, spark: Any, sink: Sink, table: SinkTable) -> bool | None:
        """Whether the target exists (None: the sink's targets are streams, which a drop
        leaves)."""
        return None

    def check_created(  # noqa: B027 (most sinks create nothing to check)
        self, spark: Any, sink: Sink, table: SinkTable, options: dict[str, str]
    ) -> None:
        """What the sink's options asked of a target it created holds (Delta: its
        clustering and table properties); nothing by default."""

    def check_comments(  # noqa: B027 (sinks without tables keep no comments)
        self, spark: Any, sink: Sink, table: SinkTable, columns: Sequence[str]
    ) -> None:
        """The target's ``columns`` have ``table``'s comments for them (and the table its
        own, where the sink keeps it); nothing by default."""

    @abstractmethod
    def bad_options(self) -> list[BadOption]:
        """Wrong options and the message each must give (parsed offline)."""

    def table(self, stem: str) -> TableId:
        """The source table a test writes."""
        return TableId("conf", stem)

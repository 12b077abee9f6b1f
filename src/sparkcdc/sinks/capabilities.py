"""What a sink can do, declared as data (after Flink CDC's ``MetadataApplier``
``getSupportedSchemaEvolutionTypes`` / ``acceptsSchemaEvolutionType`` and dlt's destination
capabilities).

Every sink type declares, for a configuration of it, which table events it applies to its
targets, how its targets take rows, what a replayed batch does there, and whether
``sparkcdc verify`` can read them back. The pipeline decides from the declaration alone:
an event the sink does not apply is taken as ``schema.change.behavior`` says for a change
the sink cannot take (pipeline/applier.py), ``verify`` refuses a sink it cannot read
before it starts anything, and the sink conformance suite (tests/conformance/) runs the
tests each declaration promises. A sink never has to be tried to find out.

No pyspark here: ``SinkType`` declarations import this offline.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from sparkcdc.core.table_events import (
    COLUMN_CHANGE_TYPES,
    CREATE_TABLE,
    DROP_TABLE,
    SCHEMA_CHANGE_TYPES,
)

#: Write modes: the target mirrors the table (the last change per key), or holds every
#: change with its change type, version and timestamp (a history).
UPSERT = "upsert"
APPEND = "append"
WRITE_MODES = (UPSERT, APPEND)

#: Delivery guarantees: a batch written twice (Spark replays a batch after a crash) lands
#: once, or at least once (readers of the target must tolerate duplicates).
EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
DELIVERIES = (EXACTLY_ONCE, AT_LEAST_ONCE)


@dataclass(frozen=True)
class SinkCapabilities:
    """A configured sink's declaration."""

    #: The schema change types (core/table_events.py) the sink applies to its targets;
    #: ``create.table`` always (a new table's target is created when the sink opens it).
    applies: frozenset[str]
    #: How the targets take rows: :data:`UPSERT` or :data:`APPEND`.
    write_mode: str
    #: :data:`EXACTLY_ONCE` or :data:`AT_LEAST_ONCE`.
    delivery: str
    #: Whether ``sparkcdc verify`` reads the targets back (``Sink.snapshot``).
    verifiable: bool
    #: Whether the targets hold every change's old row (``update_preimage``, a delete's
    #: whole row): a history or a changelog topic. A source that has no old rows
    #: (PostgreSQL's ``changelog-mode: upsert``) is refused with such a sink up front.
    needs_before_images: bool = False
    #: Whether the targets it creates take the source's table and column comments
    #: (``include-comments.enabled``, core/comments.py); a stream's messages have none.
    keeps_comments: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.applies) - set(SCHEMA_CHANGE_TYPES)
        if unknown or CREATE_TABLE not in self.applies:
            raise ValueError(f"a sink applies {CREATE_TABLE} and known types, not {unknown}")
        if self.write_mode not in WRITE_MODES or self.delivery not in DELIVERIES:
            raise ValueError(f"unknown write mode or delivery: {self.write_mode}, {self.delivery}")

    def accepts(self, kind: str) -> bool:
        """Whether the sink applies changes of type ``kind`` (Flink CDC's
        ``acceptsSchemaEvolutionType``)."""
        return kind in self.applies

    def refused(self, kinds: Collection[str]) -> list[str]:
        """Of ``kinds``, those the sink does not apply, in Flink CDC's order."""
        return [k for k in SCHEMA_CHANGE_TYPES if k in kinds and k not in self.applies]

    @property
    def exactly_once(self) -> bool:
        return self.delivery == EXACTLY_ONCE


#: Every schema change type.
ALL_CHANGES = frozenset(SCHEMA_CHANGE_TYPES)
#: Column changes and the table's creation and drop, without truncates: what a target
#: applies that keeps a history (a truncate does not rewrite history).
NO_TRUNCATE = frozenset({CREATE_TABLE, DROP_TABLE, *COLUMN_CHANGE_TYPES})

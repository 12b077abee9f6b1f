"""Table events: what happens to a captured table besides its rows.

A row change says what happened to one key; a table event says what happened to the table
as a whole, which no row can: it was created, its columns changed, it was truncated or
dropped, or the log that held its changes was lost. The vocabulary is Flink CDC's
(``SchemaChangeEvent`` and its ``SchemaChangeEventType`` names, which the sink options
``include.schema.changes`` / ``exclude.schema.changes`` use), plus the lost log, which
Flink CDC has no event for.

The source records every table event in the end offset of a batch of its own (no rows;
docs/design.md, "Schema changes", "A lost log"), the only channel from the source's
planner to a consumer. ``SourceOffset.table_events`` (snapshot/offset.py) decodes them
once per batch, comparing the batch's end offset with the previous batch's; the pipeline
applies them through one applier (pipeline/applier.py), as far as the sink declares it
can (``SinkCapabilities``, sinks/capabilities.py).

Pure data: no pyspark, no connector. A table's columns travel as the connector's own JSON
of the table (``Dialect.table_to_json``), which only the connector reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sparkcdc.core.table import TableId

#: Flink CDC's schema change types, by the names its sink options use.
ADD_COLUMN = "add.column"
ALTER_COLUMN_TYPE = "alter.column.type"
CREATE_TABLE = "create.table"
DROP_COLUMN = "drop.column"
DROP_TABLE = "drop.table"
RENAME_COLUMN = "rename.column"
TRUNCATE_TABLE = "truncate.table"

#: Every type, in Flink CDC's order.
SCHEMA_CHANGE_TYPES = (
    ADD_COLUMN,
    ALTER_COLUMN_TYPE,
    CREATE_TABLE,
    DROP_COLUMN,
    DROP_TABLE,
    RENAME_COLUMN,
    TRUNCATE_TABLE,
)
#: The types a change of a table's columns is made of (which ones, only a comparison with
#: the target's columns tells: pipeline/evolution.py).
COLUMN_CHANGE_TYPES = frozenset({ADD_COLUMN, ALTER_COLUMN_TYPE, DROP_COLUMN, RENAME_COLUMN})


@dataclass(frozen=True)
class ColumnMoves:
    """What a change did to columns that the columns before and after it cannot tell:
    which were renamed (old name -> new name) and which dropped (a column dropped and
    added again under its name is in ``dropped``: its old values are gone). Targets that
    mirror the table (``schema.change.behavior: evolve``) rename and drop from this."""

    renamed: Mapping[str, str] = field(default_factory=dict)
    dropped: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The offset entry's keys (none when the change renamed and dropped nothing)."""
        data: dict[str, Any] = {}
        if self.renamed:
            data["renamed"] = dict(self.renamed)
        if self.dropped:
            data["dropped"] = list(self.dropped)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ColumnMoves:
        return cls(dict(data.get("renamed") or {}), tuple(data.get("dropped") or ()))


#: A change that renamed and dropped nothing.
NO_MOVES = ColumnMoves()


@dataclass(frozen=True)
class TableEvent:
    """Something that happened to a captured table, as of a batch's end offset."""

    table: TableId
    #: The statement (or what happened) as the source tells it: for messages only, never
    #: parsed again.
    statement: str

    #: The schema change type a sink must apply to take the event (its declared
    #: capabilities, sinks/capabilities.py); column changes have several, see
    #: :class:`AlterColumnsEvent`.
    kind: ClassVar[str] = ""

    @property
    def short(self) -> str:
        """The statement on one line, cut for a log line or a message."""
        text = " ".join(self.statement.split())
        return text if len(text) <= 160 else text[:157] + "..."


@dataclass(frozen=True)
class CreateTableEvent(TableEvent):
    """A table the source captures from this batch on that the consumer did not know: made
    while the stream runs (``CREATE TABLE``, a ``RENAME`` to a matching name) or kept from
    the offset until the log reaches its drop."""

    #: The table as the source captures it (the connector's JSON: columns, key).
    columns: Mapping[str, Any]

    kind = CREATE_TABLE


@dataclass(frozen=True)
class AlterColumnsEvent(TableEvent):
    """The table's columns at the batch's end, when they may differ from what the consumer
    holds: Flink CDC's add / drop / rename / alter-type column events in one, since which
    of them it is depends on the target it reaches (a target kept wider under ``lenient``
    takes a narrower type as no change)."""

    #: The table after the change (the connector's JSON of it).
    columns: Mapping[str, Any]
    #: The columns the change renamed and dropped (the columns alone cannot tell).
    moves: ColumnMoves = NO_MOVES


@dataclass(frozen=True)
class TruncateTableEvent(TableEvent):
    """``TRUNCATE`` (PostgreSQL: a pgoutput Truncate): every row of the table is gone, and
    no row change says which."""

    kind = TRUNCATE_TABLE


@dataclass(frozen=True)
class DropTableEvent(TableEvent):
    """``DROP TABLE`` / ``DROP DATABASE``, a ``RENAME`` away from a captured name, or a
    table gone from the server while its log was lost: it has no more changes, and a
    table created under the name later is another table."""

    kind = DROP_TABLE


@dataclass(frozen=True)
class LostLogEvent(TableEvent):
    """The log from the stream's position was lost (a purged binlog, a dropped slot) and
    the table's rows are read again (``sparkcdc recover``): the consumer empties its copy
    first, since no row says which rows the lost changes deleted. Emptying a target is
    what a truncate asks of a sink, so a sink that applies truncates applies this."""

    kind = TRUNCATE_TABLE


#: The events a batch's end offset can mark on a table, in the order a consumer applies
#: them after the batch's column changes.
MARKED_EVENTS: tuple[type[TableEvent], ...] = (TruncateTableEvent, DropTableEvent, LostLogEvent)

"""A change of a captured table's columns (or a TRUNCATE of it) found in the log, as the
driver plans around it.

A micro-batch never spans such a change: the batch before it ends at ``boundary`` (the
change's transaction start), and the change itself is a batch of its own that moves the
position to ``after`` and puts the table's new columns into the offset (docs/design.md,
"Schema changes"). Everything before the change is written before it is applied, and
every row after it is decoded with the new columns: Flink CDC's flush-before-apply, as
batch boundaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from sparkcdc.core.position import LogPosition
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import NO_MOVES, ColumnMoves

P = TypeVar("P", bound=LogPosition)
T = TypeVar("T")

#: Re-exported: the columns a change renamed and dropped are core vocabulary now
#: (core/table_events.py), which the connectors name from here.
__all__ = ["NO_MOVES", "ColumnMoves", "SchemaChange"]


@dataclass(frozen=True)
class SchemaChange(Generic[P, T]):
    """The first change of a captured table's columns in a log range (or the creation of
    a table to capture, see ``created``)."""

    table_id: TableId
    #: Where the batch before the change ends (the start of the change's transaction).
    boundary: P
    #: The position right after the change.
    after: P
    #: The statement, as the log has it (for messages; never parsed again).
    statement: str
    #: The table after the change; None when it cannot be followed (``problem`` says why).
    table: T | None
    problem: str = ""
    #: The statement created a table the table options match that is not captured yet
    #: (CREATE TABLE, or a RENAME to its name): ``table_id`` names it, ``table`` is None.
    created: bool = False
    #: The columns it renamed and dropped.
    moves: ColumnMoves = NO_MOVES
    #: The statement removed every row (TRUNCATE): ``table`` is the table unchanged. Its
    #: batch records it in the table's offset entry (``"truncated"``) for the consumer:
    #: no row says so (``truncate.handling.mode``).
    truncated: bool = False
    #: Another table was put in the table's place (an online schema change tool's RENAME
    #: swap): ``table`` is the one swapped in. Its rows are the tool's copies, written
    #: under another name, so the driver reads the table again (a column renamed by the
    #: tool is a drop and an add here, filled by that re-read).
    swapped: bool = False
    #: The statement dropped these captured tables (``DROP TABLE``, ``DROP DATABASE``;
    #: ``table_id`` is the first, ``table`` it unchanged). Their batch records the drop in
    #: their offset entries (``"table_dropped"``) and the next batch forgets them.
    dropped_tables: tuple[TableId, ...] = ()
    #: A dropped table's own statement, where ``statement`` tells of several tables that
    #: the log did not change in one statement (PostgreSQL's catalog, read once for all
    #: the tables gone in a batch); the others' entries take ``statement``.
    dropped_statements: Mapping[TableId, str] = field(default_factory=dict)
    #: Columns the statement gave values in the rows already there without a row in the
    #: log (an added column's default, a retyped column's converted values): the driver
    #: reads the table's rows again, as for a swap, so every copy gets them.
    rewritten: tuple[str, ...] = ()

    def statement_of(self, table_id: TableId) -> str:
        """The statement that dropped ``table_id`` (of ``dropped_tables``)."""
        return self.dropped_statements.get(table_id, self.statement)

    def describe(self) -> str:
        text = " ".join(self.statement.split())
        return f"{self.table_id} at {self.boundary} ({text[:200]})"

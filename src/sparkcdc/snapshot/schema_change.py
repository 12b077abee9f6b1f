"""A change of a captured table's columns found in the log, as the driver plans around it.

A micro-batch never spans such a change: the batch before it ends at ``boundary`` (the
change's transaction start), and the change itself is a batch of its own that moves the
position to ``after`` and puts the table's new columns into the offset (docs/design.md,
"Schema changes"). Everything before the change is written before it is applied, and
every row after it is decoded with the new columns: Flink CDC's flush-before-apply, as
batch boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from sparkcdc.core.position import LogPosition
from sparkcdc.core.table import TableId

P = TypeVar("P", bound=LogPosition)
T = TypeVar("T")


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

    def describe(self) -> str:
        text = " ".join(self.statement.split())
        return f"{self.table_id} at {self.boundary} ({text[:200]})"

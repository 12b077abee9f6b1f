"""A batch's DataFrames per table, each made when first asked for.

Making one table's typed changelog out of a batch of several (the envelope's rows of that
table, unpacked, shaped for its target) costs a few hundred milliseconds of the driver's
time: dozens of Py4J calls and the JVM's analysis of each step. A pipeline of 1000 tables
whose batch changes three of them would pay that 1000 times, for DataFrames no sink reads:
sinks skip the tables a batch has no rows of (``TargetWrite.has_changes``) before they ask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from sparkcdc.core.table import TableId


class LazyTables(Mapping[TableId, Any]):
    """``make(table)`` for each of ``tables``, called on the first access of that table
    and kept. Iterating gives the tables without making anything; ``items()`` and
    ``values()`` make every one (ask for the tables a batch has rows of instead)."""

    def __init__(self, tables: Iterable[TableId], make: Callable[[TableId], Any]) -> None:
        self._tables = list(dict.fromkeys(tables))
        self._known = set(self._tables)
        self._make = make
        self._made: dict[TableId, Any] = {}

    def __getitem__(self, table: TableId) -> Any:
        if table not in self._made:
            if table not in self._known:
                raise KeyError(table)
            self._made[table] = self._make(table)
        return self._made[table]

    def __iter__(self) -> Iterator[TableId]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __contains__(self, table: object) -> bool:
        return table in self._known

    @property
    def made(self) -> frozenset[TableId]:
        """The tables made so far (what a batch paid for)."""
        return frozenset(self._made)

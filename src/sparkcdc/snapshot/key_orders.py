"""Each table's key order, asked of the dialect once per process.

A key order can be costly to build (MySQL reads a collation's weights from the server), so
the driver's planning and each executor's log reads keep one per table. It is taken from
the table given, not from a list of captured tables: an executor's copy of the source was
made when the query started, before tables created since were discovered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.dialect import T
from sparkcdc.snapshot.keys import KeyOrder


class KeyOrders(Generic[T]):
    def __init__(self, build: Callable[[T], KeyOrder]) -> None:
        self._build = build
        self._orders: dict[TableId, KeyOrder] = {}

    def of(self, table: T) -> KeyOrder:
        table_id = table.table_id
        if table_id not in self._orders:
            self._orders[table_id] = self._build(table)
        return self._orders[table_id]

    def forget(self, table_id: TableId) -> None:
        """The table is gone: one of its name later is another table."""
        self._orders.pop(table_id, None)

"""Console sink: every change printed in Flink's print format, for trying things out.

``+I[1001, 2021-09-17, 10:20:30, 1, 102, alice]`` for an insert, ``-U[...]`` / ``+U[...]`` for
an update's before and after image and ``-D[...]`` for a delete, in commit order. With
several tables (or a ``print-identifier``) lines are prefixed ``identifier> `` the way
Flink's print connector does. Printing is at-least-once: a batch Spark replays after a
crash is printed again.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION
from sparkcdc.core.identifiers import quoted
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.console.config import ConsoleSinkConfig
from sparkcdc.sinks.console.print_format import format_change
from sparkcdc.sinks.reduce import change_rank
from sparkcdc.sinks.write_plan import WritePlan
from sparkcdc.snapshot.schema_change import ColumnMoves


class ConsoleSink(Sink):
    def __init__(self, config: ConsoleSinkConfig, out: TextIO | None = None) -> None:
        self.config = config
        self._out = out
        self.tables: dict[TableId, SinkTable] = {}

    @property
    def capabilities(self) -> SinkCapabilities:
        from sparkcdc.sinks.console import capabilities

        return capabilities(self.config)

    @property
    def out(self) -> TextIO:
        if self._out is not None:
            return self._out
        return sys.stderr if self.config.standard_error else sys.stdout

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        self.tables = {t.source: t for t in tables}

    def _prefix(self, table: TableId) -> str:
        if self.config.print_identifier is not None:
            return f"{self.config.print_identifier}> "
        return f"{table}> " if len(self.tables) > 1 else ""

    def evolve(
        self,
        spark: Any,
        table: SinkTable,
        previous: SinkTable | None = None,
        moves: ColumnMoves | None = None,
    ) -> None:
        """Prints the table's new columns (as Flink's print sink prints a schema change);
        later rows are printed with them."""
        del spark, previous, moves
        self.tables[table.source] = table
        columns = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in table.schema.fields)
        print(f"{self._prefix(table.source)}schema change: {columns}", file=self.out)
        self.out.flush()

    def truncate(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """Prints the truncate (the rows printed before are history, not a table)."""
        del spark, batch
        print(f"{self._prefix(table.source)}truncate table", file=self.out)
        self.out.flush()

    def drop_table(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """Prints the drop."""
        del spark, batch
        print(f"{self._prefix(table.source)}drop table", file=self.out)
        self.out.flush()

    def write(self, batch: WritePlan) -> None:
        from pyspark.sql import functions as F

        for write in batch.with_changes():
            table_id, changes = write.target, write.changes
            columns = self.tables[table_id].columns
            ordered = changes.orderBy(COMMIT_VERSION, change_rank(F.col(CHANGE_TYPE)))
            prefix = self._prefix(table_id)
            for row in ordered.select(*[quoted(c) for c in columns], CHANGE_TYPE).toLocalIterator():
                values = tuple(row)
                print(prefix + format_change(values[-1], values[:-1]), file=self.out)
        self.out.flush()

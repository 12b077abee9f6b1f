"""Console sink: every change printed in Flink's print format, for trying things out.

``+I[1001, 2021-09-17, 10:20:30, 1, 102, alice]`` for an insert, ``-U[...]`` / ``+U[...]`` for
an update's before and after image and ``-D[...]`` for a delete, in commit order. With
several tables (or a ``print-identifier``) lines are prefixed ``identifier> `` the way
Flink's print connector does. Printing is at-least-once: a batch Spark replays after a
crash is printed again.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from sparkcdc.core.options import OptionSpec, parse_options
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import CHANGE_TYPE, COMMIT_VERSION, MicroBatch, Sink, SinkTable
from sparkcdc.sinks.reduce import change_rank

ROW_KINDS = {"insert": "+I", "update_preimage": "-U", "update_postimage": "+U", "delete": "-D"}

SPECS = (
    OptionSpec(
        "print-identifier",
        default=None,
        default_doc="none (the table name with several tables)",
        doc="a prefix for every printed line (`identifier> `)",
    ),
    OptionSpec(
        "standard-error",
        choices=("true", "false"),
        default="false",
        doc="`true` prints to standard error instead of standard output",
    ),
)


@dataclass(frozen=True)
class ConsoleSinkConfig:
    print_identifier: str | None
    standard_error: bool

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ConsoleSinkConfig:
        opts = parse_options(options, SPECS, context="console sink")
        return cls(opts["print-identifier"], opts["standard-error"] == "true")


def format_value(value: Any) -> str:
    """A value as Flink prints it inside a row: null, ISO dates and times, plain numbers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return f"{value.date().isoformat()}T{_java_time(value.time())}"
    if isinstance(value, dt.time):
        return _java_time(value)
    if isinstance(value, (bytes, bytearray)):
        return "x'" + bytes(value).hex() + "'"
    return str(value)


def _java_time(value: dt.time) -> str:
    """Java's LocalTime.toString: ``10:20``, ``10:20:30``, ``10:20:30.123``, ``...123456``."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        micros = value.microsecond
        text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text


def format_change(change_type: str, values: Sequence[Any]) -> str:
    """``+I[1001, 2021-09-17, ...]``."""
    return f"{ROW_KINDS[change_type]}[{', '.join(format_value(v) for v in values)}]"


class ConsoleSink(Sink):
    def __init__(self, config: ConsoleSinkConfig, out: TextIO | None = None) -> None:
        self.config = config
        self._out = out
        self.tables: dict[TableId, SinkTable] = {}

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

    def write(self, batch: MicroBatch) -> None:
        from pyspark.sql import functions as F

        for table_id, changes in batch.changes.items():
            if not batch.has_changes(table_id):
                continue
            columns = self.tables[table_id].columns
            ordered = changes.orderBy(COMMIT_VERSION, change_rank(F.col(CHANGE_TYPE)))
            prefix = self._prefix(table_id)
            for row in ordered.select(*[f"`{c}`" for c in columns], CHANGE_TYPE).toLocalIterator():
                values = tuple(row)
                print(prefix + format_change(values[-1], values[:-1]), file=self.out)
        self.out.flush()

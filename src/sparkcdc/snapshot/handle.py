"""What the layers above the Spark binding may ask of a source: one handle, questions only.

``pipeline/``, ``cli/`` and ``verify/`` need a source's tables and columns, where its log
ends, how far a position is behind, whether the log from a position is still there. They
get a :class:`SourceHandle` (``Connector.handle``), never the driver or the dialect: the
handle plans no batch and reads no rows, so the stream's own source (in Spark's processes)
is the only one that captures. One connection, opened on first use and shared by the
threads of a pipeline run (the runner's, the metrics endpoint's), so calls hold a lock.

Nothing here writes to the database, except :meth:`SourceHandle.discover`, which makes what
capture needs as the stream's own discovery does (PostgreSQL's publication and slot), for
a pipeline's start; :meth:`SourceHandle.inspect` leaves the server as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic

import pyarrow as pa

from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.errors import PositionLostError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import (
    DetectsLostLog,
    FollowsSchemaChanges,
    MeasuresLog,
    TellsChangeTimes,
)
from sparkcdc.snapshot.dialect import Dialect, P, T
from sparkcdc.snapshot.offset import LogAt
from sparkcdc.snapshot.origins import position_of


@dataclass(frozen=True)
class TableColumns:
    """A captured table as consumers see it: its columns as the source emits them."""

    table_id: TableId
    fields: tuple[pa.Field, ...]
    primary_key: tuple[str, ...]
    #: The table's and its columns' comments (``include-comments.enabled``; else none).
    comments: Comments = NO_COMMENTS


class SourceHandle(Generic[P, T]):
    """Read-only questions to one source (see the module docstring)."""

    def __init__(self, dialect: Dialect[P, T]) -> None:
        self._dialect = dialect
        self._lock = threading.RLock()
        #: The tables of the last discovery or inspection (row estimates use them).
        self._tables: dict[TableId, T] | None = None

    @property
    def tells_change_times(self) -> bool:
        """Whether :meth:`first_change_time` can answer (not PostgreSQL's WAL)."""
        return isinstance(self._dialect, TellsChangeTimes)

    # -- without a connection --------------------------------------------------------------
    def stored_position(self, offset: LogAt | Mapping[str, Any]) -> P:
        """An offset's log position as stored (no server asked, no failover check);
        ``offset`` is ``SourceOffset.log_at()``, or the offset's JSON."""
        return self._dialect.position_from_json(LogAt.of(offset).log)

    def columns(self, table_json: Mapping[str, Any]) -> TableColumns:
        """A table as an offset's schema entry has it (the JSON under ``"table"``), for
        connectors that keep tables' columns in the offset."""
        dialect = self._dialect
        if not isinstance(dialect, FollowsSchemaChanges):
            raise TypeError(f"{dialect.format_name} keeps no columns in its offsets")
        return self._columns(dialect.table_from_json(table_json))

    # -- on the server -----------------------------------------------------------------------
    def discover(self) -> list[TableColumns]:
        """The captured tables after validating the server for CDC (fails with the fix),
        making what capture needs, as the stream itself does when it starts."""
        return self._found(self._dialect.discover)

    def inspect(self) -> list[TableColumns]:
        """The tables :meth:`discover` would capture, checked the same way, with the server
        left as it is."""
        return self._found(self._dialect.inspect)

    def position(self, offset: LogAt | Mapping[str, Any]) -> P:
        """An offset's log position on the server connected now (carried over, or
        refused, when the offset was made on another server)."""
        with self._lock:
            return position_of(self._dialect, offset)

    def head(self) -> P:
        """The end of the log now."""
        with self._lock:
            return self._dialect.current_position()

    def bytes_behind(self, position: P, head: P) -> int | None:
        """Bytes of log from ``position`` to ``head`` (None: the database cannot tell)."""
        if head <= position:
            return 0
        dialect = self._dialect
        if not isinstance(dialect, MeasuresLog):
            return None
        with self._lock:
            return dialect.log_bytes(position, head)

    def first_change_time(self, position: P) -> float | None:
        """When the first transaction after ``position`` was written (epoch seconds), or
        None when there is none or the log cannot tell."""
        dialect = self._dialect
        if not isinstance(dialect, TellsChangeTimes):
            return None
        with self._lock:
            return dialect.first_change_time(position)

    def lost(self, offset: LogAt | Mapping[str, Any]) -> PositionLostError | None:
        """Why the log from ``offset``'s position is gone, or None (also when the database
        cannot tell)."""
        dialect = self._dialect
        if not isinstance(dialect, DetectsLostLog):
            return None
        with self._lock:
            try:
                dialect.ensure_available(position_of(dialect, offset))
            except PositionLostError as exc:
                return exc
        return None

    def estimated_rows(self, tables: Sequence[TableId]) -> dict[TableId, int | None]:
        """The server's row estimate of each table (None where it does not have it), from
        the tables of the last discovery (else an inspection)."""
        with self._lock:
            if self._tables is None:
                self.inspect()
            found = self._tables or {}
            estimates: dict[TableId, int | None] = {}
            for table_id in tables:
                table = found.get(table_id)
                if table is None:
                    estimates[table_id] = None
                    continue
                stats = self._dialect.key_stats(table)
                estimates[table_id] = 0 if stats.empty else max(1, stats.approximate_rows)
            return estimates

    def close(self) -> None:
        """Release the connection (the next question opens a new one)."""
        with self._lock:
            self._tables = None
            self._dialect.close()

    def _found(self, find: Callable[[], list[T]]) -> list[TableColumns]:
        with self._lock:
            found = find()
            self._tables = {t.table_id: t for t in found}
            return [self._columns(t) for t in found]

    def _columns(self, table: T) -> TableColumns:
        fields = tuple(self._dialect.arrow_fields(table))
        comments = self._dialect.comments(table)
        return TableColumns(table.table_id, fields, tuple(table.primary_key), comments)

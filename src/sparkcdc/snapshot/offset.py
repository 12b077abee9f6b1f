"""The stream offset: one log position and one small progress entry per table.

```json
{"log": {...the connector's position...},
 "tables": {"shop.orders": {"cursor": {"int": "80960"}}},
 "bounded": false}
```

O(tables), whatever the table sizes (docs/design.md, "Offsets"). ``bounded`` (startup mode
``snapshot``) freezes the log position. With signal channels (``signal.file``, a Kafka
topic), ``signals`` holds each channel's position read up to and ``paused`` whether
re-reads are paused (snapshot/signal.py); both are left out of the JSON until used.
``origin`` names the server the log position was read from (``Dialect.log_origin``).
Spark stores offsets as JSON; everything else works on this typed form.

This module is the offset JSON's one reader: the driver decodes with the connector's
position type (:meth:`SourceOffset.from_json`); the pipeline, the sinks, ``status`` and
``verify``, which have no connector at hand, with :meth:`SourceOffset.parse`, which keeps
the log position as JSON (:class:`LogJson`). The table events a batch carries
(core/table_events.py) are decoded here too (:meth:`SourceOffset.table_events`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import (
    MARKED_EVENTS,
    NO_MOVES,
    AlterColumnsEvent,
    ColumnMoves,
    CreateTableEvent,
    DropTableEvent,
    LostLogEvent,
    TableEvent,
    TruncateTableEvent,
)
from sparkcdc.snapshot.progress import LOG_LOST, TABLE_DROPPED, TRUNCATED, TableProgress


class JsonPosition(Protocol):
    """What an offset needs of its log position: its JSON (``core/position.py``'s
    ``LogPosition`` is one)."""

    def to_json(self) -> dict[str, Any]: ...


L = TypeVar("L", bound=JsonPosition)


@dataclass(frozen=True)
class LogJson:
    """A log position as the offset's JSON has it, for readers without the connector (the
    connector's dialect reads it: ``Dialect.position_from_json``)."""

    data: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class LogAt:
    """An offset's log position as JSON, with the server it was read from: what a
    connector needs to read the position (``snapshot/origins.py``), without the tables."""

    #: The connector's JSON of the position (``Dialect.position_from_json`` reads it).
    log: Mapping[str, Any]
    #: The server the position was read from (None: the database does not name them).
    origin: str | None = None

    @classmethod
    def of(cls, data: LogAt | Mapping[str, Any]) -> LogAt:
        """The position of an offset's JSON (``log``, ``origin``), its tables left unread:
        a 1000-table offset is parsed in tens of milliseconds, its position in none."""
        if isinstance(data, LogAt):
            return data
        origin = data.get("origin")
        return cls(data["log"], None if origin is None else str(origin))


@dataclass(frozen=True)
class TableSchema:
    """A table's ``schema`` entry, typed: its columns at the offset's position (the
    connector's JSON of the table) and what the source marked on it there."""

    #: The connector's JSON of the table (``Dialect.table_to_json``).
    table: Mapping[str, Any]
    #: The statement that made these columns (or what happened), "" when none.
    change: str = ""
    moves: ColumnMoves = NO_MOVES
    #: The marks (each a JSON value that tells this one apart from an earlier one): the
    #: batch of a TRUNCATE, of a DROP, of a lost log's recovery.
    truncated: Any = None
    dropped: Any = None
    log_lost: Any = None
    #: The entry holds more than the columns (a change's statement, moves or a mark).
    marked: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TableSchema:
        return cls(
            data.get("table") or {},
            str(data.get("change", "")),
            ColumnMoves.from_json(data),
            data.get(TRUNCATED),
            data.get(TABLE_DROPPED),
            data.get(LOG_LOST),
            bool(set(data) - {"table"}),
        )

    def mark(self, event: type[TableEvent]) -> Any:
        """This entry's mark of the kind of ``event`` (None: none)."""
        return {
            TruncateTableEvent: self.truncated,
            DropTableEvent: self.dropped,
            LostLogEvent: self.log_lost,
        }[event]


@dataclass(frozen=True)
class SourceOffset(Generic[L]):
    log: L
    tables: Mapping[TableId, TableProgress] = field(default_factory=dict)
    bounded: bool = False
    #: Each signal channel's position read up to, by channel name (JSON values).
    signals: Mapping[str, Any] = field(default_factory=dict)
    #: Re-reads asked for by signals are paused (``pause-snapshot``).
    paused: bool = False
    #: The server the log position was read from (None: the database does not name them).
    origin: str | None = None

    @property
    def snapshotting(self) -> bool:
        """Chunks are to be read: some table's snapshot has not finished, or a re-read
        runs (and is not paused)."""
        tables = self.tables.values()
        return any(not p.done for p in tables) or (
            not self.paused and any(p.reading for p in tables)
        )

    def to_json(self) -> dict[str, Any]:
        data = {
            "log": self.log.to_json(),
            "tables": {t.key: p.to_json() for t, p in sorted(self.tables.items())},
            "bounded": self.bounded,
        }
        if self.signals:
            data["signals"] = dict(self.signals)
        if self.paused:
            data["paused"] = True
        if self.origin is not None:
            data["origin"] = self.origin
        return data

    def to_text(self) -> str:
        return json.dumps(self.to_json())

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], position: Callable[[Mapping[str, Any]], L]
    ) -> SourceOffset[L]:
        origin = data.get("origin")
        return cls(
            position(data["log"]),
            {TableId.from_key(t): TableProgress.from_json(p) for t, p in data["tables"].items()},
            bool(data.get("bounded", False)),
            dict(data.get("signals", {})),
            bool(data.get("paused", False)),
            None if origin is None else str(origin),
        )

    @staticmethod
    def parse(text: str) -> SourceOffset[LogJson]:
        """An offset's JSON text (Spark's checkpoint, a sink's record) decoded, its log
        position kept as JSON. Cached: the pipeline, its sink and its metrics read the same
        few offsets, and a 1000-table offset (~1.2 MB) takes tens of milliseconds."""
        return _parsed(text)

    @staticmethod
    def try_parse(text: str) -> SourceOffset[LogJson] | None:
        """:meth:`parse`, or None when ``text`` is another source's offset (a changelog
        source's: no log position and table progress)."""
        data = _json(text)
        if (
            not isinstance(data, dict)
            or "log" not in data
            or not isinstance(data.get("tables"), dict)
        ):
            return None
        return _parsed(text)

    def log_at(self) -> LogAt:
        """The log position as JSON with the server it was read from, as the connector
        reads a position that may come from another server (``snapshot/origins.py``)."""
        return LogAt(self.log.to_json(), self.origin)

    def only(self, tables: Collection[TableId]) -> SourceOffset[L]:
        """This offset with the progress of ``tables`` only: what a target records of it
        (``verify`` reads its own tables' entries alone)."""
        return dataclasses.replace(
            self, tables={t: p for t, p in self.tables.items() if t in tables}
        )

    def schema_of(self, table: TableId) -> TableSchema | None:
        """The table's ``schema`` entry (None: the offset has no columns for it)."""
        progress = self.tables.get(table)
        if progress is None or progress.schema is None:
            return None
        return TableSchema.from_json(progress.schema)

    def table_events(
        self, previous: SourceOffset[Any] | None, known: Collection[TableId]
    ) -> list[TableEvent]:
        """The table events of the batch that ends at this offset and starts where
        ``previous`` ends (None: not known, as for the stream's first batch, whose start
        Spark does not keep), for a consumer that holds the tables ``known``, in the order
        it applies them: created tables, column states that may have changed, then the
        marks (truncates, drops, lost logs) new since ``previous``.

        No row says that a table was created, truncated or dropped, so the marks are told
        apart by their JSON (the position after the statement, the recovery's signal):
        a mark is new when ``previous`` has another one, or none. Column states are those
        whose entry differs from ``previous``'s (all, without one): the consumer compares
        them with the columns it holds."""
        events: list[TableEvent] = []
        for table in sorted(self.tables):
            if table in known:
                continue
            schema = self.schema_of(table)
            columns = {} if schema is None else schema.table
            events.append(CreateTableEvent(table, "", columns))
        for table in sorted(self.tables):
            now = self.schema_of(table)
            if now is None or table not in known:
                continue
            was = None if previous is None else previous.schema_of(table)
            if was is None or (was.table, was.change, was.moves) != (
                now.table,
                now.change,
                now.moves,
            ):
                events.append(AlterColumnsEvent(table, now.change, now.table, now.moves))
        for kind in MARKED_EVENTS:
            for table in sorted(self.tables):
                now = self.schema_of(table)
                mark = None if now is None else now.mark(kind)
                if mark is None:
                    continue
                was = None if previous is None else previous.schema_of(table)
                if was is None or was.mark(kind) != mark:
                    assert now is not None
                    events.append(kind(table, now.change))
        return events


@functools.lru_cache(maxsize=4)
def _parsed(text: str) -> SourceOffset[LogJson]:
    return SourceOffset.from_json(_json(text), LogJson)


@functools.lru_cache(maxsize=4)
def _json(text: str) -> Any:
    return json.loads(text)

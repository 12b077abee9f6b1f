"""Per-table snapshot progress kept in the stream offset: O(tables), never O(chunks).

A table's progress is one of
* not started: nothing of it has been emitted; its log events are held back;
* a cursor ``K``: every row with chunk key ``< K`` has been emitted, normalised to the
  offset's log position; log events for keys below ``K`` are emitted as they come;
* done: the whole table has been emitted; every log event of it is emitted.

A table whose columns changed while captured also carries its columns as of the offset's
position (``schema``: the dialect's JSON of the table, with the statement that made it),
so a replayed batch and a restart decode its rows with the shape they had there
(snapshot/schema_change.py). Tables that never changed carry none: O(tables) stays.

A table whose snapshot is done may be read again on demand (a signal,
snapshot/signal.py): ``again`` is that re-read's own cursor (:class:`Resnapshot`), while
the table itself stays done, so every log change of it is still emitted.

Chunks are read after their batch was planned, so a change of the table's columns can land
between a batch's end and its chunk reads; such chunks cannot be read in the batch's shape,
and their partitions emit nothing (docs/design.md, "Schema changes"). So every batch that
reads chunks of a table marks their key range (``chunks``, a :class:`ChunkSpan`), and the
change's own batch has that range read again after the change, as a re-read (``again``;
also of a table still in its snapshot, whose cursor stays: the log changes of keys below
it, deletes included, keep flowing while the range is read again).
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sparkcdc.snapshot.chunks import Key

#: The schema key of a table's entry in the batch of its DROP: the position after it.
TABLE_DROPPED = "table_dropped"
#: The schema key of a table's entry in the batch of its TRUNCATE: the position after it,
#: so two truncates are told apart.
TRUNCATED = "truncated"
#: The schema key of a table's entry in a lost log's recovery batch: the signal and the
#: position the stream went on from (snapshot/recovery.py).
LOG_LOST = "log_lost"


@dataclass(frozen=True)
class ChunkSpan:
    """The key range ``[lo, hi)`` (None: open) of the chunks that batches read since the
    driver last saw the log change-free up to its end."""

    lo: Key = None
    hi: Key = None

    def to_json(self) -> dict[str, Any]:
        return {"from": encode_key(self.lo), "to": encode_key(self.hi)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChunkSpan:
        return cls(decode_key(data.get("from")), decode_key(data.get("to")))


@dataclass(frozen=True)
class Resnapshot:
    """A re-read of a done table's key range ``[lo, hi)`` (None: open), asked for by signal
    ``signal``. Rows with keys in ``[lo, cursor)`` have been emitted again (none before it
    ``started``); ``done`` for the one batch that read its last chunk, so that batch's
    partitions can tell it from a stopped re-read (which simply has no entry)."""

    signal: str
    lo: Key = None
    hi: Key = None
    started: bool = False
    cursor: Key = None
    done: bool = False

    @property
    def view(self) -> TableProgress:
        """Its progress as a snapshot's (what chunk planning starts from)."""
        if self.started:
            return TableProgress(started=True, cursor=self.cursor)
        return TableProgress(started=self.lo is not None, cursor=self.lo)

    @property
    def end_view(self) -> TableProgress:
        """How far the chunks of the batch that made this entry reach."""
        if not self.done:
            return self.view
        return TableProgress.finished() if self.hi is None else TableProgress(True, self.hi)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"signal": self.signal}
        if self.lo is not None:
            data["from"] = encode_key(self.lo)
        if self.hi is not None:
            data["to"] = encode_key(self.hi)
        if self.done:
            data["done"] = True
        elif self.started:
            data["cursor"] = encode_key(self.cursor)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Resnapshot:
        return cls(
            str(data["signal"]),
            decode_key(data.get("from")),
            decode_key(data.get("to")),
            started="cursor" in data or bool(data.get("done")),
            cursor=decode_key(data.get("cursor")),
            done=bool(data.get("done")),
        )


@dataclass(frozen=True)
class TableProgress:
    started: bool = False
    cursor: Key = None
    done: bool = False
    #: The table's columns at the offset's position, when they changed while captured.
    schema: Mapping[str, Any] | None = None
    #: A re-read of the done table on demand, while its log changes keep flowing.
    again: Resnapshot | None = None
    #: The key range of the chunks read since the log was last seen change-free.
    chunks: ChunkSpan | None = None

    @property
    def dropped(self) -> bool:
        """The table was dropped at the offset (the batch of its DROP; the next forgets it)."""
        return self.schema is not None and TABLE_DROPPED in self.schema

    @property
    def reading(self) -> bool:
        """Chunks are still to be read: its snapshot or a re-read runs."""
        return not self.done or (self.again is not None and not self.again.done)

    @classmethod
    def finished(cls) -> TableProgress:
        return cls(started=True, cursor=None, done=True)

    def to_json(self) -> dict[str, Any]:
        if self.done:
            data: dict[str, Any] = {"done": True}
        elif not self.started:
            data = {"started": False}
        else:
            data = {"cursor": encode_key(self.cursor)}
        if self.schema is not None:
            data["schema"] = dict(self.schema)
        if self.again is not None:
            data["again"] = self.again.to_json()
        if self.chunks is not None:
            data["chunks"] = self.chunks.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableProgress:
        schema = data.get("schema")
        chunks = ChunkSpan.from_json(data["chunks"]) if "chunks" in data else None
        again = Resnapshot.from_json(data["again"]) if "again" in data else None
        if data.get("done"):
            return cls(started=True, done=True, schema=schema, again=again, chunks=chunks)
        if "cursor" in data:
            cursor = decode_key(data["cursor"])
            return cls(True, cursor, schema=schema, again=again, chunks=chunks)
        return cls(schema=schema, again=again, chunks=chunks)


def encode_key(value: Key) -> Any:
    """JSON form of a chunk key value that decodes back to an equal, same-typed value."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return {"int": str(value)}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, dt.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    raise TypeError(f"cannot encode chunk key of type {type(value).__name__}")


def decode_key(data: Any) -> Key:
    if data is None or isinstance(data, bool | str):
        return data
    ((kind, text),) = data.items()
    if kind == "int":
        return int(text)
    if kind == "decimal":
        return Decimal(text)
    if kind == "float":
        return float.fromhex(text)
    if kind == "bytes":
        return base64.b64decode(text)
    if kind == "datetime":
        return dt.datetime.fromisoformat(text)
    if kind == "date":
        return dt.date.fromisoformat(text)
    raise ValueError(f"unknown chunk key encoding {kind!r}")

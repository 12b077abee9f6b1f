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
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sparkcdc.snapshot.chunks import Key


@dataclass(frozen=True)
class TableProgress:
    started: bool = False
    cursor: Key = None
    done: bool = False
    #: The table's columns at the offset's position, when they changed while captured.
    schema: Mapping[str, Any] | None = None

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
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableProgress:
        schema = data.get("schema")
        if data.get("done"):
            return cls(started=True, done=True, schema=schema)
        if "cursor" in data:
            return cls(started=True, cursor=decode_key(data["cursor"]), schema=schema)
        return cls(schema=schema)


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

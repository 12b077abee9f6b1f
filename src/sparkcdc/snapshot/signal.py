"""Signals: commands to a running stream, in Debezium's vocabulary and JSON.

```json
{"id": "resnap-1", "type": "execute-snapshot",
 "data": {"data-collections": ["shop.orders"], "type": "incremental",
          "additional-conditions": [{"data-collection": "shop.orders",
                                     "key-range": {"from": 100, "to": 200}}]}}
```

* ``execute-snapshot``: read the listed tables again while their log keeps flowing
  (docs/design.md, "Snapshots on demand"). ``data-collections`` are ``namespace.table``
  names or regular expressions matching them whole, as in Debezium. An entry of
  ``additional-conditions`` may bound one table's re-read to a range of its chunk key
  (``key-range``: ``from`` inclusive, ``to`` exclusive, either left out). Debezium's SQL
  ``filter`` is refused: sparkcdc does not put user SQL into its reads.
* ``stop-snapshot``: stop the listed re-reads (all of them without ``data-collections``).
* ``pause-snapshot`` / ``resume-snapshot``: hold every re-read where it is, and go on.
* ``recover-lost-log`` (sparkcdc's own): the log from the stream's position is gone (a
  purged binlog, a dropped slot); go on from the log's position now and read again every
  table the lost changes can have touched (docs/design.md, "A lost log"). It names no
  tables: which ones is the offset's to say.

Only ``incremental`` snapshots exist here (Debezium's ``blocking`` kind stops the log).
Parsing is pure: which tables a name matches is decided against the captured tables.

A signal comes from whoever may write to the channel, so a bad one costs bounded time and
is skipped with its reason, never stops the stream: its text is at most
:data:`MAX_SIGNAL_BYTES`, nested at most :data:`MAX_DEPTH` deep, numbers have at most
:data:`MAX_NUMBER_DIGITS` digits, and patterns are matched in linear time
(snapshot/linear_regex.py).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import pyarrow as pa

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.linear_regex import InvalidPatternError, LinearPattern, PatternError

EXECUTE, STOP = "execute-snapshot", "stop-snapshot"
PAUSE, RESUME = "pause-snapshot", "resume-snapshot"
RECOVER = "recover-lost-log"
TYPES = (EXECUTE, STOP, PAUSE, RESUME, RECOVER)

#: The longest signal taken (its JSON text, in bytes): a few table names and key ranges.
MAX_SIGNAL_BYTES = 64 << 10
#: How deep a signal's JSON may nest (the format needs 4).
MAX_DEPTH = 16
#: Digits a JSON number may have (a BIGINT has 20, DECIMAL(65) 65).
MAX_NUMBER_DIGITS = 100


class SignalError(SparkCdcError):
    """A signal that cannot be executed as written."""


@dataclass(frozen=True)
class KeyRange:
    """Chunk-key values as the signal gives them (JSON), converted per table when applied."""

    lo: Any = None
    hi: Any = None


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    #: ``namespace.table`` names or patterns; empty: every table (stop only).
    collections: tuple[str, ...] = ()
    ranges: Mapping[str, KeyRange] | None = None

    def tables(self, captured: Iterable[TableId]) -> list[TableId]:
        """The captured tables the signal names, in order. A name that matches none is an
        error: a signal that silently does nothing looks like one that worked."""
        captured = sorted(captured)
        if not self.collections:
            return captured
        found: list[TableId] = []
        for name in self.collections:
            names = _matcher(self.id, name)
            matched = [t for t in captured if names(t)]
            if not matched:
                known = ", ".join(str(t) for t in captured[:10])
                raise SignalError(
                    f"signal {self.id!r} ({self.type}) names {name!r}, which is not a captured "
                    f"table (captured: {known}{', ...' if len(captured) > 10 else ''})"
                )
            found += [t for t in matched if t not in found]
        return found

    def key_range(self, table: TableId) -> KeyRange:
        for name, bounds in (self.ranges or {}).items():
            if _matcher(self.id, name)(table):
                return bounds
        return KeyRange()


@dataclass(frozen=True)
class Received:
    """A signal as a channel delivered it, or why it cannot be one (logged and skipped)."""

    #: Where it came from, for messages (``signal file F, line 3``).
    where: str
    #: Unique within the channel (a line number, a partition and offset): names a re-read.
    mark: str
    signal: Signal | None
    problem: str | None = None


class SignalChannel(Protocol):
    """Where signals come from. ``read`` returns what arrived after ``position`` (the JSON
    value the channel stored in the offset last time, None at first) and the position
    after it; the offset keeps that position under the channel's ``name``, so a signal is
    consumed by the batch that Spark commits with it."""

    @property
    def name(self) -> str: ...

    def read(self, position: Any) -> tuple[list[Received], Any]: ...


def received(where: str, mark: str, text: str | bytes) -> Received:
    """Parse one signal's JSON text; problems become the reason it is skipped."""
    if len(text) > MAX_SIGNAL_BYTES:
        return Received(where, mark, None, f"longer than {MAX_SIGNAL_BYTES} bytes")
    try:
        data = json.loads(text, parse_int=_number(int), parse_float=_number(float))
        _check_depth(data)
        return Received(where, mark, parse_signal(data))
    except json.JSONDecodeError as exc:
        return Received(where, mark, None, f"not JSON ({exc.msg} at column {exc.colno})")
    except RecursionError:
        return Received(where, mark, None, f"nested deeper than {MAX_DEPTH} levels")
    except (SignalError, UnicodeDecodeError) as exc:
        return Received(where, mark, None, str(exc))


def _number(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        if len(text) > MAX_NUMBER_DIGITS:
            raise SignalError(f"a number has more than {MAX_NUMBER_DIGITS} digits")
        return kind(text)

    return parse


def _check_depth(data: Any) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` (without recursion)."""
    level = [data]
    for _ in range(MAX_DEPTH):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return
    raise SignalError(f"nested deeper than {MAX_DEPTH} levels")


def _matcher(sid: str, name: str) -> Any:
    """Whether a table is ``name``: its ``namespace.table`` (or key) exactly, or a match
    of ``name`` as a regular expression, in linear time. A name that is no regular
    expression is a name only; a pattern that needs backtracking, or more work than
    :data:`~sparkcdc.snapshot.linear_regex.MAX_WORK`, is a :class:`SignalError`."""
    try:
        pattern: LinearPattern | None = LinearPattern(name)
    except InvalidPatternError:
        pattern = None
    except PatternError as exc:
        raise SignalError(f"signal {sid!r}: pattern {name!r}: {exc}") from None

    def names(table: TableId) -> bool:
        if name in (str(table), table.key):
            return True
        try:
            return pattern is not None and pattern.fullmatch(str(table))
        except PatternError as exc:
            raise SignalError(f"signal {sid!r}: pattern {name!r}: {exc}") from None

    return names


def parse_signal(data: Any) -> Signal:
    """A signal from its JSON (already decoded), checked whole before anything runs."""
    if not isinstance(data, dict):
        raise SignalError(f"a signal is a JSON object, not {type(data).__name__}")
    sid = str(data.get("id") or "")
    kind = data.get("type")
    if kind not in TYPES:
        raise SignalError(f"signal {sid!r}: unknown type {kind!r}; valid types: {', '.join(TYPES)}")
    body = data.get("data") or {}
    if not isinstance(body, dict):
        raise SignalError(f"signal {sid!r}: 'data' must be an object")
    mode = str(body.get("type", "incremental")).lower()
    if mode != "incremental":
        raise SignalError(
            f"signal {sid!r}: snapshot type {body.get('type')!r} is not supported; only "
            "'incremental' (the log keeps flowing while the tables are read)"
        )
    collections = body.get("data-collections") or []
    if isinstance(collections, str):
        collections = [collections]
    if not isinstance(collections, list) or not all(isinstance(c, str) for c in collections):
        raise SignalError(f"signal {sid!r}: 'data-collections' must be a list of table names")
    if kind == EXECUTE and not collections:
        raise SignalError(f"signal {sid!r}: execute-snapshot needs 'data-collections'")
    for name in collections:
        _matcher(sid, name)  # a pattern that needs backtracking is refused up front
    if kind == RECOVER and (collections or body.get("additional-conditions")):
        raise SignalError(
            f"signal {sid!r}: recover-lost-log reads again every table the lost log can have "
            "touched, which the stream's offset says; it takes no 'data-collections' or "
            "'additional-conditions'"
        )
    return Signal(sid, kind, tuple(collections), _ranges(sid, body.get("additional-conditions")))


def key_from_json(value: Any, type_: pa.DataType, column: str) -> Any:
    """A key-range bound given in JSON as a value of the chunk key's type (its Arrow type,
    the same from snapshot and log)."""
    if value is None:
        return None
    supported = (
        pa.types.is_integer(type_)
        or pa.types.is_decimal(type_)
        or pa.types.is_string(type_)
        or pa.types.is_large_string(type_)
        or pa.types.is_date(type_)
        or (pa.types.is_timestamp(type_) and type_.tz is None)
    )
    if not supported:
        raise SignalError(
            f"a key range on '{column}' ({type_}) is not supported: numbers, decimals, "
            "strings, dates and timestamps without a time zone are"
        )
    try:
        found = _key_value(value, type_)
    except (ValueError, TypeError, ArithmeticError):
        found = None
    if found is None:
        raise SignalError(f"key-range bound {value!r} is not a value of '{column}' ({type_})")
    return found


def _key_value(value: Any, type_: pa.DataType) -> Any:
    """``value`` as a value of ``type_``, or None when it is none (out of range too: a
    bound the database cannot compare would stop the stream's planning)."""
    if pa.types.is_integer(type_):
        if isinstance(value, bool | float):
            return None
        number = int(value)
        signed = pa.types.is_signed_integer(type_)
        bits = type_.bit_width - signed
        return number if (-(1 << bits) if signed else 0) <= number < 1 << bits else None
    if pa.types.is_decimal(type_):
        if isinstance(value, bool):
            return None
        exact = Decimal(str(value))
        return exact if exact.is_finite() and abs(exact.adjusted()) <= 100 else None
    if pa.types.is_date(type_):
        return dt.date.fromisoformat(str(value))
    if pa.types.is_timestamp(type_):
        return dt.datetime.fromisoformat(str(value))
    return value if isinstance(value, str) else None


def _ranges(sid: str, conditions: Any) -> dict[str, KeyRange] | None:
    if not conditions:
        return None
    if not isinstance(conditions, list):
        raise SignalError(f"signal {sid!r}: 'additional-conditions' must be a list")
    ranges: dict[str, KeyRange] = {}
    for entry in conditions:
        if not isinstance(entry, dict) or not isinstance(entry.get("data-collection"), str):
            raise SignalError(
                f"signal {sid!r}: each additional condition names its 'data-collection'"
            )
        if "filter" in entry:
            raise SignalError(
                f"signal {sid!r}: 'filter' conditions are not supported (sparkcdc puts no "
                "user SQL into its reads); bound the re-read by the chunk key instead: "
                '"key-range": {"from": ..., "to": ...}'
            )
        bounds = entry.get("key-range")
        if not isinstance(bounds, dict) or not set(bounds) <= {"from", "to"}:
            raise SignalError(
                f"signal {sid!r}: an additional condition needs "
                '"key-range": {"from": ..., "to": ...} (either may be left out)'
            )
        ranges[entry["data-collection"]] = KeyRange(bounds.get("from"), bounds.get("to"))
    return ranges

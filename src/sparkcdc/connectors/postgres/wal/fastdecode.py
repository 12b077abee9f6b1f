"""pgoutput row changes decoded in C (csrc/pgdecode.c), values included.

The pure-Python path parses a change with :func:`pgoutput.parse_message` and then runs
:func:`types.value_parser` on every value: ~10 us per change, most of the log reader's CPU.
:class:`FastChanges` does both steps in one C call per message and gives the same rows.

"The same" is by construction, not by a second implementation of every rule: the C code
converts a value only when its text has exactly the form PostgreSQL prints under
``SESSION_SETTINGS`` and its conversion provably equals the Python parser's (the table
below). Any other text comes back as its ``str`` with the change flagged, and
:meth:`FastChanges.change` runs the column's Python parser on exactly those values, so
sentinels, BC years, NaN decimals, arrays and every error stay the Python parser's.

=============  =========================================  ===================================
kind           converted in C                             left to the Python parser
=============  =========================================  ===================================
STR            every text (no parser: text, json, uuid,   --
               interval, numeric as string, enums, ...)
INT            ``[-]digits``, up to 19 digits             anything else int() accepts
BOOL           ``t``, ``f``                               anything else (raises)
FLOAT8         float8out's grammar, NaN, [-]Infinity      other spellings float() accepts
               (read by float()'s own PyOS_string_to_
               double: bit-identical)
FLOAT4         the same, rounded to float32 once          a double exactly halfway between
                                                          two float32 values (the exact
                                                          decimal decides); out of range
DECIMAL        ``[-]digits[.digits]`` -> Decimal(text)    NaN, [-]Infinity (raise)
               (exact: keeps the scale's zeros)
DATE           ``YYYY-MM-DD``, a valid date               infinity, BC, 5-digit years
TIMESTAMP      ``YYYY-MM-DD HH:MM:SS[.f{1,6}]``           the same
TIMESTAMPTZ    the same + ``+00`` -> tzinfo timezone.utc  other offsets, the same
BYTEA          ``\\x`` + an even number of hex digits      anything else (raises)
FALLBACK       nothing (arrays, unknown parsers)          every text
=============  =========================================  ===================================

The extension is built by ``pip install -e .``; :func:`available` says why not when it is
missing, and :func:`fast_changes` then returns None (logging the reason once) so the
caller keeps the pure-Python path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from enum import IntEnum
from functools import partial
from typing import Any, Protocol

from sparkcdc.connectors.postgres.server import types
from sparkcdc.connectors.postgres.server.types import PgColumn, value_parser
from sparkcdc.connectors.postgres.wal.pgoutput import UNCHANGED
from sparkcdc.core.rows import Row

log = logging.getLogger(__name__)

#: The C module's interface version this file was written for (``_pgdecode.ABI``).
ABI = 1

_IMPORT_ERROR: str | None
try:
    from sparkcdc.connectors.postgres.wal import _pgdecode
except ImportError as exc:  # a source tree without the build: the Python path still works
    _IMPORT_ERROR = f"its C extension is not built ({exc}); reinstall with pip install -e ."
else:
    _IMPORT_ERROR = (
        None
        if getattr(_pgdecode, "ABI", None) == ABI
        else "its C extension is out of date (a stale build); reinstall with pip install -e ."
    )


class Kind(IntEnum):
    """How the C code turns a column's text into its value (csrc/pgdecode.c, same numbers;
    the module exports them as ``KIND_<name>``)."""

    STR = 0
    INT = 1
    BOOL = 2
    FLOAT8 = 3
    FLOAT4 = 4
    DECIMAL = 5
    DATE = 6
    TIMESTAMP = 7
    TIMESTAMPTZ = 8
    BYTEA = 9
    FALLBACK = 10


#: The Python parsers that a kind reproduces exactly. Keyed by the parser function itself
#: (not by the type name or Arrow type), so that a parser changed or added in types.py
#: without a matching C kind falls back to Python instead of being silently imitated.
_KINDS_OF_FUNCTIONS: dict[Callable[..., Any], Kind] = {
    types._parse_bool: Kind.BOOL,
    types._parse_float4: Kind.FLOAT4,
    types._parse_decimal: Kind.DECIMAL,
    types._parse_date: Kind.DATE,
    types._parse_timestamp: Kind.TIMESTAMP,
    types._parse_timestamptz: Kind.TIMESTAMPTZ,
    types._parse_bytea: Kind.BYTEA,
}

_TAGS = {0x49: "insert", 0x55: "update", 0x44: "delete"}


def kind_of(parser: Callable[[str], Any] | None) -> Kind:
    """The kind that reproduces ``parser`` (a :func:`types.value_parser` result)."""
    if parser is None:
        return Kind.STR
    if parser is int:
        return Kind.INT
    if parser is float:
        return Kind.FLOAT8
    if isinstance(parser, partial) and len(parser.args) == 1 and not parser.keywords:
        return _KINDS_OF_FUNCTIONS.get(parser.func, Kind.FALLBACK)
    return Kind.FALLBACK  # arrays (partial of _parse_array with 3 arguments) and the unknown


def kinds_for(columns: Sequence[PgColumn], decimal_mode: str) -> tuple[int, ...]:
    """Each column's kind, from the parser the Python path would use for it."""
    return tuple(kind_of(value_parser(column, decimal_mode)) for column in columns)


def available() -> str | None:
    """None when the C decoder can be used, else why not (for a log line)."""
    return _IMPORT_ERROR


class HasColumns(Protocol):
    """A captured table as far as decoding goes (``PgTable``)."""

    @property
    def columns(self) -> Sequence[PgColumn]: ...


#: A decoded change: ('insert' | 'update' | 'delete', relation oid, old_kind 'K'/'O'/None,
#: old row or None, new row or None). Rows hold final values, None for NULL and
#: pgoutput.UNCHANGED for unchanged TOASTed values.
Change = tuple[str, int, str | None, Row | None, Row | None]


class FastChanges:
    """The row changes of one captured table, decoded in C.

    :meth:`change` equals, for every Insert/Update/Delete message, parsing it with
    ``pgoutput.parse_message`` and converting each value with ``value_parser(column,
    decimal_mode)`` (None and UNCHANGED kept), errors included: malformed messages raise
    ValueError, values the column's type cannot hold raise the parser's PgValueError.
    It also raises ValueError when a tuple's column count is not the table's.
    """

    __slots__ = ("_parsers", "decoder", "kinds")

    def __init__(self, table: HasColumns, decimal_mode: str) -> None:
        if _IMPORT_ERROR is not None:
            raise RuntimeError(f"the pgoutput C decoder is unavailable: {_IMPORT_ERROR}")
        parsers = [value_parser(column, decimal_mode) for column in table.columns]
        self.kinds: tuple[Kind, ...] = tuple(kind_of(p) for p in parsers)
        # The columns whose values may come back as text: every one with a parser (a str
        # there is never a final value, since no such parser returns str).
        self._parsers = tuple((i, p) for i, p in enumerate(parsers) if p is not None)
        #: The compiled decoder; :meth:`change` wraps it (the log reader's hot loop calls it
        #: directly and applies :meth:`finish` itself).
        self.decoder = _pgdecode.Decoder(self.kinds, UNCHANGED)

    def change(self, data: bytes | bytearray | memoryview) -> Change:
        """One Insert ('I'), Update ('U') or Delete ('D') message; other types raise
        ValueError."""
        tag, oid, old_kind, old, new, fallback = self.decoder.change(data)
        if fallback:
            if old is not None:
                old = self.finish(old)
            if new is not None:
                new = self.finish(new)
        return _TAGS[tag], oid, old_kind, old, new

    def finish(self, row: Row) -> Row:
        """Run the Python parser on the texts the C code left (a str in a parsed column)."""
        values = list(row)
        for i, parse in self._parsers:
            value = values[i]
            if type(value) is str:
                values[i] = parse(value)
        return tuple(values)


def fast_changes(table: HasColumns, decimal_mode: str) -> FastChanges | None:
    """A :class:`FastChanges` for ``table``, or None when the extension is missing (the
    reason is logged once per process; the caller then parses in Python)."""
    why_not = available()
    if why_not is None:
        return FastChanges(table, decimal_mode)
    if not _explained:
        _explained.append(why_not)
        log.info("pgoutput changes are decoded in Python: %s", why_not)
    return None


_explained: list[str] = []

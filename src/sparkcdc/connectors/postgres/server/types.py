"""PostgreSQL column types as Arrow types, and one canonical Python value per type.

Both read paths see the server's *text output* of each value: the snapshot reads
``COPY (SELECT ...) TO STDOUT (FORMAT csv)`` and the log reads pgoutput's text tuples, and
the type output functions run in the reading session under :data:`SESSION_SETTINGS`. So
the same stored value reaches us as the same text on both paths, and the functions here
only have to turn text into typed values, in two equivalent ways:

- :func:`value_parser`: one value at a time, in Python (the log path, normalisation);
- :func:`text_to_arrow`: a whole column at once with Arrow casts (the snapshot path).

They agree exactly: ``text_to_arrow(strings, col)`` equals
``pa.array([None if v is None else parse(v) for v in strings], arrow_type(col))`` for
every text the server prints (tests/unit/test_postgres_types.py checks it with hypothesis,
tests/integration/test_postgres_types_text.py against a real server). Values that Spark
cannot hold raise :class:`PgValueError` instead of silently becoming something else.

================================  ===========================  ===============================
PostgreSQL (domains: their base)  Arrow                        canonical Python value
================================  ===========================  ===============================
bool                              bool                         bool (text 't' / 'f')
int2 / int4 / int8                int16 / int32 / int64        int
oid                               int64                        int
float4 / float8                   float32 / float64            float, NaN and ±Infinity too
numeric(p, s), 0 <= s <= p <= 38  decimal128(p, s)             Decimal; NaN, ±Infinity raise
  and decimal mode 'precise'                                   PgValueError
other numeric, or mode 'string'   string                       the server's text ('12.340')
bytea                             binary                       bytes (text is '\\x' + hex)
date                              date32                       date; 'infinity' ->
                                                               9999-12-31, '-infinity' ->
                                                               0001-01-01; BC and years
                                                               after 9999 raise PgValueError
timestamp                         timestamp('us')              naive datetime; 'infinity' ->
                                                               9999-12-31 23:59:59.999999,
                                                               '-infinity' -> 0001-01-01
                                                               00:00; BC, > 9999 raise
timestamptz                       timestamp('us', tz='UTC')    UTC-aware datetime; same
                                                               sentinels and errors
one-dimensional array of any of   list_(element's Arrow type)  list of element values, None
  the above                                                    for NULL elements; explicit
                                                               bounds or several dimensions
                                                               raise PgValueError
everything else: text, varchar,   string                       the server's text
  bpchar (padded), name, "char",
  citext, money, json, jsonb, xml,
  uuid, inet, cidr, macaddr(8),
  bit, varbit, time, timetz,
  interval (ISO 8601), tsvector,
  tsquery, pg_lsn, geometric,
  ranges, multiranges, composites,
  enums, unknown types
================================  ===========================  ===============================

The infinity sentinels follow Debezium. They are documented, not lossless: a stored
9999-12-31 and 'infinity' read alike (see :func:`key_sort_function`).

float4: the server prints the shortest text that reads back as the same float32
(``extra_float_digits`` > 0). Arrow parses that text straight to float32; reading it as a
double and rounding that to float32 rounds twice, which differs when the double lands
exactly halfway between two float32 values while the text is not (it happens for long
texts such as '1.0000000596046447753906250000001'; for the server's shortest texts it never
happened in 10^8 random float32 values). :func:`_parse_float4` detects that one case and
decides it from the exact decimal, so both paths agree by construction, whatever the text.

This module must not import pyspark (the Spark layer maps Arrow to Spark) nor, at module
level, any database driver: it is pickled to Spark executors. The parsers are
``functools.partial`` objects of module-level functions and the key functions are
module-level functions, so plain ``pickle`` takes them too.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.core.errors import OptionError, SparkCdcError

UTC = timezone.utc

#: Settings of every session of the connector (snapshot, log and planning connections).
#: Each one fixes how an output function prints, so that the snapshot's COPY and the log's
#: pgoutput (whose output functions run in the peeking session) print a value identically,
#: and so that the parsers here can read it:
#:
#: - ``DateStyle 'ISO, YMD'``: dates as ``2024-01-31`` (not ``01/31/2024``), which Python's
#:   and Arrow's ISO parsers read;
#: - ``TimeZone 'UTC'``: timestamptz is printed in the session zone; UTC makes it
#:   ``...+00`` everywhere, independent of server and client defaults;
#: - ``IntervalStyle 'iso_8601'``: intervals as ``P1Y2M3DT4H``, a standard text consumers
#:   can parse, instead of the locale-free but ad hoc ``1 year 2 mons``;
#: - ``extra_float_digits '3'``: any positive value prints the shortest text that reads back
#:   as the exact stored float (PostgreSQL 12+); the default 0 (pre-12: rounded to 15/6
#:   digits) loses bits;
#: - ``bytea_output 'hex'``: ``\\x0102``, decoded in bulk; the 'escape' format is ambiguous
#:   to parse in bulk;
#: - ``client_encoding 'UTF8'``: every text arrives as UTF-8 whatever the database encoding.
SESSION_SETTINGS: Mapping[str, str] = {
    "DateStyle": "ISO, YMD",
    "TimeZone": "UTC",
    "IntervalStyle": "iso_8601",
    "extra_float_digits": "3",
    "bytea_output": "hex",
    "client_encoding": "UTF8",
}

#: ``decimal.handling.mode``: 'precise' maps numeric(p, s) to decimal128(p, s) where Arrow
#: can hold it; 'string' reads every numeric as its exact text (NaN included).
DECIMAL_MODES = ("precise", "string")

#: Spark's DecimalType and Arrow decimal128 stop at 38 digits; numeric allows 1000.
MAX_DECIMAL_PRECISION = 38


class PgValueError(SparkCdcError):
    """A stored value that the column's Arrow/Spark type cannot represent."""


class UnorderableKeyError(ValueError):
    """A chunk key column whose PostgreSQL order cannot be reproduced in Python."""


@dataclass(frozen=True)
class PgType:
    """A column's type after resolving domains to their base type.

    ``typmod`` is the modifier that applies to the base type: the column's ``atttypmod``,
    or the domain's ``typtypmod`` for a domain over e.g. numeric(10,2). For arrays it is
    the element's (PostgreSQL keeps the element's modifier on the array column).
    """

    name: str  #: pg_type.typname: 'int4', 'numeric', 'bpchar', '_int4', an enum's name
    kind: str  #: pg_type.typtype: 'b' base, 'e' enum, 'c' composite, 'r' range, ...
    category: str  #: pg_type.typcategory: 'A' array, 'N' numeric, 'S' string, ...
    typmod: int = -1
    element: PgType | None = None  #: an array's element type, domains resolved
    declared: str = ""  #: format_type(atttypid, atttypmod), for messages
    delimiter: str = ","  #: pg_type.typdelim: separates array elements (';' for box)


@dataclass(frozen=True)
class PgColumn:
    """One column of a captured table."""

    name: str
    type: PgType
    nullable: bool = True
    collation: str | None = None  #: see :data:`COLUMNS_QUERY`; None when not collatable
    deterministic: bool = True  #: pg_collation.collisdeterministic


#: The columns of tables, one row per column: ``%s`` is a list of table OIDs (``oid[]``).
#:
#: Output columns, in order (what :func:`column_from_row` reads after the first two):
#:
#: 0. attrelid (the table's oid), 1. attnum, 2. attname, 3. nullable (``NOT attnotnull``),
#: 4. declared type (``format_type(atttypid, atttypmod)``),
#: 5.-9. the type with domains resolved: typname, typtype, typcategory, typdelim, typmod,
#: 10.-15. an array's element with domains resolved (all NULL when not an array): typname,
#: typtype, typcategory, typdelim, typmod, ``format_type`` of the element,
#: 16. the collation (NULL when not collatable), 17. whether it is deterministic.
#:
#: Domains (nested too) resolve to their base type and the innermost modifier that a domain
#: sets (a domain cannot take a modifier itself, so the column's is -1). An array of a
#: domain is reported as the array of the domain's base type ('_int4' for posint[]). Arrays
#: are the types whose element's ``typarray`` points back at them: int2vector, oidvector
#: (category 'A' too) and point/name (which have a typelem) are not, and read as strings.
#:
#: The collation is ``collname`` for collations in pg_catalog, ``schema.collname`` for
#: others (so that a user's collation named "C" is not taken for the real one), and for the
#: database default ('default') the database's own locale: ``datcollate`` under the libc
#: provider (e.g. 'C.UTF-8'), the locale under the builtin provider (PostgreSQL 17+), and
#: 'icu:<locale>' under ICU. ``to_jsonb(pg_database)`` reads the provider columns that only
#: exist in some versions without failing in the others.
COLUMNS_QUERY = """
WITH RECURSIVE dom (oid, base, typmod) AS (
    SELECT t.oid, t.typbasetype, t.typtypmod
    FROM pg_catalog.pg_type t
    WHERE t.typtype = 'd'
    UNION ALL
    SELECT d.oid, t.typbasetype, CASE WHEN d.typmod <> -1 THEN d.typmod ELSE t.typtypmod END
    FROM dom d JOIN pg_catalog.pg_type t ON t.oid = d.base
    WHERE t.typtype = 'd'
),
base AS (
    SELECT d.oid, d.base, d.typmod
    FROM dom d JOIN pg_catalog.pg_type t ON t.oid = d.base
    WHERE t.typtype <> 'd'
),
db AS (
    SELECT pg_catalog.to_jsonb(d) AS j
    FROM pg_catalog.pg_database d
    WHERE d.datname = pg_catalog.current_database()
)
SELECT a.attrelid, a.attnum, a.attname, NOT a.attnotnull,
       pg_catalog.format_type(a.atttypid, a.atttypmod),
       ct.typname, ct.typtype, ct.typcategory, ct.typdelim,
       CASE WHEN et.oid IS NULL THEN c.typmod ELSE e.typmod END,
       et.typname, et.typtype, et.typcategory, et.typdelim,
       CASE WHEN et.oid IS NULL THEN NULL ELSE e.typmod END,
       CASE WHEN et.oid IS NULL THEN NULL ELSE pg_catalog.format_type(et.oid, e.typmod) END,
       CASE
           WHEN co.oid IS NULL THEN NULL
           WHEN co.collname = 'default' AND cn.nspname = 'pg_catalog' THEN (
               SELECT CASE COALESCE(db.j ->> 'datlocprovider', 'c')
                          WHEN 'c' THEN db.j ->> 'datcollate'
                          WHEN 'b' THEN db.j ->> 'datlocale'
                          ELSE 'icu:'
                               || COALESCE(db.j ->> 'datlocale', db.j ->> 'daticulocale', '')
                      END
               FROM db)
           WHEN cn.nspname = 'pg_catalog' THEN co.collname::text
           ELSE cn.nspname || '.' || co.collname
       END,
       COALESCE(co.collisdeterministic, true)
FROM pg_catalog.pg_attribute a
LEFT JOIN base cb ON cb.oid = a.atttypid
CROSS JOIN LATERAL (
    SELECT COALESCE(cb.base, a.atttypid) AS typid,
           CASE WHEN cb.oid IS NULL THEN a.atttypmod ELSE cb.typmod END AS typmod
) c
JOIN pg_catalog.pg_type bt ON bt.oid = c.typid
LEFT JOIN pg_catalog.pg_type el ON el.oid = bt.typelem AND el.typarray = bt.oid
LEFT JOIN base eb ON eb.oid = el.oid
CROSS JOIN LATERAL (
    SELECT COALESCE(eb.base, el.oid) AS typid,
           CASE WHEN eb.oid IS NOT NULL AND eb.typmod <> -1 THEN eb.typmod
                ELSE c.typmod END AS typmod
) e
LEFT JOIN pg_catalog.pg_type et ON et.oid = e.typid
JOIN pg_catalog.pg_type ct
    ON ct.oid = CASE WHEN et.oid IS NULL THEN bt.oid
                     ELSE COALESCE(NULLIF(et.typarray, 0), bt.oid) END
LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation
LEFT JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace
WHERE a.attrelid = ANY (%s::pg_catalog.oid[]) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""


def column_from_row(row: Sequence[Any]) -> PgColumn:
    """A column from one row of :data:`COLUMNS_QUERY` (the table oid and attnum ignored)."""
    element = None
    if row[10] is not None:
        element = PgType(
            name=str(row[10]),
            kind=_char(row[11]),
            category=_char(row[12]),
            typmod=int(row[14]),
            declared=str(row[15]),
            delimiter=_char(row[13]),
        )
    return PgColumn(
        name=str(row[2]),
        type=PgType(
            name=str(row[5]),
            kind=_char(row[6]),
            category=_char(row[7]),
            typmod=int(row[9]),
            element=element,
            declared=str(row[4]),
            delimiter=_char(row[8]),
        ),
        nullable=bool(row[3]),
        collation=None if row[16] is None else str(row[16]),
        deterministic=bool(row[17]),
    )


def _char(value: Any) -> str:
    """A ``"char"`` catalog column: psycopg returns str, other drivers may return bytes."""
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def numeric_precision_scale(typmod: int) -> tuple[int, int] | None:
    """(precision, scale) of a numeric typmod, None for an unconstrained numeric.

    The typmod is ``((precision << 16) | (scale & 0x7ff)) + 4``; since PostgreSQL 15 the
    scale is an 11-bit signed number (-1000..1000), sign-extended here as the server does.
    """
    if typmod < 4:
        return None
    bits = typmod - 4
    return (bits >> 16) & 0xFFFF, ((bits & 0x7FF) ^ 1024) - 1024


# ---------------------------------------------------------------------------------------
# Type families: one classification shared by arrow_type, value_parser and text_to_arrow.

_FIXED: Mapping[str, tuple[str, pa.DataType]] = {
    "bool": ("bool", pa.bool_()),
    "int2": ("int", pa.int16()),
    "int4": ("int", pa.int32()),
    "int8": ("int", pa.int64()),
    "oid": ("int", pa.int64()),
    "float4": ("float4", pa.float32()),
    "float8": ("float8", pa.float64()),
    "bytea": ("bytea", pa.binary()),
    "date": ("date", pa.date32()),
    "timestamp": ("timestamp", pa.timestamp("us")),
    "timestamptz": ("timestamptz", pa.timestamp("us", tz="UTC")),
}
_STRING = ("string", pa.string())


def _check_mode(decimal_mode: str) -> None:
    if decimal_mode not in DECIMAL_MODES:
        raise OptionError(
            f"option 'decimal.handling.mode' must be one of {', '.join(DECIMAL_MODES)}; "
            f"got {decimal_mode!r}"
        )


def _scalar_family(pg_type: PgType, decimal_mode: str) -> tuple[str, pa.DataType]:
    """(family, Arrow type) of a non-array type. Only built-in base types (kind 'b') map
    by name: a user's enum or table named 'date' is kind 'e'/'c' and reads as text."""
    if pg_type.kind != "b":
        return _STRING
    fixed = _FIXED.get(pg_type.name)
    if fixed is not None:
        return fixed
    if pg_type.name == "numeric" and decimal_mode == "precise":
        bounds = numeric_precision_scale(pg_type.typmod)
        if bounds is not None:
            precision, scale = bounds
            if 0 <= scale <= precision <= MAX_DECIMAL_PRECISION and precision > 0:
                return "decimal", pa.decimal128(precision, scale)
    return _STRING


def _family(pg_type: PgType, decimal_mode: str) -> tuple[str, pa.DataType]:
    _check_mode(decimal_mode)
    if pg_type.element is not None:
        _, element_type = _scalar_family(pg_type.element, decimal_mode)
        return "array", pa.list_(element_type)
    return _scalar_family(pg_type, decimal_mode)


def arrow_type(column: PgColumn, decimal_mode: str = "precise") -> pa.DataType:
    """The Arrow type a column's values are delivered as (Spark maps it later)."""
    return _family(column.type, decimal_mode)[1]


def value_family(column: PgColumn, decimal_mode: str = "precise") -> str:
    """How a column's values are read: ``bool``, ``int``, ``float4``, ``float8``,
    ``decimal``, ``bytea``, ``date``, ``timestamp``, ``timestamptz``, ``array`` or
    ``string`` (the server's text)."""
    return _family(column.type, decimal_mode)[0]


# ---------------------------------------------------------------------------------------
# One value at a time.


def value_parser(column: PgColumn, decimal_mode: str = "precise") -> Callable[[str], Any] | None:
    """Server text of one non-NULL value -> its canonical Python value.

    None when the text itself is the value (string columns): callers skip them at no cost.
    """
    family, _ = _family(column.type, decimal_mode)
    if family == "array":
        element = column.type.element
        assert element is not None
        element_family, _ = _scalar_family(element, decimal_mode)
        return partial(
            _parse_array,
            column,
            _scalar_parser(column, element_family),
            element.delimiter,
        )
    return _scalar_parser(column, family)


def _scalar_parser(column: PgColumn, family: str) -> Callable[[str], Any] | None:
    if family == "string":
        return None
    if family == "int":
        return int  # the server prints plain decimal digits
    if family == "float8":
        return float  # reads 'NaN', 'Infinity', '-Infinity' too
    if family == "decimal":
        return partial(_parse_decimal, column)
    return partial(_PARSERS[family], column)


_BOOLS = {"t": True, "f": False}


def _parse_bool(column: PgColumn, text: str) -> bool:
    value = _BOOLS.get(text)
    if value is None:
        raise _unexpected(column, text, "'t' or 'f'")
    return value


_FLOAT32 = struct.Struct("<f")
_UINT32 = struct.Struct("<I")


def _parse_float4(column: PgColumn, text: str) -> float:
    """The float32 nearest to the decimal ``text`` (as a Python float), like Arrow's cast.

    Rounding the nearest double to float32 is right except when that double is exactly
    halfway between two float32 values while the text is not: then the exact decimal
    decides. (Rounding cannot cross a midpoint otherwise: a midpoint is a double.)
    """
    double = float(text)
    try:
        single: float = _FLOAT32.unpack(_FLOAT32.pack(double))[0]
    except OverflowError:
        raise PgValueError(
            f"column {column.name!r} ({_declared(column)}) holds {_show(text)}, beyond "
            "float32's range; the server never prints such a real: check the session "
            "settings (extra_float_digits)"
        ) from None
    if single == double or double != double:
        return single
    bits: int = _UINT32.unpack(_FLOAT32.pack(single))[0]
    neighbour: float = _FLOAT32.unpack(
        _UINT32.pack(bits + 1 if abs(double) > abs(single) else bits - 1)
    )[0]
    if double != (single + neighbour) / 2:
        return single
    exact, midpoint = Decimal(text), Decimal(double)
    if exact == midpoint:
        return single  # a true tie: struct rounded it to even, as strtof/Arrow do
    low, high = (single, neighbour) if single < neighbour else (neighbour, single)
    return high if exact > midpoint else low


_NON_FINITE = frozenset({"NaN", "Infinity", "-Infinity"})


def _parse_decimal(column: PgColumn, text: str) -> Decimal:
    if text in _NON_FINITE:
        raise PgValueError(
            f"column {column.name!r} ({_declared(column)}) holds {_show(text)}, which a "
            "Spark decimal cannot hold; set option 'decimal.handling.mode' to 'string' to "
            "read numeric columns as their exact text"
        )
    return Decimal(text)


def _parse_bytea(column: PgColumn, text: str) -> bytes:
    if not text.startswith("\\x"):
        raise _unexpected(column, text, "hex bytea ('\\x...'; bytea_output must be 'hex')")
    try:
        return binascii.unhexlify(text[2:])
    except ValueError:
        raise _unexpected(column, text, "hex bytea ('\\x...')") from None


#: Debezium's documented stand-ins for PostgreSQL's infinities (Spark has none).
DATE_INFINITY = date(9999, 12, 31)
DATE_MINUS_INFINITY = date(1, 1, 1)
TIMESTAMP_INFINITY = datetime(9999, 12, 31, 23, 59, 59, 999999)
TIMESTAMP_MINUS_INFINITY = datetime(1, 1, 1)
TIMESTAMPTZ_INFINITY = TIMESTAMP_INFINITY.replace(tzinfo=UTC)
TIMESTAMPTZ_MINUS_INFINITY = TIMESTAMP_MINUS_INFINITY.replace(tzinfo=UTC)


def _parse_date(column: PgColumn, text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    if text == "infinity":
        return DATE_INFINITY
    if text == "-infinity":
        return DATE_MINUS_INFINITY
    raise _temporal_error(column, text, "a date 'YYYY-MM-DD'")


def _naive(text: str) -> datetime:
    """'YYYY-MM-DD HH:MM:SS[.f]' with 0 to 6 fraction digits (Python 3.10's fromisoformat
    takes exactly 3 or 6, so the fraction is padded to 6)."""
    if len(text) == 19:
        return datetime.fromisoformat(text)
    if 21 <= len(text) <= 26 and text[19] == ".":
        return datetime.fromisoformat(text.ljust(26, "0"))
    raise ValueError(text)


def _parse_timestamp(column: PgColumn, text: str) -> datetime:
    try:
        return _naive(text)
    except ValueError:
        pass
    if text == "infinity":
        return TIMESTAMP_INFINITY
    if text == "-infinity":
        return TIMESTAMP_MINUS_INFINITY
    raise _temporal_error(column, text, "a timestamp 'YYYY-MM-DD HH:MM:SS[.ffffff]'")


def _parse_timestamptz(column: PgColumn, text: str) -> datetime:
    """'YYYY-MM-DD HH:MM:SS[.f]+00' under TimeZone UTC; other offsets (±HH, ±HH:MM,
    ±HH:MM:SS) are converted to UTC, so the value is right whatever the session zone."""
    try:
        if text.endswith("+00"):
            return _naive(text[:-3]).replace(tzinfo=UTC)
        return _with_offset(text)
    except (ValueError, OverflowError):
        pass
    if text == "infinity":
        return TIMESTAMPTZ_INFINITY
    if text == "-infinity":
        return TIMESTAMPTZ_MINUS_INFINITY
    raise _temporal_error(column, text, "a timestamptz 'YYYY-MM-DD HH:MM:SS[.ffffff]+00'")


def _with_offset(text: str) -> datetime:
    if len(text) < 22 or text[19] not in ".+-":
        raise ValueError(text)
    cut = max(text.rfind("+"), text.rfind("-"))
    if cut < 19:
        raise ValueError(text)
    sign = -1 if text[cut] == "-" else 1
    parts = text[cut + 1 :].split(":")
    if not 1 <= len(parts) <= 3 or not all(len(p) == 2 and p.isdigit() for p in parts):
        raise ValueError(text)
    h, m, s = (int(p) for p in (*parts, "0", "0")[:3])
    local = _naive(text[:cut])
    value = local - sign * timedelta(hours=h, minutes=m, seconds=s)
    return value.replace(tzinfo=UTC)


_NULLS = frozenset(
    a + b + c + d for a in "Nn" for b in "Uu" for c in "Ll" for d in "Ll"
)  # unquoted NULL, any case (array_in's rule); array_out quotes a string 'null'
_MUST_QUOTE = frozenset('"\\{}')


def _parse_array(
    column: PgColumn, parse: Callable[[str], Any] | None, delimiter: str, text: str
) -> list[Any]:
    """PostgreSQL's array text (array_out) -> a list of element values.

    array_out quotes an element when it is empty, spells NULL (any case), or contains the
    delimiter, a brace, a double quote, a backslash or white space; inside quotes ``"`` and
    ``\\`` are backslash-escaped. Arrays with lower bounds other than 1 are printed with a
    ``[lo:hi]=`` prefix and arrays of several dimensions with nested braces: both raise.
    """
    if not (text.startswith("{") and text.endswith("}")):
        raise PgValueError(
            f"column {column.name!r} ({_declared(column)}) holds the array {_show(text)} "
            "with explicit bounds; only one-dimensional arrays indexed from 1 can be "
            "captured: store it from index 1 at the source (UPDATE ... SET col = col[:] "
            "renumbers it) or leave the table out with 'table-name'"
        )
    body = text[1:-1]
    if not body:
        return []
    if body[0] == "{":
        raise _dimensions_error(column, text)
    if '"' not in body and "\\" not in body:
        if "{" in body or "}" in body:
            raise _malformed_array(column, text)
        items = body.split(delimiter)
        if "" in items:  # array_out quotes empty strings: '{a,}' is not its text
            raise _malformed_array(column, text)
        if parse is None:
            return [None if item in _NULLS else item for item in items]
        return [None if item in _NULLS else parse(item) for item in items]
    return _parse_array_quoted(column, parse, delimiter, text, body)


def _parse_array_quoted(
    column: PgColumn, parse: Callable[[str], Any] | None, delimiter: str, text: str, body: str
) -> list[Any]:
    values: list[Any] = []
    i, n = 0, len(body)
    while True:
        if i < n and body[i] == '"':
            pieces: list[str] = []
            i += 1
            quote, backslash = body.find('"', i), body.find("\\", i)
            while True:  # each find scans on from i: linear in the element's length
                if quote < 0:
                    raise _malformed_array(column, text)
                if 0 <= backslash < quote:
                    pieces.append(body[i:backslash])
                    if backslash + 1 >= n:
                        raise _malformed_array(column, text)
                    pieces.append(body[backslash + 1])
                    i = backslash + 2
                    if quote < i:  # that quote was escaped
                        quote = body.find('"', i)
                    backslash = body.find("\\", i)
                    continue
                pieces.append(body[i:quote])
                i = quote + 1
                break
            item = "".join(pieces)
            values.append(item if parse is None else parse(item))
            if i < n and body[i] != delimiter:
                raise _malformed_array(column, text)
        else:
            end = body.find(delimiter, i)
            end = n if end < 0 else end
            item = body[i:end]
            if not item or not _MUST_QUOTE.isdisjoint(item):
                if item.startswith("{"):
                    raise _dimensions_error(column, text)
                raise _malformed_array(column, text)
            if item in _NULLS:
                values.append(None)
            else:
                values.append(item if parse is None else parse(item))
            i = end
        if i >= n:
            return values
        i += 1  # the delimiter
        if i >= n:
            raise _malformed_array(column, text)  # a trailing delimiter


def _dimensions_error(column: PgColumn, text: str) -> PgValueError:
    return PgValueError(
        f"column {column.name!r} ({_declared(column)}) holds the multi-dimensional array "
        f"{_show(text)}; only one-dimensional arrays can be captured (Spark arrays of arrays "
        "are not mapped): store one dimension at the source or leave the table out with "
        "'table-name'"
    )


def _malformed_array(column: PgColumn, text: str) -> PgValueError:
    return _unexpected(column, text, "PostgreSQL array text '{...}'")


_PARSERS: Mapping[str, Callable[[PgColumn, str], Any]] = {
    "bool": _parse_bool,
    "float4": _parse_float4,
    "bytea": _parse_bytea,
    "date": _parse_date,
    "timestamp": _parse_timestamp,
    "timestamptz": _parse_timestamptz,
}


def _declared(column: PgColumn) -> str:
    return column.type.declared or column.type.name


def _show(text: str, limit: int = 120) -> str:
    """A value for a message: values are data, never secrets, but may be huge."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} chars)"


def _unexpected(column: PgColumn, text: str, expected: str) -> PgValueError:
    return PgValueError(
        f"column {column.name!r} ({_declared(column)}): the server printed {_show(text)} "
        f"where {expected} was expected; sparkcdc sessions must run with the settings of "
        "SESSION_SETTINGS (DateStyle 'ISO, YMD', TimeZone 'UTC', bytea_output 'hex', ...)"
    )


def _temporal_error(column: PgColumn, text: str, expected: str) -> PgValueError:
    head = text.split("-", 1)[0] if not text.startswith("-") else ""
    if text.endswith(" BC") or (head.isdigit() and len(head) > 4):
        return PgValueError(
            f"column {column.name!r} ({_declared(column)}) holds {_show(text)}: Spark dates "
            "and timestamps hold years 1 to 9999 only, not BC years or years after 9999. "
            "Change the value at the source, or leave the table out with 'table-name'"
        )
    return _unexpected(column, text, expected)


# ---------------------------------------------------------------------------------------
# A whole column at once.


def text_to_arrow(
    values: pa.Array | pa.ChunkedArray, column: PgColumn, decimal_mode: str = "precise"
) -> pa.Array:
    """A string array of server texts (NULLs allowed) -> an array of :func:`arrow_type`.

    Arrow casts whole columns where its parse is exact (integers, floats, decimals, dates,
    timestamps; booleans by comparison; bytea by one hex decode of the whole buffer). A
    batch that a cast refuses (sentinels, BC dates, NaN decimals, arrays) takes the
    per-value parser for that column of that batch, which also raises the errors. The
    result always equals the array built from :func:`value_parser`.
    """
    family, target = _family(column.type, decimal_mode)
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.type != pa.string():
        values = values.cast(pa.string())
    if family == "string":
        return values
    vectorised = _VECTORISED.get(family)
    if vectorised is not None:
        try:
            result = vectorised(values, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
            result = None
        if result is not None:
            return result
    parse = value_parser(column, decimal_mode)
    assert parse is not None
    return pa.array([None if v is None else parse(v) for v in values.to_pylist()], target)


def _cast(values: pa.Array, target: pa.DataType) -> pa.Array | None:
    return values.cast(target)


def _cast_bool(values: pa.Array, target: pa.DataType) -> pa.Array | None:
    true = pc.equal(values, "t")
    known = pc.or_(true, pc.equal(values, "f"))
    if pc.all(known).as_py() is False:
        return None
    return true


def _sentinel_cast(sentinels: tuple[tuple[str, str], ...]) -> Callable[..., pa.Array | None]:
    """Cast; if that fails, cast again with the infinities replaced by their stand-ins."""

    def cast(values: pa.Array, target: pa.DataType) -> pa.Array | None:
        try:
            return _in_range(values.cast(target))
        except pa.ArrowInvalid:
            pass
        for text, stand_in in sentinels:
            values = pc.if_else(pc.equal(values, text), stand_in, values)
        return _in_range(values.cast(target))

    return cast


_LOWEST = pa.scalar(TIMESTAMP_MINUS_INFINITY, pa.timestamp("us"))
_HIGHEST = pa.scalar(TIMESTAMP_INFINITY, pa.timestamp("us"))


def _in_range(result: pa.Array) -> pa.Array | None:
    """None when a timestamptz left years 1..9999: Arrow shifts '0001-01-01 00:00+05' to
    year 0, which Python (and so the per-value parser) cannot hold."""
    if not pa.types.is_timestamp(result.type) or result.type.tz is None:
        return result
    bounds = pc.min_max(result.cast(pa.timestamp("us")))
    lowest, highest = bounds["min"], bounds["max"]
    if lowest.is_valid and (
        pc.less(lowest, _LOWEST).as_py() or pc.greater(highest, _HIGHEST).as_py()
    ):
        return None
    return result


def _cast_bytea(values: pa.Array, target: pa.DataType) -> pa.Array | None:
    """Decode every value's hex at once: drop each value's '\\x' (a numpy mask over the
    data buffer), unhexlify the concatenation and halve the offsets. A missing prefix or an
    odd length sends the batch to the per-value parser (which raises)."""
    filled = pc.fill_null(values, "\\x") if values.null_count else values
    n = len(filled)
    if n == 0:
        return pa.array([], pa.binary())
    if not pc.all(pc.starts_with(filled, "\\x")).as_py():
        return None
    if pc.any(pc.not_equal(pc.bit_wise_and(pc.binary_length(filled), 1), 0)).as_py():
        return None
    _, offsets_buffer, data_buffer = filled.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[filled.offset : filled.offset + n + 1]
    base = int(offsets[0])
    starts = offsets[:-1] - base
    data = np.frombuffer(data_buffer, dtype=np.uint8)[base : int(offsets[-1])]
    keep = np.ones(len(data), dtype=bool)
    keep[starts] = False
    keep[starts + 1] = False
    decoded = binascii.unhexlify(data[keep].tobytes())
    new_offsets = ((offsets - base - 2 * np.arange(n + 1, dtype=np.int32)) // 2).astype(np.int32)
    result = pa.Array.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(new_offsets), pa.py_buffer(decoded)]
    )
    if values.null_count:
        result = pc.if_else(pc.is_valid(values), result, pa.scalar(None, pa.binary()))
    return result


_VECTORISED: Mapping[str, Callable[[pa.Array, pa.DataType], pa.Array | None]] = {
    "int": _cast,
    "float4": _cast,
    "float8": _cast,
    "decimal": _cast,
    "bool": _cast_bool,
    "bytea": _cast_bytea,
    "date": _sentinel_cast((("infinity", "9999-12-31"), ("-infinity", "0001-01-01"))),
    "timestamp": _sentinel_cast(
        (("infinity", "9999-12-31 23:59:59.999999"), ("-infinity", "0001-01-01 00:00:00"))
    ),
    "timestamptz": _sentinel_cast(
        (
            ("infinity", "9999-12-31 23:59:59.999999+00"),
            ("-infinity", "0001-01-01 00:00:00+00"),
        )
    ),
}


# ---------------------------------------------------------------------------------------
# Key order.

#: Collations under which PostgreSQL orders strings by code point (= UTF-8 byte order, which
#: is Python's ``str`` order): memcmp for C/POSIX (ucs_basic is C), glibc's C.UTF-8 (strict
#: code point order since glibc 2.35), and the builtin provider's C.UTF-8 (pg_c_utf8).
CODE_POINT_COLLATIONS = frozenset({"C", "POSIX", "ucs_basic", "C.UTF-8", "C.utf8", "pg_c_utf8"})
_NATURAL = frozenset(
    {"int2", "int4", "int8", "oid", "date", "timestamp", "timestamptz", "bytea", "uuid"}
)
_STRINGS = frozenset({"text", "varchar", "name", "bpchar"})


def key_sort_function(
    column: PgColumn, decimal_mode: str = "precise"
) -> Callable[[Any], Any] | None:
    """For a chunk key column, a function of the canonical value that sorts in Python as
    PostgreSQL's default btree order sorts the column; None when the canonical values'
    natural order already does. Raises :class:`UnorderableKeyError` otherwise.

    Natural: integers, oid, numeric read as decimal (no NaN there), date, timestamp,
    timestamptz, bytea (memcmp, then length: Python's bytes order) and uuid (memcmp of the
    16 bytes: the fixed-width lowercase hex text sorts alike). Strings need a code point
    collation (:data:`CODE_POINT_COLLATIONS`) that is deterministic; bpchar compares
    without its trailing spaces ('a' < 'a\\t' though the padded 'a   ' > 'a\\t  ').

    The infinity sentinels make 'infinity' equal to 9999-12-31 (23:59:59.999999) and
    '-infinity' equal to 0001-01-01 (00:00): a key column holding both a sentinel and that
    very value has two rows with equal Python keys, which the server orders.
    """
    pg_type = column.type
    family, _ = _family(pg_type, decimal_mode)
    if pg_type.element is not None:
        raise _unorderable(column, "arrays are not supported as chunk keys")
    if pg_type.kind == "b" and (pg_type.name in _NATURAL or family == "decimal"):
        return None
    if pg_type.kind == "b" and pg_type.name in _STRINGS:
        if column.collation not in CODE_POINT_COLLATIONS or not column.deterministic:
            raise _unorderable(
                column,
                f"its collation {column.collation!r} does not order strings by code point, "
                "so Python cannot reproduce the server's order. Pick another column with "
                "'scan.incremental.snapshot.chunk.key-column', or give this one "
                'COLLATE "C" (ALTER TABLE ... ALTER COLUMN ... TYPE ... COLLATE "C")',
            )
        return _bpchar_key if pg_type.name == "bpchar" else None
    if pg_type.name == "numeric" and pg_type.kind == "b":
        reason = (
            "numeric columns read as text (decimal.handling.mode 'string', or no precision "
            "and scale within decimal(38)) are not supported"
        )
    elif pg_type.name in ("float4", "float8") and pg_type.kind == "b":
        reason = "floating point keys are not supported (NaN orders above all numbers)"
    else:
        reason = f"type {_declared(column)} is not supported"
    raise _unorderable(
        column,
        f"{reason}. Pick another column with 'scan.incremental.snapshot.chunk.key-column'",
    )


def _bpchar_key(value: str) -> str:
    """bpchar compares without trailing spaces (other white space counts)."""
    return value.rstrip(" ")


def _unorderable(column: PgColumn, reason: str) -> UnorderableKeyError:
    return UnorderableKeyError(
        f"column {column.name!r} ({_declared(column)}) cannot be the chunk key: {reason}"
    )

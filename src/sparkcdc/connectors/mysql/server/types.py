"""MySQL/MariaDB column types as Arrow types, and one canonical Python value per type.

Rows reach Spark by two paths: snapshot reads (mysqlclient, text protocol) and binlog reads
(python-mysql-replication 1.0.17). For the same stored value the two drivers return
different Python objects (a BIT is ``bytes`` in one and a ``'0101'`` string in the other, a
zero TIMESTAMP is ``None`` in one and 1970-01-01 in the other, ...). The converters here
turn both into one canonical value per Arrow type, so ``pa.array(values,
type=arrow_type(col))`` builds identical arrays from either path. Canonical values are
``bool``, ``int``, ``float``, ``Decimal``, ``str``, ``bytes``, ``date``, naive ``datetime``
(DATETIME), UTC-aware ``datetime`` (TIMESTAMP) and ``None``.

The type mapping follows Flink CDC's MySQL mapping where Spark can express it. This module
must not import pyspark (connectors/ layer rule: the Spark layer maps Arrow to Spark) nor,
at module level, any driver: it is pickled to Spark executors.

Time zones. TIMESTAMP is an instant. The binlog stores it as a UTC epoch, so the binlog path
is exact whatever the server's or this process's time zone. The snapshot path reads text,
which the server renders in the session time zone: snapshot sessions must run
``SET time_zone = '+00:00'`` (the converters read that text as UTC). DATETIME is a
wall-clock value without zone and is never shifted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from typing import Any

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog.mysql_json import (
    JsonPrinting,
    MySqlJsonBinary,
    MySqlJsonText,
    document_text,
)
from sparkcdc.connectors.mysql.server.sql import quote

#: Converts one driver value (``None`` included) to the canonical value.
Converter = Callable[[Any], Any]

UTC = timezone.utc


class UnsupportedTypeError(ValueError):
    """A column type this connector cannot represent in Arrow/Spark."""


@dataclass(frozen=True)
class MySqlColumn:
    """One column as information_schema.COLUMNS describes it (MySQL 5.7+/8, MariaDB)."""

    name: str
    ordinal: int
    data_type: str  #: lower case, e.g. 'bigint', 'enum', 'longtext' (MariaDB JSON)
    column_type: str  #: full text, e.g. 'bigint(20) unsigned', "enum('a','b')"
    unsigned: bool = False
    precision: int | None = None
    scale: int | None = None
    datetime_precision: int | None = None
    charset: str | None = None
    collation: str | None = None
    nullable: bool = True
    primary_key: bool = False
    #: ``treat-tinyint1-as-boolean.enabled`` as the column was captured with (every column
    #: of a table carries it, so a column a later ALTER adds takes it from its neighbours;
    #: it only matters to a TINYINT(1)): its values are BOOLEAN, or TINYINT numbers.
    tinyint1_boolean: bool = True
    #: COLUMN_COMMENT (None: none): not part of the column's shape (core/comments.py)
    comment: str | None = field(default=None, compare=False)

    @classmethod
    def from_information_schema(
        cls, row: Mapping[str, Any], tinyint1_boolean: bool = True, comment: bool = False
    ) -> MySqlColumn:
        """Build from one information_schema.COLUMNS row (a dict cursor row); its
        COLUMN_COMMENT kept when ``comment``."""
        column_type = _text(row["COLUMN_TYPE"])
        return cls(
            name=_text(row["COLUMN_NAME"]),
            ordinal=int(row["ORDINAL_POSITION"]),
            data_type=_text(row["DATA_TYPE"]).lower(),
            column_type=column_type,
            unsigned=" unsigned" in column_type.lower(),
            precision=_int_or_none(row.get("NUMERIC_PRECISION")),
            scale=_int_or_none(row.get("NUMERIC_SCALE")),
            datetime_precision=_int_or_none(row.get("DATETIME_PRECISION")),
            charset=_text_or_none(row.get("CHARACTER_SET_NAME")),
            collation=_text_or_none(row.get("COLLATION_NAME")),
            nullable=_text(row.get("IS_NULLABLE", "YES")).upper() == "YES",
            primary_key=_text(row.get("COLUMN_KEY") or "") == "PRI",
            tinyint1_boolean=tinyint1_boolean,
            comment=(_text(row.get("COLUMN_COMMENT") or "") or None) if comment else None,
        )

    @property
    def width(self) -> int | None:
        """The number in the type's parentheses: 1 for tinyint(1), 12 for bit(12), 4 for
        binary(4); None when absent (MySQL 8.0.19+ drops integer display widths except
        tinyint(1))."""
        if self.data_type in ("enum", "set"):
            return None
        match = re.search(r"\((\d+)", self.column_type)
        return int(match.group(1)) if match else None

    @property
    def labels(self) -> tuple[str, ...]:
        """ENUM/SET labels in definition order, unescaped from COLUMN_TYPE's SQL literals."""
        if self.data_type not in ("enum", "set"):
            return ()
        return tuple(_parse_labels(self.column_type))

    @property
    def fsp(self) -> int:
        """Fractional seconds digits of TIME/DATETIME/TIMESTAMP (0 when none)."""
        return self.datetime_precision or 0


# ---------------------------------------------------------------------------------------
# Type families: one classification shared by arrow_type and both converter builders.

_INTEGERS: Mapping[str, tuple[pa.DataType, pa.DataType]] = {
    # data_type: (signed, unsigned); BIGINT UNSIGNED is the 'uint64' family.
    "tinyint": (pa.int8(), pa.int16()),
    "smallint": (pa.int16(), pa.int32()),
    "mediumint": (pa.int32(), pa.int32()),
    "int": (pa.int32(), pa.int64()),
    "integer": (pa.int32(), pa.int64()),
    "bigint": (pa.int64(), pa.int64()),
}
_DECIMALS = frozenset({"decimal", "numeric", "dec", "fixed"})
_TEXTS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})
_BINARIES = frozenset({"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"})
_SPATIAL = frozenset(
    {
        "geometry",
        "point",
        "linestring",
        "polygon",
        "multipoint",
        "multilinestring",
        "multipolygon",
        "geometrycollection",
        "geomcollection",
    }
)
#: Spark's DecimalType (and Arrow decimal128) stop at 38 digits; MariaDB allows 65.
MAX_DECIMAL_PRECISION = 38

_FIXED_ARROW: Mapping[str, pa.DataType] = {
    "bool": pa.bool_(),
    "uint64": pa.decimal128(20, 0),
    "decimal_text": pa.string(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "bits": pa.binary(),
    "date": pa.date32(),
    "datetime": pa.timestamp("us"),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "time": pa.string(),
    "year": pa.int32(),
    "string": pa.string(),
    "json": pa.string(),
    "enum": pa.string(),
    "set": pa.string(),
    "binary": pa.binary(),
    "geometry": pa.binary(),
}


def value_family(col: MySqlColumn) -> str:
    """How a column's values travel (bool, int, uint64, decimal, decimal_text, date, time,
    string, ...): the key to its Arrow type and converters."""
    return _family(col)


def reads_tinyint1_as_boolean(col: MySqlColumn) -> bool:
    """Whether ``col`` is a TINYINT(1) (what BOOLEAN is in MySQL) read as BOOLEAN: Flink
    CDC's default; ``treat-tinyint1-as-boolean.enabled: false`` reads it as a TINYINT
    number like any other (signed: a byte, unsigned: a short). The one place that decides
    it: every reader, decoder, chunk key and DDL check goes through :func:`value_family`.
    MySQL 8.0.19+ drops integer display widths from COLUMN_TYPE but keeps tinyint(1);
    MariaDB and MySQL 5.7 / 8.0.17 and older keep them all."""
    if col.data_type in ("bool", "boolean"):
        return col.tinyint1_boolean
    return col.data_type == "tinyint" and col.width == 1 and col.tinyint1_boolean


def _family(col: MySqlColumn) -> str:
    t = col.data_type
    if t in ("bool", "boolean") and not col.tinyint1_boolean:
        return "int"
    if reads_tinyint1_as_boolean(col):
        return "bool"  # BOOLEAN is TINYINT(1); Flink CDC maps it to BOOLEAN
    if t in _INTEGERS:
        return "uint64" if t == "bigint" and col.unsigned else "int"
    if t in _DECIMALS:
        return "decimal" if _decimal_precision(col) <= MAX_DECIMAL_PRECISION else "decimal_text"
    if t == "float":
        return "float32"
    if t in ("double", "real", "double precision"):
        return "float64"
    if t == "bit":
        return "bool" if (col.width or col.precision or 1) == 1 else "bits"
    if t in ("date", "datetime", "timestamp", "time", "year", "json", "enum", "set"):
        return t
    if t in _TEXTS:
        return "string"  # includes MariaDB JSON (LONGTEXT with a json_valid check)
    if t in _BINARIES:
        return "binary"
    if t in _SPATIAL:
        return "geometry"
    raise UnsupportedTypeError(
        f"column '{col.name}' has type '{col.column_type}', which sparkcdc cannot capture "
        f"(no Arrow/Spark mapping for MySQL type '{t}')"
    )


def arrow_type(col: MySqlColumn) -> pa.DataType:
    """The Arrow type a column's values are delivered as (Spark maps it later)."""
    family = _family(col)
    if family == "int":
        # BOOL / BOOLEAN read as numbers are TINYINT(1)s
        signed, unsigned = _INTEGERS.get(col.data_type, _INTEGERS["tinyint"])
        return unsigned if col.unsigned else signed
    if family == "decimal":
        return pa.decimal128(_decimal_precision(col), col.scale or 0)
    return _FIXED_ARROW[family]


# ---------------------------------------------------------------------------------------
# Snapshot path: mysqlclient, text protocol.


def snapshot_conversions(text_values: bool = False) -> dict[Any, Any]:
    """The ``conv`` mapping for ``MySQLdb.connect(conv=..., charset='utf8mb4')``.

    mysqlclient's default temporal converters slice strings in Python and are ~3x slower
    than ``fromisoformat``. TIME is kept as the server's text, which already is the canonical
    value. TIMESTAMP text is read as UTC: the session must run ``SET time_zone = '+00:00'``.
    Zero and invalid dates (``'0000-00-00'``, ``'2020-02-30'`` under ALLOW_INVALID_DATES)
    become None, as Python cannot represent them.
    """
    from MySQLdb.constants import FIELD_TYPE
    from MySQLdb.converters import conversions

    conv: dict[Any, Any] = dict(conversions)
    conv[FIELD_TYPE.DATE] = _parse_date
    conv[FIELD_TYPE.DATETIME] = _parse_datetime
    conv[FIELD_TYPE.TIMESTAMP] = _parse_utc_timestamp
    conv[FIELD_TYPE.TIME] = str  # mysqlclient's C fast path: decode, nothing else
    if text_values:  # bulk reads: Arrow parses whole columns (see text_cast_type)
        for field_type in (
            FIELD_TYPE.DATE,
            FIELD_TYPE.DATETIME,
            FIELD_TYPE.TIMESTAMP,
            FIELD_TYPE.DECIMAL,
            FIELD_TYPE.NEWDECIMAL,
        ):
            conv[field_type] = str
    return conv


def text_cast_type(col: MySqlColumn) -> pa.DataType | None:
    """The Arrow type that ``col``'s text (read with ``text_values=True``) casts to in bulk.

    Building Arrow arrays from per-value Python dates and Decimals costs most of a
    snapshot's CPU; Arrow parses the server's text for a whole column at once instead.
    Values Arrow rejects (zero dates) fall back to :func:`text_parser`.
    """
    family = _family(col)
    if family in ("date", "datetime", "timestamp", "decimal"):
        target = arrow_type(col)
        return pa.timestamp("us") if family == "timestamp" else target
    return None


def text_parser(col: MySqlColumn) -> Converter | None:
    """Canonical value of ``col`` from its text form (None: the text is not parsed)."""
    family = _family(col)
    if family == "date":
        return _parse_date
    if family == "datetime":
        return _parse_datetime
    if family == "timestamp":
        return _parse_utc_timestamp
    if family == "decimal":
        return Decimal
    return None


def snapshot_select_expression(col: MySqlColumn) -> str:
    """The SELECT-list item that reads ``col`` exactly over the text protocol.

    The server prints FLOAT with 6 significant digits (123456789 -> '123457000'), losing the
    stored float32 value that the binlog carries. Widening to DOUBLE prints it exactly:
    multiplied by a DOUBLE one (``CAST(... AS DOUBLE)`` is MariaDB's and MySQL 8.0.17+'s
    only; the product keeps -0.0, which adding zero would not).
    """
    name = quote(col.name)
    return f"({name} * 1e0) AS {name}" if col.data_type == "float" else name


def snapshot_converter(col: MySqlColumn, text_values: bool = False) -> Converter | None:
    """Converter for values read with :func:`snapshot_conversions` and
    :func:`snapshot_select_expression`; None when they already are canonical.

    With ``text_values`` the columns of :func:`text_cast_type` stay text (Arrow casts them)
    and DECIMALs beyond 38 digits already arrive as their exact plain text.
    """
    family = _family(col)
    if text_values and (family == "decimal_text" or text_cast_type(col) is not None):
        return None
    if family == "bool":
        if col.data_type == "bit":
            return _bit_bytes_to_bool  # BIT(1) comes as b'\\x00' / b'\\x01'
        return _int_to_bool
    if family == "uint64":
        return _to_decimal
    if family == "decimal_text":
        return _decimal_text_converter(col.scale or 0)
    return None


def _parse_date(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None  # '0000-00-00', '2020-00-15', '2020-02-30'


def _parse_datetime(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return _parse_datetime_slow(text)


def _parse_datetime_slow(text: str) -> datetime | None:
    """Python 3.10's fromisoformat takes only 3 or 6 fraction digits; zero dates land here."""
    head, _, fraction = text.partition(".")
    try:
        value = datetime.strptime(head, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return value.replace(microsecond=int(fraction.ljust(6, "0")[:6])) if fraction else value


def _parse_utc_timestamp(text: str) -> datetime | None:
    value = _parse_datetime(text)
    return None if value is None else value.replace(tzinfo=UTC)


# ---------------------------------------------------------------------------------------
# Binlog path: python-mysql-replication 1.0.17 row event values.


def binlog_converter(
    col: MySqlColumn,
    server_time_zone: tzinfo | None = None,
    json_printing: JsonPrinting = "mysql8",
) -> Converter | None:
    """Converter for ``event.rows[i][...values][col.name]``; None when already canonical.

    What python-mysql-replication 1.0.17 returns and what is fixed here:

    - TINYINT(1)/BOOLEAN: int -> bool. BIGINT UNSIGNED: int -> Decimal.
    - BIT(n): a str of '0'/'1' -> bool (n = 1) or big-endian bytes of ceil(n/8) bytes.
    - TIMESTAMP: ``datetime.utcfromtimestamp(epoch)``, a naive UTC datetime (independent of
      the process time zone) -> UTC-aware. A zero TIMESTAMP is stored as epoch 0 and arrives
      as 1970-01-01 00:00:00 -> None (0 is outside TIMESTAMP's valid range).
    - TIME: timedelta -> MySQL text with exactly fsp digits. Negative values with a
      fraction are mis-decoded (-00:00:00.1 arrives as -00:00:00.9: the library reads the
      two's-complement fraction as its own value), so the fraction is mirrored back.
    - YEAR: the library adds 1900 to the stored byte, so YEAR 0000 arrives as 1900 -> 0.
    - BINARY(n): the binlog drops the trailing 0x00 padding that SELECT returns -> re-padded.
      Empty BINARY/VARBINARY/BLOB values arrive as '' (str) -> b''.
    - SET: a Python ``set`` of labels -> labels joined in definition order. An empty SET
      arrives as None, like NULL: fix it first with :func:`restore_empty_sets`.
    - JSON (MySQL only; MariaDB JSON is text): the reader has the library leave the binary
      document as it is, printed here as the server prints it (binlog/mysql_json.py, with
      ``json_printing``: MySQL 5.7 prints some values otherwise than 8.0); values the
      library parsed itself (keys and strings as bytes) are printed in MySQL 8's layout.
    - Strings in charsets Python cannot decode arrive as bytes -> decoded.
    - DATE/DATETIME with zero parts and invalid DATETIMEs already arrive as None, DECIMAL as
      Decimal. An invalid DATE ('2020-02-30' under ALLOW_INVALID_DATES) makes the library
      raise ValueError while decoding the event: no converter can help there.

    ``server_time_zone`` does not change any result: binlog TIMESTAMPs are UTC epochs (the
    library's naive value is UTC whatever the server's or this process's zone) and DATETIMEs
    are zone-less wall-clock values. It is accepted so callers need not know that; an
    already-aware TIMESTAMP (another driver version) is converted to UTC by its own offset.
    """
    del server_time_zone  # see docstring: the binlog path needs no zone
    family = _family(col)
    if family == "bool":
        return _bits_to_bool if col.data_type == "bit" else _int_to_bool
    fixed = _BINLOG_FIXED.get(family)
    if fixed is not None:
        return fixed
    if family == "decimal_text":
        return _decimal_text_converter(col.scale or 0)
    if family == "bits":
        return _bits_converter(((col.width or col.precision or 1) + 7) // 8)
    if family == "time":
        return _binlog_time_converter(col.fsp)
    if family == "binary":
        return _padding_converter((col.width or 0) if col.data_type == "binary" else 0)
    if family == "set":
        return _set_converter(col.labels)
    if family == "json":
        return _json_converter(json_printing)
    if family in ("string", "enum"):
        return _decoding_converter(col.charset)
    return None


def restore_empty_sets(values: dict[str, Any], none_sources: Mapping[str, str]) -> dict[str, Any]:
    """Put back empty SETs that python-mysql-replication reported as None.

    The library returns None for both NULL and '' (empty SET) and only tells them apart in
    the row's ``none_sources``/``before_none_sources``/``after_none_sources`` ('empty set').
    Call this on each image before converting; it edits and returns ``values``.
    """
    for name, source in none_sources.items():
        if source == "empty set":
            values[name] = ""
    return values


_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=UTC)


def _binlog_timestamp(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        # 1.0.17 decodes with utcfromtimestamp: naive, but UTC.
        return None if value == _EPOCH else value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    return None if value == _EPOCH_UTC else value


def _binlog_year(value: int | None) -> int | None:
    return 0 if value == 1900 else value


def _binlog_time_converter(fsp: int) -> Converter:
    def convert(value: timedelta | None) -> str | None:
        if value is None:
            return None
        micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
        seconds, fraction = divmod(abs(micros), 1_000_000)
        if micros < 0 and fraction:
            fraction = 1_000_000 - fraction  # undo the library's negative-fraction bug
        return format_time(micros < 0, seconds, fraction, fsp)

    return convert


def format_time(negative: bool, seconds: int, micros: int, fsp: int) -> str:
    """MySQL's text for a TIME value: ``[-]HH:MM:SS[.f]`` with exactly ``fsp`` digits,
    hours unbounded (TIME spans -838:59:59 to 838:59:59)."""
    hours, rest = divmod(seconds, 3600)
    text = f"{'-' if negative else ''}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{text}.{micros:06d}"[: len(text) + 1 + fsp] if fsp else text


def _bits_to_int(value: str | bytes | int) -> int:
    if isinstance(value, str):
        return int(value, 2)  # the library's '0101...' text, most significant bit first
    if isinstance(value, bytes):
        return int.from_bytes(value, "big")
    return value


def _bits_to_bool(value: str | bytes | int | None) -> bool | None:
    return None if value is None else _bits_to_int(value) != 0


def _bits_converter(size: int) -> Converter:
    def convert(value: str | bytes | int | None) -> bytes | None:
        return None if value is None else _bits_to_int(value).to_bytes(size, "big")

    return convert


def _padding_converter(size: int) -> Converter:
    """Binary strings: BINARY(n) re-padded to n bytes; an empty value arrives as '' (str),
    because CPython decodes empty input with any codec name, even the unknown 'binary'."""

    def convert(value: bytes | str | None) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = value.encode()  # only '' can get here
        return value.ljust(size, b"\x00") if size else value

    return convert


def _set_converter(labels: tuple[str, ...]) -> Converter:
    def convert(value: set[str] | str | None) -> str | None:
        if value is None or isinstance(value, str):
            return value
        return ",".join(label for label in labels if label in value)

    return convert


#: MySQL charsets whose values the library already decodes to str.
_DECODED_CHARSETS = frozenset({None, "utf8mb4", "utf8mb3", "utf8", "latin1", "ascii"})
_PYTHON_CODECS = {"ucs2": "utf-16-be", "utf16": "utf-16-be", "utf32": "utf-32-be"}


def _decoding_converter(charset: str | None) -> Converter | None:
    if charset in _DECODED_CHARSETS:
        return None
    codec = _PYTHON_CODECS.get(str(charset), str(charset))

    def convert(value: str | bytes | None) -> str | None:
        return value.decode(codec) if isinstance(value, bytes) else value

    return convert


# ---------------------------------------------------------------------------------------
# Shared small converters.


def _int_to_bool(value: int | None) -> bool | None:
    return None if value is None else value != 0


def _bit_bytes_to_bool(value: bytes | None) -> bool | None:
    return None if value is None else value != b"\x00"


def _to_decimal(value: int | None) -> Decimal | None:
    return None if value is None else Decimal(value)


#: The binlog path's converters that depend on the family alone (:func:`binlog_converter`;
#: the others take the column's scale, width, precision, labels or charset).
_BINLOG_FIXED: dict[str, Converter] = {
    "uint64": _to_decimal,
    "timestamp": _binlog_timestamp,
    "year": _binlog_year,
}


def _decimal_text_converter(scale: int) -> Converter:
    """DECIMAL(p > 38) as its exact plain text with ``scale`` digits, as SELECT prints it."""
    spec = f".{scale}f"

    def convert(value: Decimal | None) -> str | None:
        return None if value is None else format(value, spec)

    return convert


def _json_converter(printing: JsonPrinting) -> Converter:
    def convert(value: Any) -> str | None:
        if isinstance(value, MySqlJsonBinary):
            return str(document_text(value, printing))
        return None if value is None else json_text(value)

    return convert


def json_text(value: Any) -> str:
    """MySQL 8's canonical JSON text (``{"a": 1, "b": [1, 2]}``) for a value parsed from
    its binary JSON by python-mysql-replication (keys and strings are bytes); the reader
    has it decode JSON columns into the server's exact text (binlog/mysql_json.py), which
    passes as it is."""
    if isinstance(value, MySqlJsonText):
        return str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, bytes | str):
        text = value.decode("utf-8") if isinstance(value, bytes) else value
        return json.dumps(text, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value).replace("e+", "e")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, dict):
        items = (f"{json_text(k)}: {json_text(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(json_text(v) for v in value) + "]"
    if isinstance(value, datetime):
        return f'"{value:%Y-%m-%d %H:%M:%S}.{value.microsecond:06d}"'
    if isinstance(value, time):
        return f'"{value:%H:%M:%S}.{value.microsecond:06d}"'
    if isinstance(value, date):
        return f'"{value.isoformat()}"'
    raise ValueError(f"cannot render {type(value).__name__} from a binlog JSON value as JSON")


# ---------------------------------------------------------------------------------------
# information_schema parsing helpers.


def _decimal_precision(col: MySqlColumn) -> int:
    return col.precision if col.precision is not None else (col.width or 10)


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else _text(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "b": "\b"}


def _parse_labels(column_type: str) -> list[str]:
    """Labels of "enum('a''b','c\\\\d')": SQL literals with '' and backslash escapes."""
    labels: list[str] = []
    body = column_type[column_type.index("(") + 1 : column_type.rindex(")")]
    i, n = 0, len(body)
    while i < n:
        if body[i] != "'":
            i += 1  # the commas between literals
            continue
        chars: list[str] = []
        i += 1
        while i < n:
            c = body[i]
            if c == "\\" and i + 1 < n:
                chars.append(_ESCAPES.get(body[i + 1], body[i + 1]))
                i += 2
            elif c == "'" and i + 1 < n and body[i + 1] == "'":
                chars.append("'")
                i += 2
            elif c == "'":
                i += 1
                break
            else:
                chars.append(c)
                i += 1
        labels.append("".join(chars))
    return labels

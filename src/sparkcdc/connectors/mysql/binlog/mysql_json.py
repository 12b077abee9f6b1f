"""MySQL's binary JSON (the JSON column's format in row events) as the exact text the server
prints for the document, so a JSON value read from the binlog equals the snapshot's.

python-mysql-replication parses binary JSON into Python values, which loses what the text
needs: a JSON ``null`` document becomes None (SQL NULL), DATE and negative TIME values
stored in a document come back as other values, and doubles are printed another way. This
module decodes the format itself (MySQL's ``json_binary.h``) and prints it as
``Json_wrapper::to_string`` does: ``{"k": v, "k2": v2}`` in stored key order, ``[a, b]``,
strings with JSON escapes and UTF-8 as it is, doubles shortest and with a ``.0`` on whole
numbers, temporal values quoted with six fraction digits, decimals as numbers, other opaque
values as ``"base64:typeN:..."``.

MySQL 5.7 prints two things otherwise (checked against 5.7.19): a double with neither point
nor exponent stays as it is (``3``, not ``3.0``) and ``double_quote`` escapes control
characters below U+001F only (U+001F itself stays raw). The printing is the server's
(``ServerFlavor.json_printing``); the row decoder passes it, so one process can read both.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Literal, NamedTuple

#: How a server prints JSON: MySQL 8.0 and later, or 5.7.
JsonPrinting = Literal["mysql8", "mysql57"]

#: Value types of the binary format.
SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY = 0x0, 0x1, 0x2, 0x3
LITERAL, INT16, UINT16, INT32, UINT32, INT64, UINT64, DOUBLE = (
    0x4,
    0x5,
    0x6,
    0x7,
    0x8,
    0x9,
    0xA,
    0xB,
)
STRING, OPAQUE = 0xC, 0xF
#: MySQL field types an opaque value can hold that the server prints as values.
_NEWDECIMAL, _DATE, _TIME, _DATETIME, _TIMESTAMP = 246, 10, 11, 12, 7


class MySqlJsonText(str):
    """A JSON document's text decoded from the binlog (types.json_text passes it as is;
    unlike a parsed ``null``, it is never taken for SQL NULL)."""


class MySqlJsonBinary(bytes):
    """A binary JSON document as the row event holds it (type byte, then the value), left
    for the row decoder to print with its server's :data:`JsonPrinting`."""


class _Printer(NamedTuple):
    quote: Callable[[str], str]
    double: Callable[[float], str]


def document_text(data: bytes, printing: JsonPrinting = "mysql8") -> MySqlJsonText:
    """The server's text of a binary JSON document (type byte, then the value)."""
    if not data:
        return MySqlJsonText("null")  # MySQL writes an empty value for a JSON null too
    return MySqlJsonText(_value(data[0], data, 1, _PRINTERS[printing]))


def _value(kind: int, data: bytes, at: int, printer: _Printer) -> str:
    if kind in (SMALL_OBJECT, LARGE_OBJECT, SMALL_ARRAY, LARGE_ARRAY):
        return _container(kind, data, at, printer)
    if kind == LITERAL:
        return {0: "null", 1: "true", 2: "false"}[data[at]]
    if kind in _INTEGERS:
        fmt, _ = _INTEGERS[kind]
        return str(struct.unpack_from(fmt, data, at)[0])
    if kind == DOUBLE:
        return printer.double(struct.unpack_from("<d", data, at)[0])
    if kind == STRING:
        length, at = _varlen(data, at)
        return printer.quote(data[at : at + length].decode("utf-8"))
    if kind == OPAQUE:
        return _opaque(data, at, printer.quote)
    raise ValueError(f"unknown binary JSON value type {kind}")


#: Integer types: struct format and size (inlined in a container's entry when they fit).
_INTEGERS = {
    INT16: ("<h", 2),
    UINT16: ("<H", 2),
    INT32: ("<i", 4),
    UINT32: ("<I", 4),
    INT64: ("<q", 8),
    UINT64: ("<Q", 8),
}


def _container(kind: int, data: bytes, at: int, printer: _Printer) -> str:
    large = kind in (LARGE_OBJECT, LARGE_ARRAY)
    obj = kind in (SMALL_OBJECT, LARGE_OBJECT)
    word = "<I" if large else "<H"
    size = 4 if large else 2
    count = struct.unpack_from(word, data, at)[0]
    base = at  # offsets count from the container's start (after its type byte)
    entries = at + 2 * size
    keys: list[str] = []
    if obj:
        for i in range(count):
            entry = entries + i * (size + 2)
            offset = struct.unpack_from(word, data, entry)[0]
            length = struct.unpack_from("<H", data, entry + size)[0]
            keys.append(data[base + offset : base + offset + length].decode("utf-8"))
        entries += count * (size + 2)
    values = []
    for i in range(count):
        entry = entries + i * (1 + size)
        value_kind = data[entry]
        if _inlined(value_kind, large):
            values.append(_value(value_kind, data, entry + 1, printer))
        else:
            offset = struct.unpack_from(word, data, entry + 1)[0]
            values.append(_value(value_kind, data, base + offset, printer))
    if obj:
        pairs = zip(keys, values, strict=True)
        return "{" + ", ".join(f"{printer.quote(k)}: {v}" for k, v in pairs) + "}"
    return "[" + ", ".join(values) + "]"


def _inlined(kind: int, large: bool) -> bool:
    return kind in (LITERAL, INT16, UINT16) or (large and kind in (INT32, UINT32))


def _varlen(data: bytes, at: int) -> tuple[int, int]:
    """A variable-length size (7 bits a byte, high bit: more) and where the data starts."""
    length = shift = 0
    while True:
        byte = data[at]
        at += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return length, at


def quote(text: str) -> str:
    """A JSON string as MySQL prints it: ``"`` and ``\\`` escaped, control characters as
    ``\\n``-style or ``\\u00XX`` escapes, everything else as it is."""
    return json.dumps(text, ensure_ascii=False)


#: MySQL 5.7's ``double_quote`` escapes: the named ones, then ``\u00XX`` below U+001F.
_QUOTE_57 = {
    **{chr(c): f"\\u{c:04x}" for c in range(0x1F)},
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    '"': '\\"',
    "\\": "\\\\",
}
_QUOTE_57_TABLE = str.maketrans(_QUOTE_57)


def quote_57(text: str) -> str:
    """A JSON string as MySQL 5.7 prints it: as :func:`quote`, but U+001F unescaped (5.7's
    ``double_quote`` tests ``< 0x1f``)."""
    return '"' + text.translate(_QUOTE_57_TABLE) + '"'


#: MySQL's ``MAX_DECPT_FOR_F_FORMAT`` (``DBL_DIG``) and the field width JSON prints doubles
#: in (``MY_GCVT_MAX_FIELD_WIDTH``: ``DBL_DIG + 4 + max(5, MAX_DECPT_FOR_F_FORMAT)``).
_MAX_DECPT_FOR_F = 15
_JSON_DOUBLE_WIDTH = 15 + 4 + 15


def double_text(value: float) -> str:
    """A JSON double as MySQL 8.0 prints it: :func:`double_text_57`, then ``.0`` on a
    number with neither point nor exponent."""
    text = double_text_57(value)
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def double_text_57(value: float) -> str:
    """A JSON double as MySQL 5.7 prints it (``my_gcvt`` at JSON's field width): the
    shortest digits that read back as
    the same double, placed in fixed notation when that is no longer than the exponent
    form and the decimal exponent is within 15, else as ``1.5e-7`` / ``1e15``."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("JSON holds no NaN or infinity")
    sign = "-" if str(value).startswith("-") else ""
    width = _JSON_DOUBLE_WIDTH - (1 if value < 0 else 0)
    if value == 0:
        digits, decpt = "0", 1
    else:
        exact = Decimal(repr(abs(value)))  # repr: the shortest round-tripping digits
        shape = exact.as_tuple()
        digits = "".join(str(d) for d in shape.digits).rstrip("0") or "0"
        decpt = len(shape.digits) + int(shape.exponent)
    length = len(digits)
    exp_len = 1 + (decpt >= 101 or decpt <= -99) + (decpt >= 11 or decpt <= -9)
    f_length = length - decpt + 2 if decpt <= 0 else (length + 1 if decpt < length else decpt)
    have_space = f_length <= width
    force_e = decpt <= 0 and width <= 2 - decpt and width >= 3 + exp_len
    fixed = (
        have_space
        or (
            (decpt <= width and (decpt >= -1 or (decpt == -2 and (length > 1 or not force_e))))
            and not force_e
        )
    ) and (
        not have_space
        or (decpt >= -_MAX_DECPT_FOR_F + 1 and (decpt <= _MAX_DECPT_FOR_F or length > decpt))
    )
    if fixed:
        if decpt <= 0:
            text = "0." + "0" * -decpt + digits
        elif decpt < length:
            text = digits[:decpt] + "." + digits[decpt:]
        else:
            text = digits + "0" * (decpt - length)
    else:
        mantissa = digits[0] + ("." + digits[1:] if length > 1 else "")
        text = f"{mantissa}e{decpt - 1}"
    return sign + text


_PRINTERS: dict[JsonPrinting, _Printer] = {
    "mysql8": _Printer(quote, double_text),
    "mysql57": _Printer(quote_57, double_text_57),
}


def _opaque(data: bytes, at: int, quote: Callable[[str], str]) -> str:
    field = data[at]
    length, at = _varlen(data, at + 1)
    body = data[at : at + length]
    if field == _NEWDECIMAL:
        return _decimal(body)
    if field in (_DATETIME, _TIMESTAMP, _DATE) and len(body) >= 8:
        return _datetime(struct.unpack_from("<q", body)[0], field == _DATE)
    if field == _TIME and len(body) >= 8:
        return _time(struct.unpack_from("<q", body)[0])
    return quote(f"base64:type{field}:{base64.b64encode(body).decode('ascii')}")


def _decimal(body: bytes) -> str:
    """MySQL's binary DECIMAL (precision, scale, then the packed digits) as its text."""
    precision, scale = body[0], body[1]
    digits = bytes(body[2:])
    integral = precision - scale
    sizes = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)
    negative = not digits[0] & 0x80
    raw = bytearray(digits)
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    pos = 0
    parts: list[str] = []

    def take(width: int, count: int) -> str:
        nonlocal pos
        value = int.from_bytes(raw[pos : pos + width], "big") if width else 0
        pos += width
        return str(value).zfill(count) if count else ""

    lead = integral % 9
    parts.append(take(sizes[lead], lead))
    for _ in range(integral // 9):
        parts.append(take(4, 9))
    fraction = [take(4, 9) for _ in range(scale // 9)]
    tail = scale % 9
    fraction.append(take(sizes[tail], tail))
    text = "".join(parts).lstrip("0") or "0"
    if scale:
        text += "." + "".join(fraction)
    value = Decimal(("-" if negative else "") + text)
    return format(value, "f")


def _datetime(packed: int, date_only: bool) -> str:
    negative = packed < 0
    packed = abs(packed)
    fraction = packed % (1 << 24)
    whole = packed >> 24
    ymd, hms = whole >> 17, whole % (1 << 17)
    year_month, day = ymd >> 5, ymd % 32
    year, month = year_month // 13, year_month % 13
    hour, minute, second = hms >> 12, (hms >> 6) % 64, hms % 64
    sign = "-" if negative else ""
    if date_only:
        return f'"{sign}{year:04d}-{month:02d}-{day:02d}"'
    return (
        f'"{sign}{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:{second:02d}'
        f'.{fraction:06d}"'
    )


def _time(packed: int) -> str:
    negative = packed < 0
    packed = abs(packed)
    fraction = packed % (1 << 24)
    hms = packed >> 24
    hour, minute, second = (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64
    sign = "-" if negative else ""
    return f'"{sign}{hour:02d}:{minute:02d}:{second:02d}.{fraction:06d}"'


def install() -> None:
    """Make python-mysql-replication leave JSON columns as :class:`MySqlJsonBinary` for
    :func:`document_text` (its ``read_binary_json`` calls the module's
    ``parse_json(type, data)``)."""
    from pymysqlreplication import packet

    if getattr(packet.parse_json, "__module__", "") != __name__:
        packet.parse_json = _library_hook


def _library_hook(kind: int, data: bytes) -> MySqlJsonBinary:
    return MySqlJsonBinary(bytes([kind]) + bytes(data))

"""MySQL's binary JSON printed as each server prints it (binlog/mysql_json.py): 8.0's text,
and 5.7's (integral doubles without ``.0``, U+001F unescaped), checked on documents built
here in the binary format; the integration side is tests/integration/test_mysql8_types.py."""

from __future__ import annotations

import json
import struct

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.mysql_json import (
    DOUBLE,
    SMALL_ARRAY,
    SMALL_OBJECT,
    STRING,
    document_text,
    double_text,
    double_text_57,
    quote,
    quote_57,
)
from sparkcdc.connectors.mysql.server.flavor import ServerFlavor

finite = st.floats(allow_nan=False, allow_infinity=False)


def _varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _scalar(value: float | str) -> tuple[int, bytes]:
    if isinstance(value, float):
        return DOUBLE, struct.pack("<d", value)
    raw = value.encode("utf-8")
    return STRING, _varlen(len(raw)) + raw


def _small_container(items: list[float | str], keys: list[str] | None = None) -> bytes:
    """A small array (or object with ``keys``) of doubles and strings, as MySQL stores it."""
    count = len(items)
    key_bytes = [k.encode("utf-8") for k in keys] if keys is not None else []
    header = 4 + (4 * count if keys is not None else 0) + 3 * count
    key_area = b"".join(key_bytes)
    offset = header + len(key_area)
    entries, values = bytearray(), bytearray()
    for item in items:
        kind, body = _scalar(item)
        entries += bytes([kind]) + struct.pack("<H", offset + len(values))
        values += body
    key_entries, at = bytearray(), header
    for raw in key_bytes:
        key_entries += struct.pack("<HH", at, len(raw))
        at += len(raw)
    size = offset + len(values)
    kind = SMALL_OBJECT if keys is not None else SMALL_ARRAY
    body = struct.pack("<HH", count, size) + key_entries + entries + key_area + values
    return bytes([kind]) + body


def test_integral_doubles_print_as_each_server_prints_them() -> None:
    document = _small_container([3.0, -0.0, 100.0, 1e15, 1.5e-7, 0.5])
    assert document_text(document, "mysql8") == "[3.0, -0.0, 100.0, 1e15, 0.00000015, 0.5]"
    assert document_text(document, "mysql57") == "[3, -0, 100, 1e15, 0.00000015, 0.5]"


def test_5_7_leaves_unit_separator_unescaped_in_keys_and_values() -> None:
    document = _small_container(["\x1e\x1f\n\x7f"], keys=["k\x1f"])
    assert document_text(document, "mysql8") == '{"k\\u001f": "\\u001e\\u001f\\n\x7f"}'
    assert document_text(document, "mysql57") == '{"k\x1f": "\\u001e\x1f\\n\x7f"}'


@given(finite)
def test_5_7_double_reads_back_and_differs_from_8_0_by_the_point_zero(value: float) -> None:
    text = double_text_57(value)
    assert float(text) == value
    expected = text if "." in text or "e" in text else text + ".0"
    assert double_text(value) == expected


@given(st.text())
def test_5_7_string_is_json_for_the_same_text(text: str) -> None:
    printed = quote_57(text)
    assert json.loads(printed, strict=False) == text  # U+001F stays raw
    if "\x1f" not in text:
        assert printed == quote(text)
    assert "\\u001f" not in printed.replace("\\\\", "")


@given(st.lists(st.one_of(finite, st.text()), max_size=8))
def test_documents_print_as_json_of_their_values(items: list[float | str]) -> None:
    document = _small_container(items)
    for printing in ("mysql8", "mysql57"):
        assert json.loads(document_text(document, printing), strict=False) == items


def test_the_flavour_chooses_the_printing() -> None:
    assert ServerFlavor.parse("5.7.19-log").json_printing == "mysql57"
    assert ServerFlavor.parse("8.0.15").json_printing == "mysql8"
    assert ServerFlavor.parse("8.4.3").json_printing == "mysql8"
    assert ServerFlavor.parse("5.5.5-10.11.19-MariaDB").json_printing == "mysql8"

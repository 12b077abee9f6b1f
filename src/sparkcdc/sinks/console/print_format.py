"""One change as Flink's print connector writes it: ``+I[1001, 2021-09-17, 10:20:30, alice]``.

Values print the way Flink (Java) prints them, so output can be compared line by line with
a Flink CDC job's: ``null``, ISO dates, ``LocalTime.toString`` times, plain numbers.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

ROW_KINDS = {"insert": "+I", "update_preimage": "-U", "update_postimage": "+U", "delete": "-D"}


def format_value(value: Any) -> str:
    """A value as Flink prints it inside a row: null, ISO dates and times, plain numbers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return f"{value.date().isoformat()}T{_java_time(value.time())}"
    if isinstance(value, dt.time):
        return _java_time(value)
    if isinstance(value, (bytes, bytearray)):
        return "x'" + bytes(value).hex() + "'"
    return str(value)


def _java_time(value: dt.time) -> str:
    """Java's LocalTime.toString: ``10:20``, ``10:20:30``, ``10:20:30.123``, ``...123456``."""
    text = f"{value.hour:02d}:{value.minute:02d}"
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        micros = value.microsecond
        text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text


def format_change(change_type: str, values: Sequence[Any]) -> str:
    """``+I[1001, 2021-09-17, ...]``."""
    return f"{ROW_KINDS[change_type]}[{', '.join(format_value(v) for v in values)}]"

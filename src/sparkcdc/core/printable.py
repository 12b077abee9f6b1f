"""Text from outside (table and column names, signal ids, server messages) made safe to
print on a terminal or write to a log.

A table may be named with any character its database allows, an ESC included: printed
raw, ``ESC ] 0 ; ... BEL`` retitles the terminal, ``ESC [ 2 J`` clears it, and a newline
or carriage return forges log lines. :func:`printable` shows each control character
(C0 but tab and newline, DEL, C1) and each bidirectional override as a Python escape
(``\\x1b``, ``\\u202e``): visible, unambiguous and inert. :class:`PrintableFormatter` does
it to whole log lines.
"""

from __future__ import annotations

import logging
import re

#: Control characters (tab and newline kept), and the bidi controls that reorder text.
_UNPRINTABLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)
#: Newlines and tabs too: a name is one line.
_UNPRINTABLE_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with control characters but tab and newline escaped (``\\x1b``)."""
    return _UNPRINTABLE.sub(_escaped, text)


def printable_name(text: str) -> str:
    """A name on one line: every control character escaped, tab and newline too."""
    return _UNPRINTABLE_NAME.sub(_escaped, text)


class PrintableFormatter(logging.Formatter):
    """A log formatter whose lines, traceback included, carry no raw control character
    but tab and newline."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))

"""Statements in the binlog that remove or rename a captured table's rows without row
events: TRUNCATE, DROP TABLE / DATABASE, RENAME TABLE and ALTER TABLE ... RENAME.

In ROW format they are QUERY events, so a row-event reader would pass them by and the
changelog would keep rows the table no longer has, or lose the table's later changes
under its new name. The planner finds them first (schema_scan.py): TRUNCATE, DROP and a
RENAME away (a drop of the name) are batches of their own (``truncate.handling.mode:
skip``), as is a RENAME that puts another table in a captured one's place in the same
statement (an online schema change tool's swap, :func:`tables_swapped`). A log read that
meets one anyway stops with the statement's position and the way out (the reader's
check). Column changes are ddl_columns.py's: rows are decoded by position, and a rename
leaves the table maps as they were.

Recognised by their leading keywords after comments are removed; names are bare or
backtick-quoted, optionally qualified, resolved against the statement's default database.
"""

from __future__ import annotations

import re
from collections.abc import Collection

#: Where a quoted name, a string or a comment may begin.
_SPECIAL = re.compile(r"[`'\"#]|/\*|--[ \t\n\r\f\v]")
#: What ends a quoted name or string (or escapes the character after it, in strings).
_QUOTE_ENDS = {"`": re.compile("`"), "'": re.compile(r"[\\']"), '"': re.compile(r'[\\"]')}
_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_NAME = rf"{_IDENT}(?:\s*\.\s*{_IDENT})?"
_LIST = rf"{_NAME}(?:\s*,\s*{_NAME})*"
_TRUNCATE = re.compile(rf"truncate\s+(?:table\s+)?({_NAME})", re.I)
_DROP = re.compile(rf"drop\s+tables?\s+(?:if\s+exists\s+)?({_LIST})", re.I)
_DROP_DATABASE = re.compile(rf"drop\s+(?:database|schema)\s+(?:if\s+exists\s+)?({_IDENT})", re.I)
_RENAME = re.compile(
    rf"rename\s+tables?\s+({_NAME}\s+to\s+{_NAME}(?:\s*,\s*{_NAME}\s+to\s+{_NAME})*)", re.I
)
_ALTER_RENAME = re.compile(
    rf"alter\s+(?:online\s+|ignore\s+)*table\s+(?:if\s+exists\s+)?({_NAME})\s.*?"
    rf"\brename\s+(?:to\s+|as\s+)?(?!(?:column|index|key)\b)({_NAME})",
    re.I | re.S,
)
_CREATE = re.compile(
    rf"create\s+(?:or\s+replace\s+)?(temporary\s+)?table\s+(?:if\s+not\s+exists\s+)?({_NAME})",
    re.I,
)
_NAMES = re.compile(_NAME)
_RENAME_PAIR = re.compile(rf"({_NAME})\s+to\s+({_NAME})", re.I)
_IDENTS = re.compile(_IDENT)

#: What each statement kind does to the changelog if passed by.
CONSEQUENCES = {
    "TRUNCATE": "the changelog would keep the rows it removed",
    "DROP": "the changelog would keep the rows it removed",
    "RENAME": "the table's later changes would be missed under its new name",
}


def tables_removed(
    statement: str, default_database: str, captured: Collection[tuple[str, str]]
) -> tuple[str, list[tuple[str, str]]] | None:
    """The statement's kind (TRUNCATE, DROP, RENAME) and the captured ``(database,
    table)`` names it affects, or None when it affects none."""
    text = without_comments(statement).strip()
    found: list[tuple[str, str]] = []
    kind = ""
    if match := _TRUNCATE.match(text):
        kind, found = "TRUNCATE", [_resolve(match.group(1), default_database)]
    elif match := _DROP.match(text):
        kind = "DROP"
        found = [_resolve(n, default_database) for n in _NAMES.findall(match.group(1))]
    elif match := _DROP_DATABASE.match(text):
        database = _unquote(match.group(1))
        kind, found = "DROP", [t for t in captured if t[0] == database]
    elif match := _RENAME.match(text):
        pairs = _RENAME_PAIR.findall(match.group(1))
        kind = "RENAME"
        found = [_resolve(old, default_database) for old, _ in pairs]
    elif match := _ALTER_RENAME.match(text):
        kind, found = "RENAME", [_resolve(match.group(1), default_database)]
    hit = [t for t in found if t in captured]
    return (kind, hit) if hit else None


def tables_created(statement: str, default_database: str) -> list[tuple[str, str]]:
    """The ``(database, table)`` names a statement brings into being: CREATE TABLE (also
    ``... LIKE`` and ``... SELECT``, not TEMPORARY), the new names of RENAME TABLE and of
    ALTER TABLE ... RENAME (how online schema change tools swap a table in)."""
    text = without_comments(statement).strip()
    if match := _CREATE.match(text):
        return [] if match.group(1) else [_resolve(match.group(2), default_database)]
    if match := _RENAME.match(text):
        return [_resolve(new, default_database) for _, new in _RENAME_PAIR.findall(match.group(1))]
    if match := _ALTER_RENAME.match(text):
        return [_resolve(match.group(2), default_database)]
    return []


def tables_swapped(statement: str, default_database: str) -> list[tuple[str, str]]:
    """The ``(database, table)`` names a RENAME TABLE renames away and then back to in the
    same statement: the atomic swap by which online schema change tools (gh-ost,
    pt-online-schema-change) put their altered copy in a table's place
    (``RENAME TABLE t TO _t_del, _t_gho TO t``). The name keeps existing throughout,
    with the copy's columns and rows from the swap on."""
    match = _RENAME.match(without_comments(statement).strip())
    if match is None:
        return []
    away: set[tuple[str, str]] = set()
    swapped: list[tuple[str, str]] = []
    for old, new in _RENAME_PAIR.findall(match.group(1)):
        away.add(_resolve(old, default_database))
        name = _resolve(new, default_database)
        if name in away and name not in swapped:
            swapped.append(name)
    return swapped


def without_comments(statement: str) -> str:
    """The statement with each comment (``/* */``, ``-- ``, ``#``) replaced by a space;
    quoted names and strings (`` `..` ``, ``'..'``, ``".."``: a '#' in them is no comment)
    kept as they are. An unclosed comment or quote runs to the statement's end, as in the
    server's lexer.

    One pass: every search starts where the last one ended, so the time is linear in the
    statement's length whatever it holds. (It runs on every QUERY event of the server,
    whoever wrote it; a regular expression with lazy comments and alternatives took
    minutes on a crafted 120 KB statement.)"""
    pieces: list[str] = []
    kept = at = 0  # kept: where the text not yet copied starts
    end = len(statement)
    while (found := _SPECIAL.search(statement, at)) is not None:
        start, mark = found.start(), found.group()
        if mark in _QUOTE_ENDS:
            at = _quoted_end(statement, start)
            continue
        if mark == "/*":
            close = statement.find("*/", start + 2)
            at = end if close < 0 else close + 2
        else:  # '-- ' or '#': to the end of the line (the newline stays)
            newline = statement.find("\n", start + 1)
            at = end if newline < 0 else newline
        pieces += [statement[kept:start], " "]
        kept = at
    pieces.append(statement[kept:])
    return "".join(pieces)


def _quoted_end(statement: str, start: int) -> int:
    """Where the quoted name or string opening at ``start`` ends (just after its closing
    quote; the statement's end if it has none): a doubled quote is one quote, and in
    strings a backslash escapes the character after it."""
    quote = statement[start]
    ends = _QUOTE_ENDS[quote]
    at = start + 1
    while (found := ends.search(statement, at)) is not None:
        position = found.start()
        if statement[position] == "\\" or statement.startswith(quote, position + 1):
            at = position + 2
        else:
            return position + 1
    return len(statement)


def resolve_name(name: str, default_database: str) -> tuple[str, str]:
    """``(database, table)`` of a bare or backtick-quoted, optionally qualified name."""
    return _resolve(name, default_database)


def _resolve(name: str, default_database: str) -> tuple[str, str]:
    parts = [_unquote(p) for p in _IDENTS.findall(name)]
    return (default_database, parts[0]) if len(parts) == 1 else (parts[0], parts[1])


def _unquote(identifier: str) -> str:
    if identifier.startswith("`"):
        return identifier[1:-1].replace("``", "`")
    return identifier

"""A transform's ``projection`` and ``filter``: Spark SQL expressions, checked offline.

``sparkcdc validate`` opens no connection and starts no Spark, yet a typo in an expression
should be found there, with its line. So each expression is parsed with sqlglot's Spark
dialect here; Spark itself analyses it against the table's schema when the pipeline starts
(pipeline/targets.py). What Spark evaluates is always the text as written, never sqlglot's
rewrite of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import expressions as exp

#: The metadata columns a projection or filter may use, named as in Flink CDC 3.x.
NAMESPACE = "__namespace_name__"
SCHEMA = "__schema_name__"
TABLE = "__table_name__"
EVENT_TYPE = "__data_event_type__"
METADATA = (NAMESPACE, SCHEMA, TABLE, EVENT_TYPE)
#: Metadata that names where a row came from (a key column made of these tells tables apart).
IDENTITY = (NAMESPACE, SCHEMA, TABLE)

_STARS = ("*", "\\*")


class ExpressionError(ValueError):
    """An expression that does not parse; the message names it."""


@dataclass(frozen=True)
class ProjectionItem:
    """One comma-separated item of a projection."""

    #: As written: what Spark evaluates.
    text: str
    #: ``*``: every column of the source table.
    star: bool = False
    #: The output column's name when the item names it (an alias or a bare column).
    name: str | None = None
    #: The source column a bare reference passes through unchanged (``id``, ``id AS k``).
    column: str | None = None

    @property
    def metadata(self) -> str | None:
        """The metadata column this item passes through unchanged, if it does."""
        return self.column if self.column in METADATA else None


def split_items(text: str) -> list[str]:
    """``text`` split at commas outside parentheses, brackets, quotes and backticks."""
    items, current, depth, quote = [], "", 0, ""
    chars = iter(text)
    for char in chars:
        current += char
        if quote:
            if char == "\\" and quote != "`":
                current += next(chars, "")
            elif char == quote:
                quote = ""
        elif char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(current[:-1])
            current = ""
    items.append(current)
    return [item.strip() for item in items]


def parse_projection(text: str) -> tuple[ProjectionItem, ...]:
    """The items of a projection, each parsed (raises :class:`ExpressionError`)."""
    items = []
    for raw in split_items(text):
        if not raw:
            raise ExpressionError(f"projection '{text}' has an empty item (two commas?)")
        if raw in _STARS:
            items.append(ProjectionItem("*", star=True))
            continue
        tree = _parse(raw, "projection item")
        target = tree.this if isinstance(tree, exp.Alias) else tree
        column = target.name if isinstance(target, exp.Column) and not target.table else None
        name = tree.alias if isinstance(tree, exp.Alias) else column
        items.append(ProjectionItem(raw, name=name or None, column=column))
    return tuple(items)


def check_filter(text: str) -> str:
    """``text`` if it parses as one predicate (raises :class:`ExpressionError`)."""
    tree = _parse(text, "filter")
    if isinstance(tree, exp.Alias):
        raise ExpressionError(f"filter '{text}' is a projection item (AS), not a condition")
    return text


def _parse(text: str, what: str) -> Any:
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except sqlglot.errors.SqlglotError as exc:
        reason = str(exc).splitlines()[0]
        raise ExpressionError(f"{what} '{text}' is not a Spark SQL expression: {reason}") from None
    if isinstance(tree, exp.Query | exp.Command):
        raise ExpressionError(f"{what} '{text}' is a statement, not an expression")
    return tree

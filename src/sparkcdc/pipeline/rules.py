"""The ``transform:`` and ``route:`` blocks of a pipeline file (Flink CDC 3.x's keys).

Parsed offline with the rest of the file: every rule remembers where it was written, so a
problem found later, when Spark analyses an expression against a table's schema or when
the tables a rule matches cannot share a target, still names the file and line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.projection import (
    ExpressionError,
    ProjectionItem,
    check_filter,
    parse_projection,
)
from sparkcdc.pipeline.yaml_file import PipelineFileError, YamlDocument
from sparkcdc.snapshot.options import TablePatterns, table_patterns

_T = TypeVar("_T")

ROUTE_KEYS = ("source-table", "sink-table", "replace-symbol", "description", "disjoint-keys")
TRANSFORM_KEYS = (
    "source-table",
    "projection",
    "filter",
    "primary-keys",
    "partition-keys",
    "description",
    "table-options",
    "table-options.delimiter",
    "converter-after-transform",
)


@dataclass(frozen=True)
class RouteRule:
    """Send the tables ``source`` matches to ``sink_table``."""

    source: TablePatterns
    sink_table: str
    #: Replaced in ``sink_table`` by the source table's name (one target per table).
    replace_symbol: str | None
    #: The user vouches that the matched tables share no key (else the key must tell them apart).
    disjoint_keys: bool
    #: ``file:line`` of the rule, for messages.
    where: str
    #: The pipeline's ``route-mode: FIRST_MATCH``: a table matching this rule and later
    #: ones takes this one (Flink CDC's route mode; without it, two matches are refused).
    first_match: bool = False

    def target(self, table: TableId) -> TableId:
        name = self.sink_table
        if self.replace_symbol:
            name = name.replace(self.replace_symbol, table.table)
        return sink_table_id(name)


def sink_table_id(name: str) -> TableId:
    """A route's ``sink-table``: ``namespace.table`` (split at the first unescaped dot), or
    one part, as Flink CDC allows (a Kafka topic, a table in the sink's default database
    or schema): its namespace is then empty, and each sink's name pattern leaves its
    ``{database}`` out (sinks/names.py)."""
    try:
        return TableId.from_key(name)
    except ValueError:
        return TableId.from_key(f".{name}")


@dataclass(frozen=True)
class TransformRule:
    """Shape the rows of the tables ``source`` matches."""

    source: TablePatterns
    #: The projection's items; empty: the source's columns unchanged.
    projection: tuple[ProjectionItem, ...]
    #: A Spark SQL predicate over the source columns and the metadata columns, or None.
    filter: str | None
    primary_keys: tuple[str, ...]
    partition_keys: tuple[str, ...]
    where: str
    #: Flink CDC's ``table-options`` (``key=value`` pairs for the sink's CREATE TABLE):
    #: parsed and kept; no sink applies them yet (the loader notes it).
    table_options: tuple[tuple[str, str], ...] = ()

    def passes(self, column: str) -> bool:
        """Whether the projection outputs source ``column`` unchanged under its own name."""
        if not self.projection:
            return True
        return any(
            item.star or (item.column == column and item.name == column) for item in self.projection
        )


def first_transform(rules: Sequence[TransformRule], table: TableId) -> TransformRule | None:
    """The rule that shapes ``table``: the first that matches it, as in Flink CDC."""
    return next((r for r in rules if r.source.matches(table.database, table.table)), None)


def matching_routes(rules: Sequence[RouteRule], table: TableId) -> list[RouteRule]:
    return [r for r in rules if r.source.matches(table.database, table.table)]


def load_routes(doc: YamlDocument, first_match: bool = False) -> tuple[RouteRule, ...]:
    rules = []
    for key, item in _items(doc, "route", ROUTE_KEYS):
        sink_table = _text(doc, key, item, "sink-table", required=True)
        assert sink_table is not None
        symbol = _text(doc, key, item, "replace-symbol")
        if symbol == "":
            raise doc.error(f"{key}.replace-symbol", "is empty")
        found = sink_table_id(sink_table)
        if not found.table or (not found.database and sink_table.startswith(".")):
            raise doc.error(
                f"{key}.sink-table",
                f"'{sink_table}' is not a 'namespace.table' or a one-part 'table' name",
            )
        disjoint = item.get("disjoint-keys", False)
        if not isinstance(disjoint, bool):
            raise doc.error(f"{key}.disjoint-keys", "must be true or false")
        rules.append(
            RouteRule(
                _patterns(doc, key, item),
                sink_table,
                symbol,
                disjoint,
                doc.where(key),
                first_match,
            )
        )
    return tuple(rules)


def load_transforms(doc: YamlDocument) -> tuple[TransformRule, ...]:
    rules = []
    for key, item in _items(doc, "transform", TRANSFORM_KEYS):
        if item.get("converter-after-transform") is not None:
            raise doc.error(
                f"{key}.converter-after-transform",
                "is not supported: Flink CDC's converters (SOFT_DELETE, ...) have no "
                "counterpart here; a filter or projection over __data_event_type__ shapes "
                "the rows instead",
            )
        projection = _text(doc, key, item, "projection")
        condition = _text(doc, key, item, "filter")
        rules.append(
            TransformRule(
                _patterns(doc, key, item),
                _expression(doc, f"{key}.projection", projection, parse_projection) or (),
                _expression(doc, f"{key}.filter", condition, check_filter),
                _names(doc, key, item, "primary-keys"),
                _names(doc, key, item, "partition-keys"),
                doc.where(key),
                _table_options(doc, key, item),
            )
        )
    return tuple(rules)


def _items(
    doc: YamlDocument, block: str, keys: tuple[str, ...]
) -> list[tuple[str, dict[str, Any]]]:
    value = doc.data.get(block)
    if value is None:
        return []
    if not isinstance(value, list):
        raise doc.error(block, f"'{block}' is a list of rules (each item starts with '- ')")
    items = []
    for index, item in enumerate(value):
        key = f"{block}[{index}]"
        if not isinstance(item, dict):
            raise doc.error(key, f"a {block} rule is a mapping with keys {', '.join(keys)}")
        unknown = [k for k in item if k not in keys]
        if unknown:
            raise doc.error(
                f"{key}.{unknown[0]}", f"unknown key; a {block} rule has {', '.join(keys)}"
            )
        items.append((key, item))
    return items


def _text(
    doc: YamlDocument, key: str, item: dict[str, Any], name: str, required: bool = False
) -> str | None:
    value = item.get(name)
    if value is None:
        if required:
            raise doc.error(f"{key}.{name}", "is required")
        return None
    if isinstance(value, dict | list):
        raise doc.error(f"{key}.{name}", "must be a single value")
    return str(value).strip()


def _expression(
    doc: YamlDocument, key: str, text: str | None, parse: Callable[[str], _T]
) -> _T | None:
    if not text:
        return None
    try:
        return parse(text)
    except ExpressionError as exc:
        raise doc.error(key, str(exc)) from None


def _patterns(doc: YamlDocument, key: str, item: dict[str, Any]) -> TablePatterns:
    text = _text(doc, key, item, "source-table", required=True)
    assert text is not None
    try:
        return table_patterns(text)
    except ValueError as exc:
        raise doc.error(f"{key}.source-table", str(exc)) from None


def _table_options(
    doc: YamlDocument, key: str, item: dict[str, Any]
) -> tuple[tuple[str, str], ...]:
    """Flink CDC's ``table-options: k1=v1,k2=v2`` (``table-options.delimiter`` for values
    with commas)."""
    text = _text(doc, key, item, "table-options")
    delimiter = _text(doc, key, item, "table-options.delimiter") or ","
    if not text:
        return ()
    pairs = []
    for part in (p.strip() for p in text.split(delimiter)):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise doc.error(
                f"{key}.table-options",
                f"'{part}' is not key=value; the pairs are separated by '{delimiter}' "
                "(table-options.delimiter)",
            )
        pairs.append((name.strip(), value.strip()))
    return tuple(pairs)


def _names(doc: YamlDocument, key: str, item: dict[str, Any], name: str) -> tuple[str, ...]:
    text = _text(doc, key, item, name)
    if not text:
        return ()
    names = tuple(n.strip().strip("`") for n in text.split(","))
    if any(not n for n in names):
        raise doc.error(f"{key}.{name}", f"'{text}' has an empty column name")
    if len(set(names)) != len(names):
        raise doc.error(f"{key}.{name}", f"'{text}' names a column twice")
    return names


__all__ = [
    "PipelineFileError",
    "RouteRule",
    "TransformRule",
    "first_transform",
    "load_routes",
    "load_transforms",
    "matching_routes",
]

"""Sink options that name target tables, checked against the targets before anything runs.

Flink CDC's per-table sink options (``partition.key: db.t:col1,col2;db2.t2:col``; here the
Delta sink's ``cluster.key``) are looked up by table name when a target is created, so an
entry whose table is misspelt, or names a source table a route sends elsewhere, changes
nothing and says nothing: the target is created without what the user asked for, and an
existing target keeps its layout for good. Every entry must name a target of the plan
(the table as the sink sees it: a route's ``sink-table`` when routed), or be refused
naming the option, the entry and the targets it could have meant.

One exception, as a Flink CDC user expects it: with ``scan.newly-added-table.enabled`` a
table created later gets its entry's settings when its target is created, so an entry is
accepted when such a table could become that target (it matches the source's table
options and no route takes it, or a route's ``sink-table`` gives that name).
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable, Collection, Mapping, Sequence

from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.rules import RouteRule, matching_routes, sink_table_id
from sparkcdc.pipeline.targets import Target
from sparkcdc.snapshot.options import TablePatterns

log = logging.getLogger(__name__)


def check_named_tables(
    sink_type: str,
    named: Mapping[str, Mapping[TableId, str]],
    targets: Sequence[Target],
    may_appear: Callable[[TableId], bool] = lambda _: False,
    written: Collection[TableId] = (),
) -> None:
    """Refuse an entry of a sink option in ``named`` (option -> table -> entry) whose
    table is none of ``targets``, was not ``written`` by earlier runs (the checkpoint's:
    a table dropped since left its target, and the entry was right when made) and cannot
    ``may_appear`` later; log the ones that wait for a table to be created."""
    existing = {t.table.source for t in targets}
    for option, entries in named.items():
        for table, entry in entries.items():
            if table in existing:
                continue
            if table in written and not _routed_elsewhere(table, targets):
                log.warning(
                    "%s sink: option '%s' entry '%s' names a target earlier runs wrote whose "
                    "table is not captured now; it applies to nothing until it is",
                    sink_type,
                    option,
                    entry,
                )
                continue
            if may_appear(table):
                log.warning(
                    "%s sink: option '%s' entry '%s' names no target yet; it applies to "
                    "the target of a table created later (scan.newly-added-table.enabled)",
                    sink_type,
                    option,
                    entry,
                )
                continue
            raise OptionError(
                f"{sink_type} sink: option '{option}' has entry '{entry}', but {table} is "
                f"no target of this pipeline{_meant(table, targets)}. An entry names the "
                "table as the sink writes it: the source table, or a route's sink-table "
                "when routed; fix the entry or remove it"
            )


def _routed_elsewhere(table: TableId, targets: Sequence[Target]) -> bool:
    """Whether ``table`` is a source table a route writes into another target now: an
    entry naming it means that target (the checkpoint's counts name source tables, so it
    looks written)."""
    return any(s.table.source == table for t in targets for s in t.sources)


def _meant(table: TableId, targets: Sequence[Target]) -> str:
    """What an entry naming ``table`` could have meant: the target a route sends that
    source table to, targets of a similar name, else every target (a few)."""
    for target in targets:
        if any(s.table.source == table for s in target.sources):
            return f" (a route writes that source table to {target.table.source}: name that)"
    names = {str(t.table.source): t.table.source for t in targets}
    lowered = [n for n, t in names.items() if str(t).lower() == str(table).lower()]
    close = lowered or _similar(table, names)
    if close:
        return f" (did you mean {' or '.join(close)}?)"
    listed = sorted(names)
    more = f", ... ({len(listed)} in all)" if len(listed) > 8 else ""
    return f" (its targets: {', '.join(listed[:8])}{more})" if listed else " (it has none)"


def _similar(table: TableId, names: Mapping[str, TableId]) -> list[str]:
    """Up to three of ``names`` spelt much like ``table``: in its database by the table's
    name alone (a long database name shared would make every table look alike)."""

    def likeness(other: TableId) -> float:
        if other.database == table.database:
            return difflib.SequenceMatcher(None, other.table, table.table).ratio()
        return difflib.SequenceMatcher(None, str(other), str(table)).ratio()

    scored = sorted(((likeness(t), n) for n, t in names.items()), reverse=True)
    return [n for score, n in scored[:3] if score >= 0.75]


def created_later(
    newly_added: bool, tables: TablePatterns, routes: Sequence[RouteRule]
) -> Callable[[TableId], bool]:
    """Whether a table created while the pipeline runs could become the target ``name``:
    only with ``scan.newly-added-table.enabled`` (``newly_added``), as a table the source's
    table options (``tables``) match and no route takes, or as a route's ``sink-table``
    (its ``replace-symbol`` standing for a table name the route's source-table matches)."""

    def may_appear(name: TableId) -> bool:
        if not newly_added:
            return False
        if tables.matches(name.database, name.table) and not matching_routes(routes, name):
            return True
        return any(_routes_to(route, name) for route in routes)

    return may_appear


def _routes_to(route: RouteRule, name: TableId) -> bool:
    if not route.replace_symbol:
        return sink_table_id(route.sink_table) == name
    parts = route.sink_table.split(route.replace_symbol)
    if len(parts) == 1:  # a sink-table without the symbol names one table
        return sink_table_id(route.sink_table) == name
    pattern = "(.+)".join(re.escape(p) for p in parts)
    for spelt in {str(name), name.key}:
        found = re.fullmatch(pattern, spelt)
        if found and all(
            any(t.fullmatch(g) for _, t in route.source.pairs) for g in found.groups()
        ):
            return sink_table_id(route.sink_table.replace(route.replace_symbol, found[1])) == name
    return False

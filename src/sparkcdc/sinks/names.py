"""Target names from a sink's ``{database}`` / ``{table}`` pattern, for every sink.

A route may name its target with one part, as Flink CDC allows (``sink-table: orders``:
the sink's default database or schema; ``sink-table: kafka_ods_orders``: a topic). Such a
target's namespace is empty, and a pattern such as ``{database}.{table}`` or
``{database}/{table}`` must then give ``orders``, not ``.orders`` or ``_/orders``: the
``{database}`` placeholder goes, with one separator beside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: ``{database}`` with the one separator after it, or else the one before it.
_DATABASE = re.compile(r"\{database\}[./_-]?|[./_-]?\{database\}")


def fill_name(pattern: str, database: str, table: str, part: Callable[[str], str] = str) -> str:
    """``pattern`` with ``{database}`` and ``{table}`` filled with ``part`` of the names (a
    sink's escaping); an empty ``database`` (the sink's default) leaves no trace."""
    if database == "":
        pattern = _DATABASE.sub("", pattern)
    return pattern.format(database=part(database), table=part(table))


__all__ = ["fill_name"]

"""ALTER TABLE statements that only repartition a table: columns and rows stay, or rows
go without a row event.

sqlglot's MySQL dialect parses no partition clause, so these are told from the text after
the table's name. Repartitioning (``PARTITION BY``, ``REMOVE PARTITIONING``, ``ADD`` /
``REORGANIZE`` / ``COALESCE`` partitions, and the maintenance ones) moves rows between
partitions and changes no column and no value: the schema history passes it by. Dropping,
truncating or exchanging a partition removes or replaces rows with no row event, as a
TRUNCATE does, but only some of them, so no table event can say which: the stream stops at
it, naming it (a new snapshot, or a signal that reads the table again, repairs a target).
"""

from __future__ import annotations

import re

#: What the text after ``ALTER TABLE name`` starts with, and whether it keeps every row.
_KEEPS_ROWS = re.compile(
    r"\s*(?:partition\s+by\b|remove\s+partitioning\b|"
    r"(?:add|reorganize|coalesce|analyze|check|optimize|rebuild|repair|discard|import)"
    r"\s+partition\b)",
    re.I,
)
_LOSES_ROWS = re.compile(r"\s*(drop|truncate|exchange)\s+partition\b", re.I)


def partition_change(rest: str) -> str | None:
    """For the text after an ALTER TABLE's table name: ``"keeps"`` (a repartitioning),
    ``"drop"`` / ``"truncate"`` / ``"exchange"`` (rows gone without row events), or None
    (not a partition clause)."""
    if _KEEPS_ROWS.match(rest):
        return "keeps"
    found = _LOSES_ROWS.match(rest)
    return found.group(1).lower() if found else None

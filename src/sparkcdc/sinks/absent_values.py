"""Sinks that cannot keep a stored value: refusing rows whose values are absent.

PostgreSQL's ``changelog-mode: upsert`` gives an UPDATE's unchanged TOASTed values as
absent (``_unchanged``, core/changes.py): an upsert target keeps its stored value for
them. A sink whose records must each be the whole row (Kafka's ``upsert`` format: a
compacted topic is a log, not a store) has nothing to take them from, so a batch with such
a row fails, naming the table and the fix, before a record with a NULL in their place is
built. Exact, but not up front: which UPDATEs leave a TOASTed value unchanged is known only
when they come (docs/postgres.md, "Unchanged TOASTed values").
"""

from __future__ import annotations

from typing import Any

from sparkcdc.core.changes import UNCHANGED
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.core.table import TableId


def without_absent_values(changes: Any, table: TableId, sink: str) -> Any:
    """``changes`` without ``_unchanged``; evaluating a row that has absent values raises
    (Spark's ``raise_error``, in a filter, so no plan prunes it)."""
    if UNCHANGED not in changes.columns:
        return changes
    message = sql_string(
        f"an UPDATE of {table} left TOASTed values unchanged, which the WAL lacks under "
        f"changelog-mode: upsert (REPLICA IDENTITY is not FULL), and the {sink} writes "
        "whole rows, so it cannot keep them. Run ALTER TABLE ... REPLICA IDENTITY FULL on "
        "the table and start the pipeline again from a new checkpoint, or write to an "
        "upsert target that keeps stored values (Delta, JDBC)"
    )
    column = quoted(UNCHANGED)
    guard = f"CASE WHEN {column} IS NULL THEN true ELSE raise_error({message}) END"
    return changes.where(guard).drop(UNCHANGED)

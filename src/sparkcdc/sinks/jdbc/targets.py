"""A JDBC sink's targets checked or created when it opens them (``JdbcSink.open``): an
existing table must have the columns, a unique key on the source key, (MySQL) a
transactional engine, and be one a sink made, empty, or adopted on purpose."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.crash_points import JDBC_TARGET_CREATED, crash_point
from sparkcdc.sinks.jdbc.dialects import SinkError, Target, TargetDialect

log = logging.getLogger("sparkcdc.sinks.jdbc.sink")  # the sink's messages, as before


def prepare_target(dialect: TargetDialect, cur: Any, target: Target, adopt_existing: bool) -> None:
    """Create ``target`` (marked as a sink's), or check the existing table and take it."""
    qualifier = str(target.qualifier)
    existing = dialect.existing_columns(cur, qualifier, target.name)
    if existing is None:
        dialect.ensure_qualifier(cur, qualifier)
        dialect.create_target(cur, target)  # with its comments, marked last
        crash_point(JDBC_TARGET_CREATED)  # the tests' kill (core/crash_points.py)
        log.info("jdbc sink: created target table %s for %s", target, target.source)
        return
    check_columns(dialect, f"target table {target}", existing, target.columns)
    wanted = {folded(dialect, k) for k in target.key}
    if not any(
        {folded(dialect, c) for c in key} == wanted
        for key in dialect.unique_keys(cur, qualifier, target.name)
    ):
        raise SinkError(
            f"jdbc sink: target table {target} has no primary key or unique constraint "
            f"on ({', '.join(target.key)}), the source key of {target.source}; upserts "
            "need one (add it, or drop the table to let the sink create it)"
        )
    dialect.check_engine(cur, qualifier, target.name)
    _adopt(dialect, cur, target, adopt_existing)


def _adopt(dialect: TargetDialect, cur: Any, target: Target, adopt_existing: bool) -> None:
    """Take an existing table as ``target`` only if a sink made it a target before, it
    is empty, or option ``adopt-existing-tables`` says so; then it is marked as one.
    A non-empty table of the same name is otherwise someone else's: its rows would be
    upserted over, and a truncate or a dropped source table would empty or drop it."""
    if dialect.is_target(cur, target):
        return
    if not dialect.is_empty(cur, target) and not adopt_existing:
        raise SinkError(
            f"jdbc sink: target table {target} of {target.source} exists, holds rows and "
            "was not made by a sparkcdc sink (its comment has no sparkcdc mark); it "
            "would be written over, and emptied or dropped with its source table. Name "
            "another target with option 'table-name', or set 'adopt-existing-tables: "
            "true' to take it as it is (it is marked then)"
        )
    dialect.mark_target(cur, target)
    log.info("jdbc sink: took the existing table %s as the target of %s", target, target.source)


def folded(dialect: TargetDialect, name: str) -> str:
    """A name as the target compares it (MySQL/MariaDB: case-insensitive)."""
    return name.lower() if dialect.family == "mysql" else name


def check_columns(
    dialect: TargetDialect, what: str, existing: Sequence[str], needed: Sequence[str]
) -> None:
    missing = [c for c in needed if not any(dialect.same_column(c, e) for e in existing)]
    if missing:
        raise SinkError(
            f"jdbc sink: {what} exists but lacks column(s) {', '.join(missing)} "
            f"(it has {', '.join(existing) or 'no columns'}); add them, or drop the table "
            "to let the sink create it"
        )

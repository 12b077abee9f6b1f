"""A JDBC target taking its table's new columns (``JdbcSink.evolve``, Flink CDC's
``MetadataApplier`` for JDBC targets): ALTER TABLE statements checked against the target's
columns, so a replay changes nothing twice."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.table_events import ColumnMoves
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.jdbc.dialects import Target, TargetDialect

log = logging.getLogger("sparkcdc.sinks.jdbc.sink")  # the sink's messages, as before


def move_columns(
    dialect: TargetDialect,
    cur: Any,
    target: Target,
    existing: Sequence[str],
    moves: ColumnMoves | None,
) -> list[str]:
    """Renames and drops ``moves`` says, where the target still has the old column (a
    replay finds them done); the target's columns after them."""
    moves = moves or ColumnMoves()
    table_sql = dialect.table_sql(target.qualifier, target.name)
    columns = list(existing)

    def find(name: str) -> int | None:
        return next((i for i, c in enumerate(columns) if dialect.same_column(name, c)), None)

    for old, new in moves.renamed.items():
        at = find(old)
        if at is None or find(new) is not None:
            continue
        quote = dialect.quote
        cur.execute(
            f"ALTER TABLE {table_sql} RENAME COLUMN {quote(columns[at])} TO {quote(new)}", ()
        )
        columns[at] = new
        log.info("jdbc sink: renamed column %s to %s in %s", old, new, target)
    for name in moves.dropped:
        at = find(name)
        if at is None:
            continue
        cur.execute(f"ALTER TABLE {table_sql} DROP COLUMN {dialect.quote(columns[at])}", ())
        del columns[at]
        log.info("jdbc sink: dropped column %s from %s", name, target)
    return columns


def alter_columns(
    dialect: TargetDialect,
    cur: Any,
    target: Target,
    existing: Sequence[str],
    previous: SinkTable | None,
) -> None:
    """Columns the target lacks added (nullable, at the end), columns whose type widened
    since ``previous`` given the wider type."""
    table_sql = dialect.table_sql(target.qualifier, target.name)
    before = {} if previous is None else {f.name: f for f in previous.schema.fields}
    for field in target.schema.fields:
        present = any(dialect.same_column(field.name, e) for e in existing)
        column = dialect.column_type(field, False, 0)
        if not present:
            dialect.add_column(cur, target, field, column)  # with its comment
            log.info("jdbc sink: added column %s to %s", field.name, target)
        elif field.name in before and before[field.name].dataType != field.dataType:
            cur.execute(dialect.widen_column_sql(table_sql, field, column), ())
            log.info("jdbc sink: widened column %s of %s to %s", field.name, target, column)

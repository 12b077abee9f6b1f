"""A Delta target taking its table's new columns (``DeltaSink.evolve``, Flink CDC's
``MetadataApplier`` for Delta).

Renames and drops go through Delta's column mapping, turned on in ``name`` mode the first
time: they change metadata only, the data files stay. New columns are added (nullable;
where a column is not the last one, at its position; with their source comment), NOT
NULL is dropped where the columns allow NULL now, and changed types are widened with
Delta's type widening (enabled on the table when first needed); Delta refuses what it
cannot widen, and the error says how to go on. Everything is compared with the table as
it is, so a replay applies nothing twice.
"""

from __future__ import annotations

import logging
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.identifiers import quoted
from sparkcdc.core.table_events import ColumnMoves
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta.catalog import literal, raw_literals

log = logging.getLogger(__name__)


def evolve_columns(
    spark: Any, path: str, table: SinkTable, wanted: Any, moves: ColumnMoves
) -> None:
    """The Delta table at ``path`` with ``wanted``'s columns (``table``'s, and a history
    target's change columns), after renaming and dropping what ``moves`` says."""
    name = f"delta.{quoted(path)}"
    existing = {f.name: f for f in spark.read.format("delta").load(path).schema}
    _move(spark, name, existing, moves, path)
    last = table.schema.fields[-1].name if table.schema.fields else None
    for index, field in enumerate(wanted.fields):
        if field.name in existing:
            continue
        where = ""
        if field.name != last and index < len(table.schema.fields):
            where = " FIRST" if index == 0 else f" AFTER {quoted(wanted.fields[index - 1].name)}"
        text = table.comments.column(field.name)  # include-comments.enabled
        comment = "" if text is None else f" COMMENT {literal(text, raw_literals(spark))}"
        spark.sql(
            f"ALTER TABLE {name} ADD COLUMNS "
            f"({quoted(field.name)} {field.dataType.simpleString()}{comment}{where})"
        )
        existing[field.name] = field
        log.info("delta sink: added %s to %s", field.name, path)
    for field in wanted.fields:
        old = existing.get(field.name)
        if old is None or old is field:
            continue
        if field.nullable and not old.nullable:
            spark.sql(f"ALTER TABLE {name} ALTER COLUMN {quoted(field.name)} DROP NOT NULL")
        if old.dataType != field.dataType:
            _widen(spark, name, field, old.dataType, table)


def _move(spark: Any, name: str, existing: dict[str, Any], moves: ColumnMoves, path: str) -> None:
    """Renames and drops (``existing`` follows them)."""
    renames = [(o, n) for o, n in moves.renamed.items() if o in existing and n not in existing]
    drops = [c for c in moves.dropped if c in existing]
    if not renames and not drops:
        return
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    for old, new in renames:
        spark.sql(f"ALTER TABLE {name} RENAME COLUMN {quoted(old)} TO {quoted(new)}")
        existing[new] = existing.pop(old)
        log.info("delta sink: renamed %s to %s in %s", old, new, path)
    for column in drops:
        spark.sql(f"ALTER TABLE {name} DROP COLUMN {quoted(column)}")
        del existing[column]
        log.info("delta sink: dropped %s from %s", column, path)


def _widen(spark: Any, name: str, field: Any, old: Any, table: SinkTable) -> None:
    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    try:
        spark.sql(
            f"ALTER TABLE {name} ALTER COLUMN {quoted(field.name)} TYPE "
            f"{field.dataType.simpleString()}"
        )
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0]
        raise SparkCdcError(
            f"the Delta target of {table.source} cannot widen column {field.name} from "
            f"{old.simpleString()} to {field.dataType.simpleString()} ({reason}). "
            "Re-snapshot the table into a new target, or set 'schema.change.behavior' to "
            "'exception' and change the target by hand"
        ) from None

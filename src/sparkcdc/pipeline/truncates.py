"""A running pipeline following TRUNCATEs of its tables (docs/schema-evolution.md).

No row event says which rows a TRUNCATE removed. The source makes it a batch of its own
(no rows) whose end offset records it in the table's entry (``"truncated"``: the position
after it, so two truncates are told apart; ``truncate.handling.mode: skip``, which
pipelines set). A truncate is new in a batch when that batch's end offset records one the
previous batch's end offset does not; the runner then applies it before writing the
batch, as ``schema.change.behavior`` says:

* ``evolve`` / ``try_evolve``: the sink empties the target (:meth:`Sink.truncate`), unless
  the target also holds other tables' rows (a route); ``try_evolve`` goes on with a
  warning where the sink cannot;
* ``lenient`` / ``ignore``: not applied (Flink CDC's behaviours do the same): the target
  keeps the rows, and ``verify`` reports them. The sink is told the target is no longer
  the table's mirror (:meth:`Sink.release`): an insert of a key it keeps is merged, not
  appended;
* ``exception``: the pipeline stops, naming the statement.

A sink's ``exclude.schema.changes: [truncate.table]`` makes it ``ignore``. Applying twice
changes nothing: the truncate's batch writes no rows, so a replay of it (a crash before
Spark committed it) finds the target as the first run left it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import TRUNCATE_TABLE
from sparkcdc.pipeline.evolution import MIRRORING
from sparkcdc.pipeline.offset_marks import new_marks
from sparkcdc.pipeline.targets import Target, target_holding
from sparkcdc.sinks.base import MicroBatch, Sink

log = logging.getLogger(__name__)


def new_truncates(previous: str | None, offset: str) -> dict[TableId, str]:
    """The tables truncated in the batch that ends at ``offset`` (JSON text) and starts at
    ``previous``, each with the statement."""
    return new_marks(previous, offset, "truncated")


def follow_truncates(
    spark: Any,
    truncated: dict[TableId, str],
    targets: Sequence[Target],
    sink: Sink,
    batch: MicroBatch,
    behavior: str,
    applied: Callable[[TableId], None],
    excluded: frozenset[str] = frozenset(),
) -> None:
    """Apply the truncates ``truncated`` (table -> statement) to the targets of ``batch``;
    ``applied(table)`` is told of each one the sink applied."""
    for table, statement in sorted(truncated.items()):
        target = target_holding(targets, table)
        if target is None:  # a table the pipeline does not write (filtered out)
            continue
        short = " ".join(statement.split())[:160]
        behavior_here = "ignore" if TRUNCATE_TABLE in excluded else behavior
        if behavior_here == "exception":
            raise SchemaError(
                f"TRUNCATE of {table} ({short}) under 'schema.change.behavior: exception'. "
                "Choose another behaviour ('evolve' empties the target, 'lenient' keeps its "
                "rows) or exclude the change type (exclude.schema.changes: [truncate.table])"
            )
        if behavior_here not in MIRRORING:
            log.warning(
                "TRUNCATE of %s (%s) not applied ('%s'): the target keeps the rows the table "
                "no longer has ('evolve' applies truncates)",
                table,
                short,
                behavior_here,
            )
            sink.release(spark, target.table)  # no longer only rows of keys the table has
            continue
        refused = empty_target(spark, sink, target, table, batch)
        if refused is not None:
            reason = first_line(refused)
            if behavior_here == "evolve":
                raise SchemaError(
                    f"TRUNCATE of {table} ({short}): the sink could not apply it ({reason}). "
                    "Set 'schema.change.behavior' to 'try_evolve' (go on, the target keeping "
                    "its rows) or 'lenient', or exclude the change type "
                    "(exclude.schema.changes: [truncate.table])"
                ) from refused
            log.warning(
                "TRUNCATE of %s (%s): the sink could not apply it (%s); 'try_evolve' goes on "
                "with the target's rows kept",
                table,
                short,
                reason,
            )
            sink.release(spark, target.table)
            continue
        log.info("TRUNCATE of %s (%s) applied: its target is empty", table, short)
        applied(table)


def empty_target(
    spark: Any, sink: Sink, target: Target, table: TableId, batch: MicroBatch
) -> Exception | None:
    """Empty ``table``'s target before ``batch`` is written (:meth:`Sink.truncate`); why it
    could not be, or None when it is empty. A route's target that also holds other tables'
    rows is not emptied: theirs would go too."""
    others = [str(s.table.source) for s in target.sources if s.table.source != table]
    try:
        if others:
            raise SchemaError(
                f"the target {target.table.source} also holds the rows of {', '.join(others)} "
                "(a route): emptying it would remove theirs"
            )
        sink.truncate(spark, target.table, batch)
    except Exception as exc:
        return exc
    return None


def first_line(error: Exception) -> str:
    """An error's first line, short enough for a log line or a message."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:300]

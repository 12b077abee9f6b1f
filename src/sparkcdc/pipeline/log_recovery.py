"""A pipeline going on after its log was lost (docs/design.md, "A lost log").

``sparkcdc recover`` sends the source a ``recover-lost-log`` signal; the batch that takes it
has no rows, and its end offset marks each table the source reads again (``"log_lost"``
in the table's schema entry). No row says which of the target's rows the lost log
deleted, so before the batch is written the runner empties each marked table's target
(:meth:`Sink.truncate`: Delta ``DELETE``, JDBC ``DELETE`` in the batch's transaction, a
``debezium-json`` topic's truncate message), whatever ``schema.change.behavior`` says:
the recovery was asked for, and the table's rows all come again in the batches after.

A target that cannot be emptied (a Kafka topic of another format, a Delta history target,
a route's target holding other tables' rows) keeps its rows, with a warning: the rows read
again replace every key the table still has, and ``verify`` reports the rows it deleted
while the log was lost. The sink is told the target no longer mirrors the table
(:meth:`Sink.release`), so those rows are merged, never appended next to a key the target
keeps. Emptying twice changes nothing: the batch writes no rows, so a replay of it finds
the target as the first run left it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.offset_marks import new_marks
from sparkcdc.pipeline.targets import Target, target_holding
from sparkcdc.pipeline.truncates import empty_target, first_line
from sparkcdc.sinks.base import MicroBatch, Sink
from sparkcdc.snapshot.recovery import LOG_LOST

log = logging.getLogger(__name__)


def new_recoveries(previous: str | None, offset: str) -> dict[TableId, str]:
    """The tables read again after a lost log in the batch that ends at ``offset`` (JSON
    text) and starts at ``previous``, each with what was lost."""
    return new_marks(previous, offset, LOG_LOST)


def follow_recoveries(
    spark: Any,
    recovered: dict[TableId, str],
    targets: Sequence[Target],
    sink: Sink,
    batch: MicroBatch,
    applied: Callable[[TableId], None],
) -> None:
    """Empty the targets of the tables ``recovered`` (table -> what was lost) before
    ``batch`` is written; ``applied(table)`` is told of each one emptied."""
    for table, change in sorted(recovered.items()):
        target = target_holding(targets, table)
        if target is None:  # a table the pipeline does not write (filtered out)
            continue
        refused = empty_target(spark, sink, target, table, batch)
        if refused is not None:
            reason = first_line(refused)
            log.warning(
                "the target of %s cannot be emptied (%s): it keeps its rows. The rows read "
                "again replace every key the table has; rows deleted while the log was lost "
                "stay (sparkcdc verify reports them). %s",
                table,
                reason,
                change,
            )
            sink.release(spark, target.table)
            continue
        log.info("the target of %s is emptied, its rows are read again: %s", table, change)
        applied(table)

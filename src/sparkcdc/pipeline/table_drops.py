"""A running pipeline following DROP TABLE / DATABASE of its tables
(docs/schema-evolution.md).

The source makes a drop a batch of its own (no rows) whose end offset marks each dropped
table's entry (``"table_dropped"``: the position after the statement); the next batch's
offset no longer has the table. A drop is new in a batch when that batch's end offset
marks a table the previous batch's end offset does not; the runner then applies it before
writing the batch, as ``schema.change.behavior`` says:

* ``evolve`` / ``try_evolve``: the sink drops the target (:meth:`Sink.drop_table`), unless
  it also holds other tables' rows (a route: it is kept, with a warning);
  ``try_evolve`` goes on with a warning where the sink cannot;
* ``lenient`` / ``ignore``: not applied (Flink CDC's behaviours do the same): the target
  keeps its rows;
* ``exception``: the pipeline stops, naming the statement.

A sink's ``exclude.schema.changes: [drop.table]`` makes it ``ignore``. A target that keeps
its rows is released (:meth:`Sink.release`): a table created again under the name (with
``scan.newly-added-table.enabled``) is snapshotted into it by merging, never by appending
next to rows of the same keys. Applying twice changes nothing (a dropped target is gone).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import DROP_TABLE
from sparkcdc.pipeline.evolution import MIRRORING
from sparkcdc.pipeline.offset_marks import new_marks
from sparkcdc.pipeline.targets import Target, target_holding
from sparkcdc.sinks.base import MicroBatch, Sink
from sparkcdc.snapshot.progress import TABLE_DROPPED

log = logging.getLogger(__name__)


def new_drops(previous: str | None, offset: str) -> dict[TableId, str]:
    """The tables dropped in the batch that ends at ``offset`` (JSON text) and starts at
    ``previous``, each with the statement."""
    return new_marks(previous, offset, TABLE_DROPPED)


def follow_drops(
    spark: Any,
    dropped: dict[TableId, str],
    targets: Sequence[Target],
    sink: Sink,
    batch: MicroBatch,
    behavior: str,
    excluded: frozenset[str] = frozenset(),
) -> list[TableId]:
    """Apply the drops ``dropped`` (table -> statement) to the targets of ``batch``; the
    tables whose targets the sink dropped."""
    gone = []
    for table, statement in sorted(dropped.items()):
        target = target_holding(targets, table)
        if target is None:  # a table the pipeline does not write (filtered out)
            continue
        short = " ".join(statement.split())[:160]
        behavior_here = "ignore" if DROP_TABLE in excluded else behavior
        if behavior_here == "exception":
            raise SchemaError(
                f"DROP of {table} ({short}) under 'schema.change.behavior: exception'. "
                "Choose another behaviour ('evolve' drops the target, 'lenient' keeps it) or "
                "exclude the change type (exclude.schema.changes: [drop.table])"
            )
        if len(target.sources) > 1:
            others = ", ".join(
                str(s.table.source) for s in target.sources if s.table.source != table
            )
            log.warning(
                "DROP of %s (%s): its target %s also holds the rows of %s (a route) and is "
                "kept, with the rows %s had",
                table,
                short,
                target.table.source,
                others,
                table,
            )
            sink.release(spark, target.table)
            continue
        if behavior_here not in MIRRORING:
            log.warning(
                "DROP of %s (%s) not applied ('%s'): the target keeps its rows ('evolve' drops it)",
                table,
                short,
                behavior_here,
            )
            sink.release(spark, target.table)
            continue
        try:
            sink.drop_table(spark, target.table, batch)
        except Exception as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            if behavior_here == "evolve":
                raise SchemaError(
                    f"DROP of {table} ({short}): the sink could not apply it ({reason}). "
                    "Set 'schema.change.behavior' to 'try_evolve' (go on, the target kept) or "
                    "'lenient', or exclude the change type (exclude.schema.changes: "
                    "[drop.table])"
                ) from exc
            log.warning(
                "DROP of %s (%s): the sink could not apply it (%s); 'try_evolve' goes on with "
                "the target kept",
                table,
                short,
                reason,
            )
            sink.release(spark, target.table)
            continue
        log.info("DROP of %s (%s) applied: its target is dropped", table, short)
        gone.append(table)
    return gone

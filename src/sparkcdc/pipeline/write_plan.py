"""What the sink is handed for one micro-batch: each target's rows and what is known of
them (sinks/base.py, ``MicroBatch``)."""

from __future__ import annotations

from collections.abc import Sequence

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_split import Split
from sparkcdc.pipeline.lazy_tables import LazyTables
from sparkcdc.pipeline.shaping import to_target
from sparkcdc.pipeline.targets import Target, kept_columns
from sparkcdc.sinks.base import MicroBatch


def micro_batch(
    pipeline: str,
    batch_id: int,
    offset: str | None,
    version: int | None,
    split: Split,
    targets: Sequence[Target],
    namespace: str | None,
) -> MicroBatch:
    """The batch for the sink: the tables' changelogs shaped into their targets (made for
    the targets the sink writes only: pipeline/lazy_tables.py), with their counts."""
    tally = split.tally
    rows = tally.rows
    snapshot_rows = {t: c.snapshot_rows for t, c in tally.counts.items()}
    # kept columns matter to rows read again only: other batches reduce plainly
    reread = {t.table.source: summed(t, tally.reread) > 0 for t in targets}
    by_target = {t.table.source: t for t in targets}
    changes = split.changes
    return MicroBatch(
        pipeline=pipeline,
        batch_id=batch_id,
        changes=LazyTables(
            by_target, lambda s: to_target(changes, by_target[s], namespace, marked=reread[s])
        ),
        source_offset=offset,
        # counts before filters: an upper bound, which is all sinks need (skip a target
        # with 0; all of a target's rows are snapshot rows when both agree)
        row_counts={t.table.source: summed(t, rows) for t in targets},
        snapshot_version=version,
        snapshot_counts={t.table.source: summed(t, snapshot_rows) for t in targets},
        insert_counts={
            t.table.source: tally.counts[t.table.source].inserts
            for t in targets
            if t.as_captured and t.table.source in tally.counts
        },
        kept_columns={t.table.source: kept_columns(t) for t in targets if reread[t.table.source]},
        uncounted=split.uncounted,
        on_read=split.on_read,
        sources={t.table.source: source_ids(t) for t in targets},
    )


def source_ids(target: Target) -> tuple[TableId, ...]:
    return tuple(s.table.source for s in target.sources)


def summed(target: Target, counts: dict[TableId, int]) -> int:
    return sum(counts.get(s.table.source, 0) for s in target.sources)

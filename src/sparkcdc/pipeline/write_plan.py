"""The write plan the runner hands its sink for one micro-batch (sinks/write_plan.py): each
target's rows, shaped from its tables' changelogs, with what the batch's count says of
them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_split import Split
from sparkcdc.pipeline.shaping import to_target
from sparkcdc.pipeline.targets import Target, kept_columns
from sparkcdc.sinks.write_plan import TargetWrite, WritePlan


def write_plan(
    pipeline: str,
    batch_id: int,
    offset: str | None,
    version: int | None,
    split: Split,
    targets: Sequence[Target],
    namespace: str | None,
    inserts_are_new: bool = True,
    unchanged: bool = False,
) -> WritePlan:
    """The batch for the sink: each target's rows (made when the sink first asks for them:
    making them costs the driver, and most targets of a large pipeline have none in a
    batch) and their counts (before filters: an upper bound, which is all sinks need to
    skip a target with 0; all of a target's rows are snapshot rows when both agree).
    ``inserts_are_new``: whether a log insert's key can never be in the target yet (the
    sinks then append a batch of inserts); not so when the source's chunks keep rows a
    later batch's log inserts again (PostgreSQL's ``changelog-mode: upsert``).
    ``unchanged``: the changelogs carry ``_unchanged`` (``WritePlan.unchanged``)."""
    tally = split.tally
    rows = tally.rows
    snapshot_rows = {t: c.snapshot_rows for t, c in tally.counts.items()}
    writes = {}
    for target in targets:
        name = target.table.source
        # kept columns matter to rows read again only: other batches reduce plainly
        reread = summed(target, tally.reread) > 0
        counted = tally.counts.get(name)
        writes[name] = TargetWrite(
            name,
            _maker(split, target, namespace, reread),
            rows=summed(target, rows),
            snapshot_rows=None if version is None else summed(target, snapshot_rows),
            log_inserts=(
                counted.inserts
                if inserts_are_new and target.as_captured and counted is not None
                else None
            ),
            kept_columns=kept_columns(target) if reread else (),
            read_once=name in split.uncounted,
            sources=source_ids(target),
            # untouched rows of one table: a sink may decode them itself
            envelope=split.envelope.get(name) if target.as_captured else None,
        )
    return WritePlan(
        pipeline, batch_id, writes, offset, version, split.on_read, unchanged=unchanged
    )


def _maker(split: Split, target: Target, namespace: str | None, reread: bool) -> Any:
    return lambda: to_target(split.changes, target, namespace, marked=reread)


def source_ids(target: Target) -> tuple[TableId, ...]:
    return tuple(s.table.source for s in target.sources)


def summed(target: Target, counts: dict[TableId, int]) -> int:
    return sum(counts.get(s.table.source, 0) for s in target.sources)

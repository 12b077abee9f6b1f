"""Verifying a pipeline's targets against its source, at the position each target is at.

A sink records, with every batch it applies, the source offset the batch ended at. Verify
reads a target together with that offset (or the last committed batch's, when later: a
target no batch wrote since is as of that one too) and reads the source *as of that log
position*
(a consistent snapshot normalised back or forward to it through the log, the same
machinery the source uses for chunks), so it compares like with like while the pipeline
keeps running.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sparkcdc.core.changes import CHANGE_COLUMNS, UNCHANGED
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.checkpoint import last_committed_offset
from sparkcdc.pipeline.definition import PipelineDefinition
from sparkcdc.pipeline.schema_follow import is_plain
from sparkcdc.pipeline.shaping import to_target
from sparkcdc.pipeline.targets import Target
from sparkcdc.sinks.base import Sink
from sparkcdc.snapshot.handle import SourceHandle
from sparkcdc.snapshot.offset import LogJson, SourceOffset
from sparkcdc.verify.compare import Comparison, compare_multisets, compare_tables
from sparkcdc.verify.progress import tracked

#: Source options that make no sense for a one-off snapshot read of one table.
_STREAM_ONLY = ("maxrowspertrigger", "metadata.list", "signal.file")


@dataclass(frozen=True)
class TableVerdict:
    table: TableId
    #: ``equal``, ``different``, ``snapshotting`` (the pipeline has not copied it all yet)
    #: or ``empty`` (no batch applied yet).
    status: str
    position: str
    comparison: Comparison | None = None


def verify_tables(
    spark: Any,
    definition: PipelineDefinition,
    sink: Sink,
    targets: Sequence[Target],
    handle: SourceHandle[Any, Any],
    progress: Callable[[str], None] | None = None,
) -> list[TableVerdict]:
    """One verdict per target: its rows against its source tables' rows at the target's
    offset (shaped and merged as the pipeline writes them). ``handle``: the pipeline's
    handle on its source (positions on the server connected now). ``progress`` hears
    each table as its comparison starts and ends, and each side's partitions read while
    they are (a large table takes minutes)."""
    say = progress or (lambda _: None)
    verdicts = []
    committed = last_committed_offset(definition.settings.checkpoint)  # before any target
    for index, target in enumerate(targets, 1):
        say(f"verify: {target.table.source} ({index}/{len(targets)}): reading the target")
        verdict = _verdict(spark, definition, sink, target, handle, committed, say)
        c = verdict.comparison
        rows = "" if c is None else f", {c.source_rows} source rows in {c.chunks} chunks"
        say(f"verify: {target.table.source}: {verdict.status}{rows}")
        verdicts.append(verdict)
    return verdicts


def _verdict(
    spark: Any,
    definition: PipelineDefinition,
    sink: Sink,
    target: Target,
    handle: SourceHandle[Any, Any],
    committed: str | None,
    say: Callable[[str], None],
) -> TableVerdict:
    """One target's verdict (see :func:`verify_tables`)."""
    table = target.table
    snapshot = sink.snapshot(spark, table)
    if snapshot.source_offset is None:
        return TableVerdict(table.source, "empty", "-")
    offset = later_offset(handle, SourceOffset.parse(snapshot.source_offset), committed)
    at = handle.position(offset.log_at())  # on the server connected now (failover)
    log, position = at.to_json(), str(at)
    entries = [offset.tables.get(s.table.source) for s in target.sources]
    if any(e is None or e.dropped for e in entries):
        # dropped (the target kept its rows) or no longer matched: nothing to compare
        return TableVerdict(table.source, "not captured", position)
    if not all(e is not None and e.done for e in entries):
        return TableVerdict(table.source, "snapshotting", position)
    say(f"verify: {table.source}: reading the source at {position}, then comparing")
    frames = {
        s.table.source: source_at(spark, definition, s.table.source, json.dumps(log))
        for s in target.sources
    }
    source = to_target(frames, target, definition.namespace)
    columns = table.columns
    if is_plain(target):  # columns a schema change left behind (lenient) are history
        (frame,) = frames.values()
        columns = tuple(c for c in columns if c in frame.columns)
    if table.key:
        read = _reported_read(spark, table.source, say)
        comparison = compare_tables(source, snapshot.rows, table.key, columns, read=read)
    else:  # a table without a primary key: its rows are a multiset
        comparison = compare_multisets(source, snapshot.rows, columns)
    if snapshot.repeated_changes:
        comparison = replace(comparison, repeated_changes=snapshot.repeated_changes)
    status = "equal" if comparison.equal else "different"
    return TableVerdict(table.source, status, position, comparison)


def _reported_read(
    spark: Any, table: TableId, say: Callable[[str], None]
) -> Callable[[str, Any], None]:
    """Reads one side of ``table``'s comparison, saying its partitions read as they are
    (a source partition is a group of the table's key-range chunks, one Spark task)."""

    def read(side: str, frame: Any) -> None:
        unit = "partitions of chunks" if side == "source" else "partitions"

        def report(done: int, total: int) -> None:
            say(f"verify: {table}: {side}: {done} of {total} {unit} read")

        tracked(spark, f"sparkcdc verify {table}: {side}", frame.count, report)

    return read


def later_offset(
    source: SourceHandle[Any, Any], written: SourceOffset[LogJson], committed: str | None
) -> SourceOffset[LogJson]:
    """The offset to verify a target at: the end of the last batch that wrote it, or of
    the last batch Spark committed when that is as late or later. At the same log
    position the committed batch is the one to take: a batch that read the last, empty
    chunk of an emptied table (a TRUNCATE) ends the table's snapshot without a row for
    its target, and without moving the log, so the target's own offset still says the
    table is being read (only a written batch Spark has not committed yet, in a running
    pipeline, is further along; verify then says ``snapshotting`` until it is). The
    batches in between had no rows
    for the target (a sink writes a target when a batch has rows for it), so the target
    is as of that later offset too. It matters on PostgreSQL: the slot releases WAL a few
    batches behind Spark's commits, so a target idle since could no longer be read as of
    its own last write; and the source's read from a later position crosses less log.
    ``committed`` is read before any target: a batch committed after a target was read
    may have written it."""
    if committed is None:
        return written
    later = SourceOffset.parse(committed)
    if source.position(later.log_at()) >= source.position(written.log_at()):
        return later
    return written


def source_at(spark: Any, definition: PipelineDefinition, table: TableId, position: str) -> Any:
    """One source table as of a log position, as a batch DataFrame of its columns."""
    found = definition.connector
    stream = {k: v for k, v in definition.source_options.items() if k.lower() not in _STREAM_ONLY}
    options = found.one_table_of(stream, table) | {"scan.snapshot.position": position}
    frame = spark.read.format(found.format).options(**options).load()
    return frame.drop(*CHANGE_COLUMNS, UNCHANGED)

"""What a sink is handed for one Spark micro-batch: a write plan, one record per target.

For every target, the batch's changes as a typed changelog DataFrame (the target's
columns, then ``_change_type``, ``_commit_version``, ``_commit_timestamp``) and what the
pipeline knows of them from its count (how many rows, how many are snapshot rows of keys
never emitted, how many are the log's inserts, which columns rows read again leave alone,
whether the sink reads them once, uncounted), and, for a target that mirrors one table of a
many-table batch, that table's rows as the envelope has them (:class:`EnvelopeRows`). Spark
may hand the same batch again after a crash (foreachBatch is at-least-once), so a sink
must make a replayed plan change nothing where it declares exactly-once delivery, keyed by
``(pipeline, batch_id)``.

Sinks also record the source offset each batch ended at, the part of it their target is
made of (:meth:`WritePlan.offset_of`), so ``sparkcdc verify`` can compare a target with
the source as of that offset while the pipeline keeps running.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.offset import LogJson, SourceOffset


@dataclass(frozen=True)
class EnvelopeRows:
    """A target's rows as one captured table's rows in the batch's envelope, untouched (a
    target that mirrors the table: no transform, no route): what a sink may decode itself,
    several targets' in one Spark action (spark/envelope_fetch.py), instead of asking for
    each target's DataFrame (:attr:`TargetWrite.changes`), whose plan per table (Spark's
    ``from_json`` of the table's columns) costs the driver more than the rows in a batch
    that changes hundreds of tables (issue 62)."""

    #: The batch's envelope rows (a Spark DataFrame, cached while the sink writes).
    frame: Any
    #: The captured table (the envelope's ``database_name`` and ``table_name``).
    table: TableId
    #: The table's columns (a Spark StructType), as ``spark/envelope.unpack_table`` reads them.
    schema: Any


@dataclass(frozen=True)
class TargetWrite:
    """One target's part of a batch."""

    #: The target (its table id, as the sink was opened with it).
    target: TableId
    #: Makes the target's changelog rows: each DataFrame is made when first asked for
    #: (:attr:`changes`), since making one costs the driver a few hundred milliseconds
    #: and a batch of a 1000-table pipeline may change three of them.
    make: Callable[[], Any]
    #: Changelog rows, when the pipeline counted them (one Spark job for all targets):
    #: a sink skips a target with 0 instead of running a job to find out. An upper bound
    #: (counted before a transform's filter).
    rows: int | None = None
    #: Of :attr:`rows`, the snapshot rows (keys the pipeline never emitted).
    snapshot_rows: int | None = None
    #: Of :attr:`rows`, the log's inserts, for a target that mirrors one table as
    #: captured (one source, no transform): there an insert's key cannot be in the target
    #: (:attr:`inserts_only`). None for other targets.
    log_inserts: int | None = None
    #: The target's columns its rows do not carry (NULL in them), one set per kind of row
    #: (sinks/reduce.py, ``KEPT_SET``): columns a schema change dropped or renamed away that
    #: ``lenient``/``ignore`` keep, or that only other tables of a merged target have. A
    #: row read again (:meth:`WritePlan.is_reread_row`) leaves them as the target has them.
    #: Given for targets with rows read again in the batch only.
    kept_columns: tuple[tuple[str, ...], ...] = ()
    #: Every row is a snapshot row of one table, neither counted nor cached: the sink reads
    #: them once as it writes them (pipeline/one_pass.py), only where it said it appends
    #: them (``Sink.writes_snapshot_once``).
    read_once: bool = False
    #: The source tables the target is made of (a route merges several), when known: what
    #: the target records of the offset (:meth:`WritePlan.offset_of`).
    sources: tuple[TableId, ...] | None = None
    #: The target's rows as its one table's envelope rows, where they are that (None: only
    #: :attr:`changes` has them).
    envelope: EnvelopeRows | None = None

    @cached_property
    def changes(self) -> Any:
        """The target's typed changelog rows (made on first use, then kept)."""
        return self.make()

    @property
    def has_changes(self) -> bool:
        """Whether the batch may have rows for the target (unknown counts: yes)."""
        return self.read_once or self.rows is None or self.rows > 0

    @property
    def inserts_only(self) -> bool:
        """Whether every row is of a key the target cannot hold yet: snapshot rows and
        the log's inserts, nothing else. A sink whose target holds this pipeline's rows
        only may append them. Every row is an insert then, and no key comes twice: a
        second insert of a key needs a delete between, and a snapshot row's key was never
        emitted by the log."""
        if self.rows is None or self.snapshot_rows is None or self.log_inserts is None:
            return False
        return self.rows > 0 and self.rows == self.log_inserts + self.snapshot_rows

    @property
    def snapshot_only(self) -> bool:
        """Whether every row is a snapshot row (an insert of a key the batch has once:
        chunks do not overlap), as counted."""
        return bool(self.rows) and self.rows == self.snapshot_rows


@dataclass(frozen=True)
class WritePlan:
    """One Spark micro-batch of a pipeline, per target."""

    #: Identifies the pipeline's checkpoint (its name and Spark query id): a new checkpoint
    #: starts batch ids at 0 again, so exactly-once bookkeeping is keyed by this.
    pipeline: str
    batch_id: int
    #: Every target the sink writes, keyed by the target's table id (one without changes
    #: in this batch is there, with no rows).
    targets: Mapping[TableId, TargetWrite]
    #: The source offset at the end of this batch (JSON text), or None when unknown.
    source_offset: str | None = None
    #: ``_commit_version`` of the batch's snapshot rows (the version of its end position):
    #: inserts at exactly this version are rows the snapshot read now. None: unknown.
    snapshot_version: int | None = None
    #: Called by :meth:`read_through` with each DataFrame read to its end: the pipeline
    #: checks there, before the sink commits, that the rows were what the batch's offsets
    #: said (snapshot rows of one table only), so a wrong batch fails uncommitted.
    on_read: Callable[[Any], None] | None = None
    #: Filled by the sink while it writes (the one mutable part of a frozen plan): the
    #: DataFrames of ``read_once`` targets it read to their end, or None.
    read_frames: list[Any] = field(default_factory=list)
    #: The targets' changelogs carry ``_unchanged`` (absent values: PostgreSQL's
    #: ``changelog-mode: upsert``), which upsert targets honour by keeping stored values.
    unchanged: bool = False

    def with_changes(self) -> Iterator[TargetWrite]:
        """The targets the batch may have rows for, in the plan's order."""
        return (write for write in self.targets.values() if write.has_changes)

    def offset_of(self, target: TableId) -> str | None:
        """The source offset as ``target``'s own commit records it: the log position and
        the progress of the target's source tables only, which is all ``verify`` reads
        of it. A pipeline of 1000 tables would otherwise write its whole offset (~1.2 MB,
        every table's columns) into every commit of every target. The whole offset when
        the sources are not known or the offset is another source's (no table
        progress)."""
        write = self.targets.get(target)
        sources = None if write is None else write.sources
        if self.source_offset is None or sources is None:
            return self.source_offset
        offset = SourceOffset.try_parse(self.source_offset)
        return self.source_offset if offset is None else offset.only(sources).to_text()

    def offset(self) -> SourceOffset[LogJson] | None:
        """The batch's end offset, decoded (None: unknown, or another source's)."""
        return None if self.source_offset is None else SourceOffset.try_parse(self.source_offset)

    def read_through(self, frame: Any) -> None:
        """``frame``, made from a ``read_once`` target's rows, was read to its end with
        ``toLocalIterator``. Spark's ``Observation`` of the rows completes, empty, as such
        a read starts (no action it listens to runs the jobs), so the pipeline counts them
        from ``frame``'s own plan instead (pipeline/one_pass.py). None: the rows are read
        in parts, some other way, or not at all (a replay the sink skips): the pipeline
        counts them again. A sink records None before such a read and the DataFrame once
        it is read, so a read cut short leaves None last."""
        self.read_frames.append(frame)
        if frame is not None and self.on_read is not None:
            self.on_read(frame)

    def is_snapshot_row(self) -> Any:
        """A Spark column: whether a changelog row is a snapshot row of this batch."""
        from pyspark.sql import functions as F

        return (F.col(CHANGE_TYPE) == "insert") & (
            F.col(COMMIT_VERSION) == F.lit(self.snapshot_version)
        )

    def is_reread_row(self) -> Any:
        """A Spark column: whether a changelog row is a row read again in this batch (an
        update post-image at the batch end's version, without a pre-image: a re-read on
        demand, or after a schema change). It says what the row holds now; of a kept
        column it knows nothing, so the sink leaves the target's value there."""
        from pyspark.sql import functions as F

        if self.snapshot_version is None:
            return F.lit(False)
        return F.col(CHANGE_TYPE).isin("update", "update_postimage") & (
            F.col(COMMIT_VERSION) == F.lit(self.snapshot_version)
        )


def plan_of(
    pipeline: str,
    batch_id: int,
    changes: Mapping[TableId, Any],
    source_offset: str | None = None,
    *,
    rows: Mapping[TableId, int] | None = None,
    snapshot_version: int | None = None,
    snapshot_rows: Mapping[TableId, int] | None = None,
    log_inserts: Mapping[TableId, int] | None = None,
    kept_columns: Mapping[TableId, tuple[tuple[str, ...], ...]] | None = None,
    read_once: Collection[TableId] = (),
    sources: Mapping[TableId, tuple[TableId, ...]] | None = None,
    on_read: Callable[[Any], None] | None = None,
) -> WritePlan:
    """A plan of ready-made DataFrames per target, with the counts given per target (tools,
    benchmarks and tests that drive a sink without a pipeline). Snapshot rows are known
    only with the batch's ``snapshot_version``."""

    def count(counts: Mapping[TableId, int] | None, target: TableId) -> int | None:
        return None if counts is None else counts.get(target, 0)

    snapshots = snapshot_rows if snapshot_version is not None else None
    targets = {
        target: TargetWrite(
            target,
            _ready(frame),
            rows=count(rows, target),
            snapshot_rows=count(snapshots, target),
            log_inserts=None if log_inserts is None else log_inserts.get(target),
            kept_columns=() if kept_columns is None else kept_columns.get(target, ()),
            read_once=target in read_once,
            sources=None if sources is None else sources.get(target),
        )
        for target, frame in changes.items()
    }
    return WritePlan(pipeline, batch_id, targets, source_offset, snapshot_version, on_read)


def _ready(frame: Any) -> Callable[[], Any]:
    return lambda: frame

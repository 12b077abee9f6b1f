"""The contract between a pipeline and its sink.

A pipeline hands its sink one :class:`MicroBatch` per Spark micro-batch: for every captured
table, that batch's changes as a typed changelog DataFrame (the table's columns, then
``_change_type``, ``_commit_version``, ``_commit_timestamp``). Spark may hand the same batch
again after a crash (foreachBatch is at-least-once), so :meth:`Sink.write` must make a
replayed batch change nothing: exactly-once is the sink's job, keyed by
``(pipeline, batch_id)``.

Sinks also record the source offset each batch ended at, so ``sparkcdc verify`` can compare
a target with the source *as of that offset* while the pipeline keeps running.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.options import OptionSpec
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import ColumnMoves
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.snapshot.offset import LogJson, SourceOffset


@dataclass(frozen=True)
class SinkTable:
    """One captured source table as a sink sees it."""

    source: TableId
    #: Spark StructType of the table's own columns (no change columns), in source order.
    schema: Any
    #: Primary-key column names, in key order: what upserts match on.
    key: tuple[str, ...]
    #: Columns a new target is partitioned by (a transform's ``partition-keys``; sinks
    #: that have no partitions ignore them).
    partition_keys: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.schema.fields)


@dataclass(frozen=True)
class MicroBatch:
    """One Spark micro-batch of a pipeline, split by source table."""

    #: Identifies the pipeline's checkpoint (its name and Spark query id): a new checkpoint
    #: starts batch ids at 0 again, so exactly-once bookkeeping is keyed by this, not the name.
    pipeline: str
    batch_id: int
    #: Typed changelog rows per target, keyed by the target's table id (every target is
    #: present; one without changes in this batch has no rows), made from the batch the
    #: pipeline cached. Each DataFrame is made when first asked for
    #: (pipeline/lazy_tables.py): ask for the targets :meth:`has_changes` says have rows.
    changes: Mapping[TableId, Any]
    #: The source offset at the end of this batch (JSON text: log position and per-table
    #: snapshot progress), or None when unknown. Sinks store it next to the data.
    source_offset: str | None = None
    #: Changelog rows per table in this batch, when the pipeline counted them (one Spark job
    #: for all tables): sinks skip tables with 0 instead of running a job to find out.
    row_counts: Mapping[TableId, int] | None = None
    #: ``_commit_version`` of the batch's snapshot rows (the version of its end position):
    #: inserts at exactly this version are rows the snapshot read now, of keys this pipeline
    #: never emitted before (no log change has a position's version). None: unknown.
    snapshot_version: int | None = None
    #: Of ``row_counts``, the snapshot rows per table (when counted).
    snapshot_counts: Mapping[TableId, int] | None = None
    #: Of ``row_counts``, the log's inserts per target that mirrors one table as captured
    #: (one source, no transform): there an insert's key cannot be in the target, since
    #: the target held the table's rows as of the batch's start and the key was not in
    #: the table until the insert (:meth:`inserts_only`). Other targets are left out.
    insert_counts: Mapping[TableId, int] = field(default_factory=dict)
    #: Per target, the target's columns its rows do not carry (NULL in them): columns a
    #: schema change dropped or renamed away that ``lenient``/``ignore`` keep in the
    #: target, or that only other tables of a merged target have. A row read again
    #: (:meth:`is_reread_row`) leaves them as the target has them. One set per kind of
    #: row: the tables merged into a target may lack different columns; with more than one
    #: set, each row holds the index of its own in ``sinks.reduce.KEPT_SET``. The pipeline
    #: gives them for targets with rows read again in the batch only.
    kept_columns: Mapping[TableId, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    #: Targets whose rows were neither counted nor cached (``row_counts`` lacks them):
    #: every row is a snapshot row of one table, read from the source as the sink writes
    #: it (pipeline/one_pass.py). Only for targets the sink said it appends to
    #: (:meth:`Sink.writes_snapshot_once`), which must read them once.
    uncounted: frozenset[TableId] = frozenset()
    #: Filled by the sink while it writes (so the one mutable part of a frozen batch): a
    #: sink that reads an ``uncounted`` target's rows with ``toLocalIterator`` records
    #: here the DataFrame it read to its end, or None (:meth:`read_through`).
    read_frames: list[Any] = field(default_factory=list)
    #: Called by :meth:`read_through` with each DataFrame read to its end: the pipeline
    #: checks there, before the sink commits, that the rows were what the batch's offsets
    #: said (snapshot rows of one table only), so a wrong batch fails uncommitted.
    on_read: Callable[[Any], None] | None = None
    #: The source tables each target is made of (a route merges several), when the
    #: pipeline gives them: what a target records of the offset (:meth:`offset_of`).
    sources: Mapping[TableId, tuple[TableId, ...]] = field(default_factory=dict)

    def offset_of(self, target: TableId) -> str | None:
        """The source offset as ``target``'s own commit records it: the log position and
        the progress of the target's source tables only, which is all ``verify`` reads
        of it. A pipeline of 1000 tables would otherwise write its whole offset (~1.2 MB,
        every table's columns) into every commit of every target, and into each of
        those commits' Spark SQL events. The whole offset when the sources are not given
        or the offset has no per-table progress (a changelog source's)."""
        sources = self.sources.get(target)
        if self.source_offset is None or sources is None:
            return self.source_offset
        offset = SourceOffset.try_parse(self.source_offset)
        return self.source_offset if offset is None else offset.only(sources).to_text()

    def has_changes(self, table: TableId) -> bool:
        if table in self.uncounted:
            return True
        return self.row_counts is None or self.row_counts.get(table, 0) > 0

    def read_through(self, frame: Any) -> None:
        """``frame``, made from an ``uncounted`` target's rows, was read to its end with
        ``toLocalIterator``. Spark's ``Observation`` of the rows completes, empty, as such a
        read starts (no action it listens to runs the jobs), so the pipeline counts them
        from ``frame``'s own plan instead (pipeline/one_pass.py). None: the rows are read
        in parts, some other way, or not at all (a replay the sink skips): the pipeline
        counts them again. A sink records None before such a read and the DataFrame once
        it is read, so a read cut short leaves None last."""
        self.read_frames.append(frame)
        if frame is not None and self.on_read is not None:
            self.on_read(frame)

    def snapshot_rows(self, table: TableId) -> int | None:
        """How many of the table's rows in this batch are snapshot rows (None: unknown)."""
        if self.snapshot_version is None or self.snapshot_counts is None:
            return None
        return self.snapshot_counts.get(table, 0)

    def inserts_only(self, table: TableId) -> bool:
        """Whether all of the target's rows in this batch are of keys it cannot hold yet:
        snapshot rows and the log's inserts (``insert_counts``), nothing else. A sink
        whose target holds this pipeline's rows only may append them. Every row is an
        insert then (``_change_type``), and no key comes twice: a second insert of a key
        needs a delete between, and a snapshot row's key was never emitted by the log."""
        if self.row_counts is None or self.snapshot_counts is None:
            return False
        inserts = self.insert_counts.get(table)
        rows = self.row_counts.get(table, 0)
        return (
            inserts is not None
            and rows > 0
            and rows == inserts + self.snapshot_counts.get(table, 0)
        )

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

    def offset(self) -> SourceOffset[LogJson] | None:
        """The batch's end offset, decoded (None: unknown, or another source's)."""
        return None if self.source_offset is None else SourceOffset.try_parse(self.source_offset)


@dataclass(frozen=True)
class TargetSnapshot:
    """A target table's rows together with the source offset they correspond to (a
    history target's rows are its changes replayed: per key the last one, if not a
    delete)."""

    #: Spark DataFrame with the table's columns (upsert targets) as of ``source_offset``.
    rows: Any
    #: JSON text of the source offset of the last batch applied, or None if nothing was.
    source_offset: str | None
    #: Changes a history target holds more than once (the same key, version and change
    #: type): a batch appended twice. Its replay (``rows``) can still equal the source, so
    #: verify counts them apart and reports the target different.
    repeated_changes: int = 0


class Sink(ABC):
    """Writes micro-batches of captured tables into target tables, exactly once."""

    #: Told of each retry of a batch whose connection to the target was lost (the
    #: pipeline's metrics); sinks that retry call it.
    on_retry: Callable[[], None] | None = None
    #: Whether the run is stopping (set by the pipeline): a sink writing a batch's
    #: targets at once starts no further target once it is.
    stopping: Callable[[], bool] | None = None

    @property
    @abstractmethod
    def capabilities(self) -> SinkCapabilities:
        """What this sink does (its type's declaration for its configuration): the
        pipeline calls :meth:`evolve`, :meth:`truncate`, :meth:`drop_table` and
        :meth:`snapshot` only where it says so."""

    @abstractmethod
    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        """Prepare targets before the first batch: create missing target tables from the
        source schemas; fail clearly when an existing target cannot take the rows."""

    @abstractmethod
    def write(self, batch: MicroBatch) -> None:
        """Apply one micro-batch. A batch already applied (same pipeline and batch id, or an
        older one) must change nothing."""

    def writes_snapshot_once(self, spark: Any, table: SinkTable, pipeline: str) -> bool:
        """Whether a batch of only snapshot rows into ``table`` (a target) is written
        reading its rows once, uncounted and uncached (``MicroBatch.uncounted``): an
        append, in one Spark action, where Spark's ``Observation`` sees the rows, or a
        read with ``toLocalIterator`` handed to :meth:`MicroBatch.read_through` (never
        one without: its observation would say 0 rows). The pipeline then skips the
        batch's cache and count. Asked before each such batch."""
        del spark, table, pipeline
        return False

    def evolve(
        self,
        spark: Any,
        table: SinkTable,
        previous: SinkTable | None = None,
        moves: ColumnMoves | None = None,
    ) -> None:
        """The source table's columns changed (pipeline/evolution.py): from now on the
        target has ``table``'s columns. Against what it had (``previous``, when known):
        the columns ``moves`` names are renamed (old name -> new) and dropped, the others
        are kept, with types only widened and NOT NULL only relaxed, and new columns are
        added (nullable). Make the target take them (Flink CDC's MetadataApplier): rename,
        drop, add, relax, widen; fail with the fix where the target cannot. Idempotent (a
        replayed batch, a restart: a rename whose new name is there is done, a dropped
        column that is gone is dropped); callable before :meth:`open` (a target that does
        not exist yet is left to it)."""
        del spark, previous, moves
        raise SparkCdcError(
            f"the {type(self).__name__} cannot apply schema changes (of {table.source}); "
            "set 'schema.change.behavior' to 'exception' to stop at them instead"
        )

    def truncate(self, spark: Any, table: SinkTable, batch: MicroBatch) -> None:
        """The source table was truncated (pipeline/truncates.py): empty its target, before
        ``batch`` (the truncate's own, which has no rows) is written. Idempotent: the
        target gets no rows between a truncate and its replay."""
        del spark, batch
        raise SparkCdcError(
            f"the {type(self).__name__} cannot empty its targets (of {table.source})"
        )

    def drop_table(self, spark: Any, table: SinkTable, batch: MicroBatch) -> None:
        """The source table was dropped (pipeline/table_drops.py): drop its target, before
        ``batch`` (the drop's own, which has no rows) is written. Idempotent: a target that
        is gone is dropped. A table created again under the name later gets a new target
        through :meth:`open`."""
        del spark, batch
        raise SparkCdcError(
            f"the {type(self).__name__} cannot drop its targets (of {table.source})"
        )

    def release(self, spark: Any, table: SinkTable) -> None:
        """The target keeps rows its source table no longer has (the table was dropped, or
        truncated, and the behaviour kept them): the target no longer mirrors the table, so
        the snapshot rows of a table created again under the name, and inserts of keys it
        may keep, must be merged, not appended (a sink that appends them forgets that the
        target was its own)."""
        del spark, table

    def target_of(self, table: SinkTable) -> str | None:
        """The target ``table`` is written to, as a name that is equal exactly when two
        tables would land in one target (None: this sink writes no shared targets). The
        pipeline refuses to start when two tables share one: their batches would collide
        (Delta would skip the second as a replay of the first)."""
        return None

    def snapshot(self, spark: Any, table: SinkTable) -> TargetSnapshot:
        """The target's current rows and the source offset they are at (for ``verify``)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be verified")

    def close(self) -> None:
        """Release connections; called once when the pipeline stops."""
        return None


def shared_targets(sink: Sink, tables: Sequence[SinkTable]) -> dict[str, list[TableId]]:
    """Targets that more than one of ``tables`` would be written to."""
    by_target: dict[str, list[TableId]] = {}
    for table in tables:
        target = sink.target_of(table)
        if target is not None:
            by_target.setdefault(target, []).append(table.source)
    return {t: sources for t, sources in by_target.items() if len(sources) > 1}


def target_names(
    tables: Sequence[SinkTable], pattern: str, part: Callable[[str], str] = str
) -> Mapping[TableId, str]:
    """Target table names from a pattern with ``{database}`` and ``{table}`` placeholders,
    each filled with ``part`` of the source name (a sink's escaping)."""
    return {
        t.source: pattern.format(database=part(t.source.database), table=part(t.source.table))
        for t in tables
    }


Config = TypeVar("Config")


@dataclass(frozen=True)
class SinkType(Generic[Config]):
    """A sink as the registry (:mod:`sparkcdc.sinks.registry`) finds it by name: each sink
    folder's ``__init__`` declares one as ``SINK``.

    ``parse`` runs when a pipeline file is validated, offline and fast, so it and the
    module declaring ``SINK`` import neither pyspark nor drivers; ``create`` imports the
    sink itself when a pipeline runs.
    """

    #: The ``type`` a pipeline file's ``sink`` block names it by.
    name: str
    #: The sink block's options -> the validated config; raises OptionError naming the
    #: option and what is valid.
    parse: Callable[[Mapping[str, str]], Config]
    #: (config, the pipeline file's folder for relative paths or None, the pipeline's
    #: checkpoint identity, see MicroBatch, or None when not known: ``validate`` before a
    #: first run) -> the sink.
    create: Callable[[Config, Path | None, str | None], Sink]
    #: config -> what the sink so configured does (sinks/capabilities.py): the pipeline
    #: decides from it which table events reach the sink and whether ``verify`` can run.
    capabilities: Callable[[Config], SinkCapabilities]
    #: The option specs ``parse`` validates against (the README's table is made of them).
    specs: tuple[OptionSpec, ...] = ()

"""The contract between a pipeline and its sink.

A pipeline hands its sink one write plan per Spark micro-batch (sinks/write_plan.py): for
every target, that batch's changes as a typed changelog DataFrame and what the pipeline
counted of them. Spark may hand the same batch again after a crash (foreachBatch is
at-least-once), so a sink that declares exactly-once delivery (its capabilities,
sinks/capabilities.py) makes a replayed batch change nothing, keyed by
``(pipeline, batch_id)``. Table events (core/table_events.py) reach the sink through
:meth:`Sink.evolve`, :meth:`Sink.truncate` and :meth:`Sink.drop_table`, called only for
the types it declares.

Sinks also record the source offset each batch ended at, so ``sparkcdc verify`` can compare
a target with the source *as of that offset* while the pipeline keeps running.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.options import OptionSpec
from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import ColumnMoves
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.names import fill_name
from sparkcdc.sinks.write_plan import WritePlan


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
    #: The table's and its columns' comments (``include-comments.enabled``), for the
    #: targets and columns a sink creates; sinks without tables ignore them.
    comments: Comments = NO_COMMENTS

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.schema.fields)


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
    def write(self, batch: WritePlan) -> None:
        """Apply one micro-batch. A batch already applied (same pipeline and batch id, or an
        older one) must change nothing."""

    def writes_snapshot_once(self, spark: Any, table: SinkTable, pipeline: str) -> bool:
        """Whether a batch of only snapshot rows into ``table`` (a target) is written
        reading its rows once, uncounted and uncached (``TargetWrite.read_once``): an
        append, in one Spark action, where Spark's ``Observation`` sees the rows, or a
        read with ``toLocalIterator`` handed to :meth:`WritePlan.read_through` (never
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

    def truncate(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """The source table was truncated, or its log lost (pipeline/applier.py): empty
        its target, before ``batch`` (the event's own, which has no rows) is written.
        Idempotent: the target gets no rows between a truncate and its replay."""
        del spark, batch
        raise SparkCdcError(
            f"the {type(self).__name__} cannot empty its targets (of {table.source})"
        )

    def drop_table(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """The source table was dropped (pipeline/applier.py): drop its target, before
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

    def named_tables(self) -> Mapping[str, Mapping[TableId, str]]:
        """Per option of this sink that names target tables (Flink CDC's
        ``db.table:...;...`` form, e.g. the Delta sink's ``cluster.key``), each table it
        names with the entry that names it. The pipeline refuses, before anything runs, an
        entry that names no target (pipeline/named_tables.py): a typo is never silent."""
        return {}

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
    return {t.source: fill_name(pattern, t.source.database, t.source.table, part) for t in tables}


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
    #: checkpoint identity, see WritePlan, or None when not known: ``validate`` before a
    #: first run) -> the sink.
    create: Callable[[Config, Path | None, str | None], Sink]
    #: config -> what the sink so configured does (sinks/capabilities.py): the pipeline
    #: decides from it which table events reach the sink and whether ``verify`` can run.
    capabilities: Callable[[Config], SinkCapabilities]
    #: The option specs ``parse`` validates against (the README's table is made of them).
    specs: tuple[OptionSpec, ...] = ()

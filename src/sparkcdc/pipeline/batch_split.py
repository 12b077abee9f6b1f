"""A micro-batch split by table and counted (docs/pipelines.md, "One micro-batch").

Several tables arrive in one stream (the envelope: each row names its table and carries
its columns as JSON) or one table with its typed columns; the sink wants each table's
changes as a typed changelog. The batch is counted in one Spark job (rows, snapshot rows,
changes by kind, rows read again, the newest commit time per table): the sinks skip
targets without rows, append batches of new keys, and the metrics count from it. A batch
that is one table's snapshot rows only is counted by its write instead
(pipeline/one_pass.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.core.changes import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    change_columns,
)
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.identifiers import quoted
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_report import TableCounts
from sparkcdc.pipeline.lazy_tables import LazyTables
from sparkcdc.pipeline.one_pass import metrics_in, observed
from sparkcdc.pipeline.shaping import conform
from sparkcdc.pipeline.table_tasks import tasks_for
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.write_plan import EnvelopeRows


@dataclass(frozen=True)
class BatchSplit:
    """How a run's batches are split: its captured tables, read from the envelope or as
    one typed table; ``pipeline_file`` names the run in messages."""

    tables: Sequence[SinkTable]
    envelope: bool
    pipeline_file: Path

    def of(
        self, frame: Any, batch_id: int, snapshot_version: int | None, alone: TableId | None
    ) -> Split:
        """The batch split and counted, or (``alone``: a batch of that table's snapshot
        rows only, pipeline/one_pass.py) split to be counted by its write."""
        if alone is None:
            changes, tally = self.split(frame, snapshot_version)
            return Split(changes, tally, time.time(), envelope=self.envelope_rows(frame))
        changes, observation, recount = self.split_once(frame, alone, snapshot_version)

        def finish(read_frames: Sequence[Any]) -> Tally:
            return self.counted_once(alone, observed(observation, recount, read_frames), batch_id)

        return Split(
            changes,
            Tally({}, None),
            time.time(),
            on_read=self.read_checker(alone, observation, batch_id),
            finish=finish,
        )

    def split(
        self, frame: Any, snapshot_version: int | None
    ) -> tuple[Mapping[TableId, Any], Tally]:
        """The batch per table as typed changelogs, and what it holds per table (changelog
        rows, snapshot rows, changes by kind, rows read again on demand, the newest log
        commit time) counted in one Spark job."""
        wanted = measures(snapshot_version)
        if not self.envelope:
            table = self.tables[0]
            (row,) = frame.agg(*wanted).collect()
            tally = Tally.of({table.source: row})
            if all(c in frame.columns for c in table.columns):
                columns = [quoted(c) for c in table.columns] + list(change_columns(frame.columns))
                return {table.source: frame.select(*columns)}, tally
            # the batch of a schema change: the query still has the old columns (and no rows)
            return {table.source: conform(frame, table)}, tally
        from sparkcdc.spark.envelope import unpack_table

        rows = frame.groupBy("database_name", "table_name").agg(*wanted).collect()
        tally = Tally.of({TableId(r["database_name"], r["table_name"]): r for r in rows})
        tally.fill(t.source for t in self.tables)
        by_source = {t.source: t for t in self.tables}
        carried = change_columns(frame.columns)  # with _unchanged where the envelope has it

        def typed(source: TableId) -> Any:
            table = by_source[source]
            unpacked = unpack_table(frame, source.database, source.table, table.schema)
            changes = unpacked.select(*[quoted(c) for c in table.columns], *carried)
            # as many tasks as its own rows need, not one per partition of the whole batch
            # (pipeline/table_tasks.py)
            return changes.coalesce(tasks_for(tally.rows.get(source, 0)))

        return LazyTables(by_source, typed), tally

    def envelope_rows(self, frame: Any) -> Mapping[TableId, EnvelopeRows]:
        """Each table's rows as the envelope has them (none for a one-table stream):
        what a sink may decode itself instead of the typed changelog (``EnvelopeRows``)."""
        if not self.envelope:
            return {}
        return {t.source: EnvelopeRows(frame, t.source, t.schema) for t in self.tables}

    def split_once(
        self, frame: Any, alone: TableId, snapshot_version: int | None
    ) -> tuple[Mapping[TableId, Any], Any, Callable[[], Any]]:
        """The batch per table as typed changelogs, as :meth:`split` gives them, for a
        batch of ``alone``'s snapshot rows only: the batch under its rows carries an
        observation of the same measures (filled by the sink's write), every other table's
        rows are empty without reading anything. Also how to count the batch again (a
        replay's write is skipped: nothing observes it)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        from sparkcdc.spark.envelope import unpack_table

        # observed below the split: rows of any other table in the batch are counted too
        # (as ``o``), so an offset that said wrong fails the run instead of losing them
        wanted = measures(snapshot_version)
        if self.envelope:
            theirs = (F.col("database_name") == alone.database) & (
                F.col("table_name") == alone.table
            )
            wanted.append(F.count(F.when(~theirs, 1)).alias("o"))
        observation = Observation()
        observed_frame = frame.observe(observation, *wanted)
        by_source = {t.source: t for t in self.tables}
        carried = change_columns(frame.columns)

        def typed(source: TableId) -> Any:
            table, mine = by_source[source], source == alone
            rows = observed_frame if mine else frame
            if self.envelope:
                rows = unpack_table(rows, source.database, source.table, table.schema)
            rows = rows.select(*[quoted(c) for c in table.columns], *carried)
            # the other tables' rows: planned as empty, so nothing reads them
            return rows if mine else rows.limit(0)

        changes = LazyTables(by_source, typed)

        def recount() -> Any:
            (row,) = frame.agg(*wanted).collect()
            return row.asDict()  # as the observation gives it

        return changes, observation, recount

    def read_checker(
        self, alone: TableId, observation: Any, batch_id: int
    ) -> Callable[[Any], None]:
        """What checks a DataFrame a sink read to its end (``WritePlan.on_read``): the
        counts its plan holds must be snapshot rows of ``alone`` only, or the batch fails
        before the sink commits it (:meth:`counted_once`)."""

        def check(frame: Any) -> None:
            row = metrics_in(frame, observation)
            if row is not None:
                self.counted_once(alone, row, batch_id)

        return check

    def counted_once(self, alone: TableId, row: Any, batch_id: int) -> Tally:
        """The tally of a batch written in one pass, from what its write observed. The
        offsets said it holds snapshot rows only; a log change in it would have been
        dropped by the sink's append, so it fails the run loudly."""
        tally = Tally.of({alone: row})
        tally.fill(t.source for t in self.tables)
        counts = tally.counts[alone]
        others = int(row["o"]) if "o" in row else 0
        if counts.inserts or counts.updates or counts.deletes or counts.reread_rows or others:
            raise SparkCdcError(
                f"batch {batch_id} of {alone} held log changes ({counts}) or {others} rows "
                "of other tables where its offsets said it held snapshot rows of this "
                "table only; the targets may lack them. This is a "
                f"defect: please report it, and read the table again with `sparkcdc "
                f"snapshot {self.pipeline_file} --table {alone}`"
            )
        return tally


def measures(snapshot_version: int | None) -> list[Any]:
    """What a batch holds (``Tally.of`` reads them): snapshot rows ``s``, log inserts
    ``i``, updates ``u``, deletes ``d``, rows read again ``r``, the newest log commit
    time ``t``. Rows at the batch end's version are read by the snapshot (no log change
    has a position's version): inserts of a first snapshot, updates of a re-read."""
    from pyspark.sql import functions as F

    kind = F.col(CHANGE_TYPE)
    at_end = F.col(COMMIT_VERSION) == F.lit(snapshot_version)
    update = kind.isin("update", "update_postimage")
    snapshot = (kind == "insert") & at_end
    reread = update & at_end
    logged = F.coalesce(~(snapshot | reread), F.lit(True))
    return [
        F.count(F.when(snapshot, 1)).alias("s"),
        F.count(F.when((kind == "insert") & logged, 1)).alias("i"),
        F.count(F.when(update & logged, 1)).alias("u"),
        F.count(F.when(kind == "delete", 1)).alias("d"),
        F.count(F.when(reread, 1)).alias("r"),
        F.max(F.when(logged, F.col(COMMIT_TIMESTAMP))).alias("t"),
    ]


@dataclass
class Tally:
    """A batch's counts per table, from the aggregate rows of ``BatchSplit.split``."""

    counts: dict[TableId, TableCounts]
    newest_commit: float | None

    @classmethod
    def of(cls, rows: dict[TableId, Any]) -> Tally:
        counts = {
            t: TableCounts(int(r["s"]), int(r["i"]), int(r["u"]), int(r["d"]), int(r["r"]))
            for t, r in rows.items()
        }
        times = [r["t"].timestamp() for r in rows.values() if r["t"] is not None]
        return cls(counts, max(times) if times else None)

    def fill(self, tables: Any) -> None:
        for table in tables:
            self.counts.setdefault(table, TableCounts())

    @property
    def rows(self) -> dict[TableId, int]:
        """Changelog rows per table, as a one-table stream has them (an update is two)."""
        return {t: c.changelog_rows for t, c in self.counts.items()}

    @property
    def reread(self) -> dict[TableId, int]:
        """Rows read again per table."""
        return {t: c.reread_rows for t, c in self.counts.items()}


@dataclass
class Split:
    """A batch split for its write: the typed changelogs per table and their tally, or,
    for a batch written in one pass, what tells the tally once the write has run."""

    changes: Mapping[TableId, Any]
    tally: Tally
    #: When the batch was counted (for a one-pass batch: when it was written).
    fetched: float
    #: Targets whose rows are read once by the sink, uncounted (``TargetWrite.read_once``).
    uncounted: frozenset[TableId] = frozenset()
    on_read: Callable[[Any], None] | None = None
    #: One pass: the tally from the DataFrames the sink read to their end.
    finish: Callable[[Sequence[Any]], Tally] | None = None
    #: Each table's envelope rows (a batch of several tables), for the targets that mirror
    #: one table (``TargetWrite.envelope``).
    envelope: Mapping[TableId, EnvelopeRows] = field(default_factory=dict)

    def written(self, read_frames: Sequence[Any]) -> None:
        """The sink wrote the batch: a one-pass batch's tally is known now."""
        if self.finish is not None:
            self.tally = self.finish(read_frames)
            self.fetched = time.time()

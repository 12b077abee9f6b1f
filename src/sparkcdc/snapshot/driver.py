"""The engine-neutral CDC source: a thin composition of the framework's pieces over a dialect.

A stream offset (snapshot/offset.py) holds the log position and one small progress entry
per table, never chunk lists. A batch from offset A to offset B emits (1) the log changes in
(A.log, B.log] for keys that A had already emitted, and (2) the chunks between A's and B's
cursors, read in parallel and normalised to B.log (docs/design.md). The pieces, after
flink-cdc-base's source (which only builds its enumerator, split assigners and readers),
shaped for Spark's calls:

* :class:`~sparkcdc.snapshot.catalog.TableCatalog`: the captured tables and how the set
  changes (discovery, reconciliation with a checkpoint, created and dropped tables);
* :class:`~sparkcdc.snapshot.planner.BatchPlanner`: ``latestOffset``'s named steps
  (signals, a lost log, the log range, schema changes, chunks);
* :class:`~sparkcdc.snapshot.partitions.PartitionPlanner`: ``partitions``;
* :class:`~sparkcdc.snapshot.reads.PartitionReader`: ``read`` on executors.

Everything that depends on the database goes through the
:class:`~sparkcdc.snapshot.dialect.Dialect` and its abilities (snapshot/abilities.py); the
Spark binding (spark/source.py) only forwards Spark's calls here, with offsets as JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Generic

import pyarrow as pa

from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import envelope_schema
from sparkcdc.snapshot.abilities import ReleasesLog, SnapshotsAtPosition
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.chunk_plans import ChunkPlans
from sparkcdc.snapshot.dialect import Dialect, P, T
from sparkcdc.snapshot.lost_log import LostLog
from sparkcdc.snapshot.offset import LogAt, SourceOffset
from sparkcdc.snapshot.origins import offset_json, position_of
from sparkcdc.snapshot.partitions import PartitionPlanner, PartitionSpec
from sparkcdc.snapshot.planner import BatchPlanner
from sparkcdc.snapshot.progress import TableProgress
from sparkcdc.snapshot.reads import PartitionReader
from sparkcdc.snapshot.signal import SignalChannel
from sparkcdc.snapshot.signalling import Signals

Offset = dict[str, Any]


class IncrementalSource(Generic[P, T]):
    """Captured tables of one dialect: one table is a typed changelog, several share the
    envelope schema."""

    def __init__(self, dialect: Dialect[P, T]) -> None:
        self.dialect = dialect
        self.settings = dialect.settings
        self.catalog = TableCatalog(dialect)
        self.chunks = ChunkPlans(self.catalog)
        self.signals = Signals(self.catalog, self.chunks.refresh)
        lost_log = LostLog(self.catalog, self.signals, self.chunks.refresh)
        self.planner = BatchPlanner(self.catalog, self.chunks, self.signals, lost_log)
        self.partition_planner = PartitionPlanner(self.catalog, self.chunks, lost_log)
        self.reader = PartitionReader(dialect, self.catalog.orders)

    # -- what the stream captures ---------------------------------------------------------
    @property
    def tables(self) -> dict[TableId, T]:
        """Captured tables, after validating the server (up front, with the fix in errors)."""
        return self.catalog.tables

    @property
    def envelope(self) -> bool:
        return self.catalog.envelope

    def table_schema(self, table: T) -> pa.Schema:
        """The typed changelog schema of one table (its columns, change and metadata)."""
        return self.reader.table_schema(table)

    def arrow_schema(self) -> pa.Schema:
        if self.envelope:
            return envelope_schema(self.settings.metadata)
        return self.table_schema(next(iter(self.tables.values())))

    @property
    def channels(self) -> list[SignalChannel]:
        """Where signals come from (the Spark binding adds a Kafka topic's)."""
        return self.signals.channels

    @property
    def head(self) -> P | None:
        """The log's end when the last batch was planned."""
        return self.planner.head

    def current_position(self) -> P:
        return self.dialect.current_position()

    # -- the driver's calls ------------------------------------------------------------------
    def initial_offset(self) -> Offset:
        mode = self.settings.startup_mode
        catalog = self.catalog
        if mode in ("initial", "snapshot"):
            position = catalog.columns_at_position()
            progress = {t: catalog.shaped(TableProgress(), t) for t in catalog.tables}
            return self._json(SourceOffset(position, progress, mode == "snapshot"))
        done = {t: catalog.shaped(TableProgress.finished(), t) for t in catalog.tables}
        return self._json(SourceOffset(self.dialect.startup_position(mode), done))

    def latest_offset(self, start: Offset, max_rows: int | None, cap: P | None = None) -> Offset:
        """The end of the next batch (``BatchPlanner.plan``), planned again from ``start``
        when the server drops the connection mid-way (``connect.max-retries``, the
        dialect's policy): a restart right after the connection's health check fails a
        query, not the stream. Retries spent, it stops with a SourceUnavailableError that
        says what to do. Planning only reads the database and starts from ``start``: doing
        it again is safe.

        While the ``pause.file`` exists it plans nothing (``start`` again: Spark starts no
        batch), so a stop can wait for the query to be idle instead of interrupting a
        batch's planning, which Spark has no call for."""
        pause = self.settings.pause_file
        if pause is not None and Path(pause).exists():
            return start
        offset: Offset = self.dialect.retries.run(
            "planning the next batch",
            lambda: self._json(self.planner.plan(start, max_rows, cap)),
            final=True,
        )
        return offset

    def partitions(self, start: Offset, end: Offset) -> list[PartitionSpec]:
        first, last = self.parse_offset(start), self.parse_offset(end)
        return self.partition_planner.partitions(first, last)

    def snapshot_partitions(self) -> list[PartitionSpec]:
        """All chunks of every table, normalised to the log position now (batch reads), or
        to the dialect's fixed snapshot target (an earlier position, still in the log)."""
        progress = {t: TableProgress() for t in self.tables}  # validates the server first
        dialect = self.dialect
        target = dialect.snapshot_target() if isinstance(dialect, SnapshotsAtPosition) else None
        position = target or self.current_position()
        start = self._json(SourceOffset(position, progress))
        bounded = self._json(SourceOffset(position, progress, bounded=True))
        return self.partitions(start, self.latest_offset(bounded, None))

    def commit(self, end: Offset) -> None:
        """Spark committed the batches up to ``end``: the dialect may release log it keeps."""
        if isinstance(self.dialect, ReleasesLog):
            self.dialect.committed(position_of(self.dialect, LogAt.of(end)))

    def parse_offset(self, data: Offset) -> SourceOffset[P]:
        """An offset's typed form, for the tables captured now (``TableCatalog.parse``)."""
        return self.catalog.parse(data)

    def close(self) -> None:
        self.dialect.close()
        self.chunks.clear()

    # -- executors -----------------------------------------------------------------------
    def read(self, spec: PartitionSpec) -> Iterator[pa.RecordBatch]:
        return self.reader.read(spec)

    def __getstate__(self) -> dict[str, Any]:
        # travels to executors: connections and caches stay behind
        tables, envelope = self.catalog.shipped()
        return {"dialect": self.dialect, "_tables": tables, "_envelope": envelope}

    def __setstate__(self, state: dict[str, Any]) -> None:
        IncrementalSource.__init__(self, state["dialect"])
        self.catalog.restore(state["_tables"], state.get("_envelope"))

    def _json(self, offset: SourceOffset[P]) -> Offset:
        return offset_json(self.dialect, offset)

"""A planned batch cut into Spark partitions (``partitions(A, B)``, on the driver).

One or more log partitions read the changes in ``(A.log, B.log]`` of the tables A had
started (the dialect cuts the range for parallel decoding); chunk partitions read the
chunks between A's and B's cursors, several per partition (``rows-per-partition``). The
last, partial group of each table's chunks is packed with other tables' into partitions of
the same size (:class:`SmallReads`): 1000 small tables would otherwise be 1000 Spark
tasks, each costing more than its read. A partition carries everything its read needs
(tables, bounds, positions, the server they belong to): it is pickled to an executor.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import LimitedReaders
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.chunk_plans import ChunkPlans
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.dialect import P, T
from sparkcdc.snapshot.lost_log import LostLog
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.origins import server_of
from sparkcdc.snapshot.progress import TableProgress
from sparkcdc.snapshot.rereads import rereads


@dataclass(frozen=True)
class ChunkRead(Generic[P, T]):
    """A partition of snapshot work: some chunks of one table, normalised to ``target``."""

    table: T
    chunks: tuple[Chunk, ...]
    target: P
    reader: int
    envelope: bool
    #: A re-read on demand (a signal): rows are upserts (``update_postimage`` without a
    #: pre-image), as the consumer may hold their keys already.
    again: bool = False
    #: The server the batch was planned on (snapshot/origins.py): ``target`` is a
    #: position of its log, so the executor must reach it too.
    origin: str | None = None


@dataclass(frozen=True)
class LogRead(Generic[P, T]):
    """A partition of log work: changes in ``(start, end]`` for keys emitted as of start."""

    start: P
    end: P
    tables: Mapping[TableId, T]
    progress: Mapping[TableId, TableProgress]
    reader: int
    envelope: bool
    #: The server whose log ``start`` and ``end`` are positions of (see ``ChunkRead``).
    origin: str | None = None


@dataclass(frozen=True)
class SmallReads(Generic[P, T]):
    """One partition for the chunks of several tables, read one after the other: many small
    tables would otherwise pay a Spark task each (~35 ms), more than reading them."""

    parts: tuple[ChunkRead[P, T], ...]
    reader: int


PartitionSpec = ChunkRead[Any, Any] | SmallReads[Any, Any] | LogRead[Any, Any]
#: A table's chunks for one batch: the table (as of the batch's start), chunks, re-read.
_TableChunks = tuple[Any, Sequence[Chunk], bool]


class PartitionPlanner(Generic[P, T]):
    """Cuts the batch between two offsets into partition specs."""

    def __init__(
        self, catalog: TableCatalog[P, T], chunks: ChunkPlans[P, T], lost_log: LostLog[P, T]
    ) -> None:
        self.catalog = catalog
        self.dialect = catalog.dialect
        self.settings = catalog.settings
        self.chunks = chunks
        self.lost_log = lost_log

    def partitions(self, first: SourceOffset[P], last: SourceOffset[P]) -> list[PartitionSpec]:
        """The partitions of the batch from ``first`` to ``last``: none for a schema
        change's own batch (its range holds nothing else) or a replayed batch whose log is
        lost while a recovery waits (snapshot/lost_log.py)."""
        catalog = self.catalog
        # a table dropped at the start has nothing to read; one of its name discovered since
        # is a new table, created again (as ``TableCatalog.forget_dropped`` takes it)
        before = {
            t: catalog.shaped(TableProgress(), t) if p.dropped else p
            for t, p in first.tables.items()
            if not p.dropped or t in catalog.tables
        }
        shapes = catalog.tables_at(first)
        if any(p.schema != before[t].schema for t, p in last.tables.items() if t in before):
            return []
        if not self.lost_log.replay_readable(first, last, before):
            return []
        # the positions are of the server connected now (carried over from another one
        # when the checkpoint was made elsewhere)
        origin = server_of(self.dialect)
        specs = self._log_reads(first.log, last.log, before, shapes, origin)
        reads = self._table_chunks(before, last.tables, shapes)
        specs += self._chunk_reads(reads, last.log, len(specs), origin)
        if isinstance(self.dialect, LimitedReaders):
            self.dialect.check_readers(len(specs))
        return specs

    def _log_reads(
        self,
        start: P,
        end: P,
        before: Mapping[TableId, TableProgress],
        shapes: Mapping[TableId, T],
        origin: str | None,
    ) -> list[PartitionSpec]:
        """The log partitions: the changes in ``(start, end]`` of the tables whose rows
        the stream had begun to emit, in the pieces the dialect cuts the range into."""
        if not end > start or not any(p.started or p.done for p in before.values()):
            return []
        live = {t: shapes[t] for t, p in before.items() if p.started or p.done}
        envelope = self.catalog.envelope
        bounds = self.dialect.split_log(start, end)
        return [
            LogRead(lo, hi, live, before, reader, envelope, origin)
            for reader, (lo, hi) in enumerate(itertools.pairwise(bounds))
        ]

    def _table_chunks(
        self,
        before: Mapping[TableId, TableProgress],
        after: Mapping[TableId, TableProgress],
        shapes: Mapping[TableId, T],
    ) -> list[_TableChunks]:
        """Each table's chunks between the two offsets, with whether they are a re-read
        (on demand, or after a schema change: upserts)."""
        reads: list[_TableChunks] = []
        for table_id in sorted(after):
            if _reads(before.get(table_id, TableProgress())) == _reads(after[table_id]):
                continue
            chunks = self.chunks.read_between(table_id, before[table_id], after[table_id])
            again = rereads(before[table_id], after[table_id])
            reads.append((shapes[table_id], chunks, again))
        return reads

    def _chunk_reads(
        self, reads: list[_TableChunks], target: P, first: int, origin: str | None
    ) -> list[PartitionSpec]:
        """Chunk partitions of up to ``rows-per-partition`` rows (wider where the database
        tells only so many readers apart), the tables' partial last groups packed."""
        per_partition = max(1, self.settings.rows_per_partition // self.settings.chunk_size)
        limit = self.dialect.max_readers() if isinstance(self.dialect, LimitedReaders) else None
        if limit is not None:
            counts = [len(chunks) for _, chunks, _ in reads]
            per_partition = widened(per_partition, counts, max(1, limit - first))
        envelope = self.catalog.envelope
        specs: list[PartitionSpec] = []
        rests: list[tuple[Any, tuple[Chunk, ...], bool]] = []
        for table, chunks, again in reads:
            for i in range(0, len(chunks), per_partition):
                part = tuple(chunks[i : i + per_partition])
                if len(part) < per_partition:  # shares a partition with other tables' rests
                    rests.append((table, part, again))
                    continue
                reader = first + len(specs)
                specs.append(ChunkRead(table, part, target, reader, envelope, again, origin))
        return specs + self._packed(rests, per_partition, target, first + len(specs), origin)

    def _packed(
        self,
        rests: list[tuple[T, tuple[Chunk, ...], bool]],
        per_partition: int,
        target: P,
        first: int,
        origin: str | None,
    ) -> list[PartitionSpec]:
        """Partitions of up to ``per_partition`` chunks from the tables' last, partial
        groups, in order: a table alone keeps a partition of its own."""
        bins: list[list[tuple[T, tuple[Chunk, ...], bool]]] = []
        used = 0
        for rest in rests:
            if not bins or used + len(rest[1]) > per_partition:
                bins.append([])
                used = 0
            bins[-1].append(rest)
            used += len(rest[1])
        envelope = self.catalog.envelope
        specs: list[PartitionSpec] = []
        for number, group in enumerate(bins, first):
            reads = tuple(
                ChunkRead(t, c, target, number, envelope, again, origin) for t, c, again in group
            )
            specs.append(reads[0] if len(reads) == 1 else SmallReads(reads, number))
        return specs


def _reads(progress: TableProgress) -> TableProgress:
    """What decides a batch's chunk reads (not the chunk span bookkeeping)."""
    return dataclasses.replace(progress, chunks=None)


def chunk_partitions(counts: Sequence[int], per_partition: int) -> int:
    """How many chunk partitions :meth:`PartitionPlanner.partitions` makes of tables with
    ``counts`` chunks: each table's full groups of ``per_partition``, then its partial
    last group packed with the next tables' (in order, a new partition when one is full)."""
    full = sum(n // per_partition for n in counts)
    bins = used = 0
    for rest in (n % per_partition for n in counts):
        if not rest:
            continue
        if not bins or used + rest > per_partition:
            bins, used = bins + 1, 0
        used += rest
    return full + bins


def widened(per_partition: int, counts: Sequence[int], readers: int) -> int:
    """Chunks per partition, at least ``per_partition``, such that the chunk partitions
    are at most ``readers``: a database that must tell concurrent readers apart (MySQL's
    server ids) gets bigger partitions rather than two readers under one id, which
    would knock each other off the server."""
    total = sum(counts)
    if total == 0:
        return per_partition
    wider = max(per_partition, -(-total // readers))
    while chunk_partitions(counts, wider) > readers:
        wider += max(1, wider // 4)
    return wider

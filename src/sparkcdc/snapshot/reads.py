"""Reading a partition on an executor (``read(partition)``): rows as Arrow batches.

A chunk partition reads its chunks through the dialect, normalised to the batch's end,
and builds snapshot rows; a log partition emits each change of a key the stream had
emitted at the batch's start (snapshot/emit.py), whole rows events at a time for tables
whose snapshot is done. The reader holds no state but a key order per table: a pickled
copy of the source in each executor reads whatever partitions it is given.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterator
from typing import Generic

import pyarrow as pa

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.errors import ChunkCrossedChange
from sparkcdc.core.rows import ChangeBlock, Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import (
    ChangelogBatchBuilder,
    Emitted,
    EnvelopeBatchBuilder,
    changelog_schema,
    envelope_schema,
)
from sparkcdc.snapshot.dialect import Dialect, P, T
from sparkcdc.snapshot.emit import changes_to_emit
from sparkcdc.snapshot.key_orders import KeyOrders
from sparkcdc.snapshot.origins import check_origin
from sparkcdc.snapshot.partitions import ChunkRead, LogRead, PartitionSpec, SmallReads
from sparkcdc.snapshot.progress import TableProgress

log = logging.getLogger(__name__)

#: Fewer, larger Arrow batches from log partitions: Spark pays per batch.
MIN_BATCH_ROWS = 16_384

BatchBuilder = ChangelogBatchBuilder | EnvelopeBatchBuilder


class PartitionReader(Generic[P, T]):
    """Reads partition specs (snapshot/partitions.py) over the dialect."""

    def __init__(self, dialect: Dialect[P, T], orders: KeyOrders[T] | None = None) -> None:
        self.dialect = dialect
        self.settings = dialect.settings
        #: Shared with the driver's planning in the same process (built once per table).
        self.orders = orders if orders is not None else KeyOrders(dialect.key_order)

    def read(self, spec: PartitionSpec) -> Iterator[pa.RecordBatch]:
        first = spec.parts[0] if isinstance(spec, SmallReads) else spec
        check_origin(self.dialect, first.origin)
        if isinstance(spec, ChunkRead):
            yield from self._read_chunks(spec)
        elif isinstance(spec, SmallReads):
            for part in spec.parts:
                yield from self._read_chunks(part)
        else:
            yield from LogBatches(self, spec).batches()

    def table_schema(self, table: T) -> pa.Schema:
        """The typed changelog schema of one table (its columns, change and metadata)."""
        return changelog_schema(self.dialect.arrow_fields(table), self.settings.metadata)

    def builder(self, table: T, envelope: bool) -> BatchBuilder:
        constants = self.dialect.table_metadata(table)
        if envelope:
            return EnvelopeBatchBuilder(
                envelope_schema(self.settings.metadata),
                table.table_id,
                table.column_names,
                [f.type for f in self.dialect.arrow_fields(table)],
                table.key_indexes,
                constants,
            )
        schema = self.table_schema(table)
        return ChangelogBatchBuilder(schema, len(table.column_names), table.table_id, constants)

    def _read_chunks(self, spec: ChunkRead[P, T]) -> Iterator[pa.RecordBatch]:
        """The chunks' rows as of the batch's end. Chunks whose table changed its columns
        between the batch's end and their read emit nothing: the change's own batch has
        their key range read again in the new shape (progress.py, ``ChunkSpan``)."""
        builder = self.builder(spec.table, spec.envelope)
        at = dt.datetime.now(dt.timezone.utc)
        chunks = self.dialect.read_chunks(spec.table, spec.chunks, spec.target, spec.reader)
        kind = ChangeType.UPDATE_POSTIMAGE if spec.again else ChangeType.INSERT
        try:
            for rows in chunks:
                yield builder.snapshot_batch(rows, spec.target.version, at, kind)
        except ChunkCrossedChange as exc:
            log.info(
                "chunks of %s from %r: %s; they are read again after the change",
                spec.table.table_id,
                spec.chunks[0].lo,
                exc,
            )

    def emitted_predicate(self, table: T, progress: TableProgress) -> Callable[[Row], bool]:
        """Whether a row's key had been emitted when the batch started (log events are
        emitted only for those keys)."""
        if progress.done or not progress.started or table.one_chunk:  # no key to compare
            # one chunk (no chunk key): not started before it and done after it, nothing between
            return lambda row: progress.done
        order = self.orders.of(table)
        k = table.chunk_key_index

        def emitted(row: Row) -> bool:
            return order.emitted(row[k], progress)

        return emitted


class LogBatches(Generic[P, T]):
    """One log partition's changes as Arrow batches of at least ``MIN_BATCH_ROWS`` rows
    (Spark pays per batch). This is the executor's hot path after decoding: a table whose
    snapshot is done takes whole rows events (``ChangeBlock``) straight into Arrow columns
    (``block_batch``), with no object or key test per row; for the typed changelog the
    dialect may write those columns itself (``ChangeBlock.sunk``, no tuples). A table
    whose snapshot is running goes change by change through the key predicate."""

    def __init__(self, reader: PartitionReader[P, T], spec: LogRead[P, T]) -> None:
        live = spec.tables
        self.builders = {t: reader.builder(table, spec.envelope) for t, table in live.items()}
        self.emitted = {
            t: reader.emitted_predicate(table, spec.progress[t]) for t, table in live.items()
        }
        self.done = {t for t in live if spec.progress[t].done}
        self.blocks: dict[TableId, list[ChangeBlock]] = {t: [] for t in live}
        self.counts = dict.fromkeys(live, 0)
        self.pending: dict[TableId, list[tuple[RowChange, Emitted]]] = {t: [] for t in live}
        self.size = max(reader.settings.fetch_size, MIN_BATCH_ROWS)
        # done tables of the typed changelog: the dialect may write Arrow buffers, no tuples
        typed = {
            t: b.data_types
            for t, b in self.builders.items()
            if t in self.done and isinstance(b, ChangelogBatchBuilder)
        }
        self.stream = reader.dialect.read_log(live, spec.start, spec.end, spec.reader, typed)

    def batches(self) -> Iterator[pa.RecordBatch]:
        done, blocks, counts, size = self.done, self.blocks, self.counts, self.size
        pending, emitted, builders = self.pending, self.emitted, self.builders
        for block in self.stream:
            table = block.table
            if table in done:
                out = blocks[table]
                if out and (out[-1].sunk is None) != (block.sunk is None):
                    yield self._blocks_batch(table)  # a batch's images: all tuples or all sunk
                out.append(block)
                counts[table] += block.image_count
                if counts[table] >= size:
                    yield self._blocks_batch(table)
                continue
            rows = pending[table]
            predicate = emitted[table]
            for change in block.changes():
                images = changes_to_emit(change, predicate)
                if images:
                    rows.append((change, images))
            if len(rows) >= size:
                yield builders[table].change_batch(rows)
                rows.clear()
        for t in builders:
            if blocks[t]:
                yield self._blocks_batch(t)
            if pending[t]:
                yield builders[t].change_batch(pending[t])

    def _blocks_batch(self, table: TableId) -> pa.RecordBatch:
        out, builder = self.blocks[table], self.builders[table]
        if out[0].sunk is not None:
            assert isinstance(builder, ChangelogBatchBuilder)  # only these get sinks
            built = builder.block_batch(out, self.stream.take(table))
        else:
            built = builder.block_batch(out)
        out.clear()
        self.counts[table] = 0
        return built

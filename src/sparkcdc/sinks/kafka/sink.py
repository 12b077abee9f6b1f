"""Kafka pipeline sink: each captured table's changes as changelog-json, debezium-json or
upsert messages, one topic per table (a pattern) or one topic for all.

Messages are keyed by the primary key JSON and produced in ``_commit_version`` order per
key (see :mod:`sparkcdc.spark.kafka.sink`); a table without a key (changelog formats only)
has null keys, as Debezium writes them, and all its records in partition 0, in order.
Kafka has no idempotent replay of a batch, so this sink is **at-least-once**, unlike the
pipeline's exactly-once sinks: a batch Spark re-runs after a crash is produced again.
Upsert readers are unaffected (a duplicate of a key's last row normalises to nothing);
changelog readers must tolerate duplicates. Schema changes are not applied (messages carry
the row as it is). A truncate (under ``evolve``) is a ``t`` message in debezium-json, as
Debezium writes one; the other formats cannot say it (an upsert topic would need a
tombstone per key it never saw).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from sparkcdc.core.errors import OptionError, SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.sinks.absent_values import without_absent_values
from sparkcdc.sinks.base import Sink, SinkTable
from sparkcdc.sinks.capabilities import SinkCapabilities
from sparkcdc.sinks.kafka.config import KafkaSinkConfig
from sparkcdc.sinks.reduce import KEPT_SET
from sparkcdc.sinks.write_plan import TargetWrite, WritePlan
from sparkcdc.snapshot.schema_change import ColumnMoves

#: What Kafka allows as a topic name.
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


class KafkaSink(Sink):
    """Writes every table's batch to its topic; at-least-once (see the module doc)."""

    def __init__(self, config: KafkaSinkConfig) -> None:
        self.config = config
        self.tables: dict[TableId, SinkTable] = {}

    @property
    def capabilities(self) -> SinkCapabilities:
        from sparkcdc.sinks.kafka import capabilities

        return capabilities(self.config)

    def open(self, spark: Any, tables: Sequence[SinkTable]) -> None:
        keyless = [str(t.source) for t in tables if not t.key]
        if keyless and self.config.format == "upsert":
            raise OptionError(
                f"kafka sink: tables {keyless} have no primary key, and an upsert topic keeps "
                "the last record per key. Write them as 'changelog-json' or 'debezium-json' "
                "(null keys, in order in partition 0), or declare their key with a transform's "
                "'primary-keys'"
            )
        for table in tables:
            topic = self.config.topic_of(table.source)
            if not _TOPIC.fullmatch(topic) or topic in (".", ".."):
                raise OptionError(
                    f"kafka sink: the topic of {table.source} would be '{topic}', which Kafka "
                    "does not allow (1 to 249 characters of a-z, A-Z, 0-9, '.', '_', '-'). "
                    "Name the topics with option 'topic' or a 'topic-pattern' without the "
                    "placeholder that brings those characters"
                )
        self.tables = {t.source: t for t in tables}

    def target_of(self, table: SinkTable) -> str | None:
        """A topic shared by tables is fine for debezium-json, whose records name their
        table; changelog-json and upsert records do not, and in a compacted upsert topic
        one table's keys would overwrite another's."""
        if self.config.format == "debezium-json":
            return None
        return self.config.topic_of(table.source)

    def writer(
        self,
        table: TableId,
        read_version: int | None = None,
        inserts_only: bool = False,
        partition: bool = False,
    ) -> Any:
        """``read_version``: the batch end's version, of the rows its snapshot and re-reads
        emitted (debezium-json writes them as ``r``, Debezium's snapshot reads).
        ``inserts_only``: the batch holds only snapshot rows of the table (distinct keys):
        its records need no shuffle (:func:`~sparkcdc.spark.kafka.sink.kafka_records`).
        ``partition``: a keyless table is written with it, so its records carry Kafka's
        ``partition`` column too (:class:`~sparkcdc.spark.kafka.sink.RecordOptions`)."""
        from sparkcdc.spark.kafka.sink import KafkaChangelogWriter

        return KafkaChangelogWriter(
            self.config.bootstrap_servers,
            self.config.format,
            self.tables[table].key,
            topic=self.config.topic_of(table),
            database=table.database,
            table=table.table,
            kafka_options=self.config.producer,
            read_version=read_version,
            inserts_only=inserts_only,
            partition=partition,
        )

    def evolve(
        self,
        spark: Any,
        table: SinkTable,
        previous: SinkTable | None = None,
        moves: ColumnMoves | None = None,
    ) -> None:
        """Records carry their own shape: later records simply have the new columns."""
        del spark, previous, moves
        if table.source in self.tables:
            self.tables[table.source] = table

    def truncate(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        if self.config.format != "debezium-json":
            raise SparkCdcError(
                f"a {self.config.format} topic cannot say that {table.source} was truncated "
                "(debezium-json writes a 't' message)"
            )
        offset = batch.offset()
        self.writer(table.source).write_truncate(spark, offset.log.to_json() if offset else None)

    def drop_table(self, spark: Any, table: SinkTable, batch: WritePlan) -> None:
        """Nothing to do: a topic is a history, and a dropped table has no more changes
        (Debezium writes no message on data topics for a drop either)."""
        del spark, table, batch

    def write(self, batch: WritePlan) -> None:
        """Every table's records in one Kafka write: one Spark job for the batch, not one
        per table (a batch that changes many tables paid each job's fixed cost in turn).
        The tables' changes are staged to one shape and shuffled together, by table and
        key, so a key's records stay in order; snapshot rows need no shuffle. A small
        batch's inputs are read by as many tasks as there are cores (:func:`fewer_tasks`)
        rather than a task per table and partition of the batch."""
        from sparkcdc.spark.kafka.sink import produce, records_of_staged

        staged: dict[TableId, TargetWrite] = {}
        inserted: dict[TableId, TargetWrite] = {}
        records: list[Any] = []
        stages: list[Any] = []
        writes = list(batch.with_changes())
        keyless = any(not self.tables[w.target].key for w in writes)
        for write in writes:
            # records carry every column: not the marker of merged rows' kept columns
            changes = write.changes.drop(KEPT_SET)
            if batch.unchanged:  # a record is a whole row: absent values cannot be kept
                changes = without_absent_values(changes, write.target, "Kafka sink")
            only_inserts = write.snapshot_only and batch.snapshot_version is not None
            writer = self.writer(write.target, batch.snapshot_version, only_inserts, keyless)
            if only_inserts:
                inserted[write.target] = write
                records.append(writer.records(changes))
            else:
                stages.append(writer.staged(changes, len(staged)))
                staged[write.target] = write
        parts = []
        if staged:
            union = fewer_tasks(balanced_union(stages), _counted(staged.values()))
            parts.append(records_of_staged(union, self.config.format))
        if inserted:
            union = fewer_tasks(balanced_union(records), _counted(inserted.values()))
            parts.append(union)
        if parts:
            produce(balanced_union(parts), self.config.bootstrap_servers, self.config.producer)


def _counted(writes: Iterable[TargetWrite]) -> int:
    """The changelog rows of ``writes``, or -1 if any was not counted."""
    rows = [w.rows for w in writes]
    return -1 if any(r is None for r in rows) else sum(r for r in rows if r is not None)


#: Rows a task of a batch's Kafka write makes records of, at most, when the batch is read
#: by fewer tasks than it has partitions (:func:`fewer_tasks`).
ROWS_PER_TASK = 50_000


def fewer_tasks(frame: Any, rows: int) -> Any:
    """``frame``, a union of tables' rows of one batch, read by as many tasks as the
    cluster has cores, or one per :data:`ROWS_PER_TASK` rows if that is more. A union has
    a partition per table and partition of the batch: 20 tables with a few changes each
    were 40 tasks on 2 cores, each a few milliseconds of work and tens of scheduling.
    ``rows`` < 0: not counted, the union is left as it is. The tasks share the union's
    partitions by number, not by size: one large table may be read by fewer tasks than
    before, never by fewer than ``rows`` / ``ROWS_PER_TASK`` overall."""
    if rows < 0:
        return frame
    cores = frame.sparkSession.sparkContext.defaultParallelism
    return frame.coalesce(max(cores, -(-rows // ROWS_PER_TASK)))


def balanced_union(frames: Sequence[Any]) -> Any:
    """The union of ``frames`` (same columns), as a tree of depth log2(len) rather than a
    chain, which Spark's analysis would walk recursively once per frame."""
    if len(frames) == 1:
        return frames[0]
    half = len(frames) // 2
    return balanced_union(frames[:half]).unionByName(balanced_union(frames[half:]))

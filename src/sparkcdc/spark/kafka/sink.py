"""Writing a sparkcdc changelog DataFrame to Kafka as changelog-json, debezium-json or
upsert messages (docs/kafka.md).

Ordering: every batch is shuffled by the Kafka key (the primary key JSON) and sorted by
``_commit_version`` within each Spark partition, so one key's messages are sent by one
task, in order, to one Kafka partition (the producer hashes the key; idempotent producers
keep the order across retries). Streaming DataFrames go through ``foreachBatch``, because
sorts and windows need a static DataFrame. Delivery is at-least-once.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from sparkcdc.spark.kafka.codec import (
    ROW_KINDS,
    WRITE_OPTIONS,
    data_columns,
    row_struct,
    to_row_json,
)

FORMATS = ("changelog-json", "debezium-json", "upsert")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def topic_column(df: Any, topic: str | None, topic_pattern: str | None) -> Any:
    """The Kafka topic per row: ``topic``, or ``topic_pattern`` with ``{column}``
    placeholders replaced by that column's value (``cdc.{database_name}.{table_name}``)."""
    from pyspark.sql import functions as F

    if (topic is None) == (topic_pattern is None):
        raise ValueError("give exactly one of topic and topic_pattern")
    if topic is not None:
        return F.lit(topic)
    assert topic_pattern is not None
    parts: list[Any] = []
    last = 0
    for match in _PLACEHOLDER.finditer(topic_pattern):
        if match.group(1) not in df.columns:
            raise ValueError(
                f"topic_pattern {topic_pattern!r} names column {match.group(1)!r}, which the "
                f"DataFrame lacks (columns: {df.columns}); add it, e.g. with metadata.list"
            )
        parts += [F.lit(topic_pattern[last : match.start()]), F.col(match.group(1))]
        last = match.end()
    parts.append(F.lit(topic_pattern[last:]))
    return F.concat(*parts)


def _rank(change_type: Any) -> Any:
    """Within one commit version: images that remove a key's row (0) before images that
    set it (1), as an update's pre-image precedes its post-image."""
    from pyspark.sql import functions as F

    return F.when(change_type.isin("insert", "update_postimage"), 1).otherwise(0)


def kafka_records(
    df: Any,
    format: str,
    key: Sequence[str],
    *,
    topic: str | None = None,
    topic_pattern: str | None = None,
    database: str | None = None,
    table: str | None = None,
    read_version: int | None = None,
) -> Any:
    """A static changelog DataFrame as Kafka records: ``topic``, ``key``, ``value``
    (strings; ``value`` null for a tombstone), partitioned by key and sorted by
    ``_commit_version`` within each partition. ``database``/``table`` fill debezium's
    ``source`` when the DataFrame has no ``database_name``/``table_name`` columns.
    ``read_version``: the ``_commit_version`` of the rows a snapshot or re-read emitted
    (a pipeline batch's end; no log change has it), which debezium-json writes as ``r``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    if format not in FORMATS:
        raise ValueError(f"unknown Kafka format {format!r}; valid: {', '.join(FORMATS)}")
    if not key:
        raise ValueError("key: the primary key columns are needed to partition by key")
    fields = {f.name: f for f in df.schema.fields}
    schema = StructType([fields[n] for n in data_columns(df)])
    data = row_struct(schema)
    ct = F.col(CHANGE_TYPE)
    staged = df.select(
        F.col("*"),
        to_row_json(row_struct(schema, key)).alias("_k"),
        topic_column(df, topic, topic_pattern).alias("_topic"),
        _rank(ct).alias("_rank"),
    )
    order = ["_k", COMMIT_VERSION, "_rank"]
    if format == "changelog-json":
        op = F.create_map(*[F.lit(x) for kv in ROW_KINDS.items() for x in kv])[ct]
        value = F.to_json(F.struct(data.alias("data"), op.alias("op")), WRITE_OPTIONS)
        out = staged.select("_topic", "_k", value.alias("_v"), *order)
        return _records(out.repartition("_k").sortWithinPartitions(*order))
    # The other formats pair an update's pre-image with the post-image that follows it
    # for the same key and version; a pre-image without one moved the key away.
    window = Window.partitionBy("_k").orderBy(COMMIT_VERSION, "_rank")
    nxt_ct, nxt_version = F.lead(ct).over(window), F.lead(COMMIT_VERSION).over(window)
    prev_ct, prev_version = F.lag(ct).over(window), F.lag(COMMIT_VERSION).over(window)
    paired_pre = F.coalesce(  # lead/lag are null at a key's edges: not paired
        (ct == "update_preimage")
        & (nxt_ct == "update_postimage")
        & (nxt_version == F.col(COMMIT_VERSION)),
        F.lit(False),
    )
    paired_post = F.coalesce(
        (ct == "update_postimage")
        & (prev_ct == "update_preimage")
        & (prev_version == F.col(COMMIT_VERSION)),
        F.lit(False),
    )
    sets = ct.isin("insert", "update_postimage")
    if format == "upsert":
        value = F.when(sets, to_row_json(data))  # else: a tombstone
        out = staged.select("_topic", "_k", value.alias("_v"), *order, paired_pre.alias("_drop"))
        return _records(out.where(~F.col("_drop")).sortWithinPartitions(*order))
    # debezium-json: the paired pre-image becomes the message, its post-image is dropped
    after = F.when(paired_pre, F.lead(data).over(window)).when(sets, data)
    before = F.when(~sets, data)
    read = _is_snapshot_row(df, ct, read_version)
    op = F.when(paired_pre, "u").when(~sets, "d").when(read, "r").otherwise("c")
    value = F.to_json(
        F.struct(
            before.alias("before"),
            after.alias("after"),
            op.alias("op"),
            _source(df, database, table).alias("source"),
            F.unix_millis(F.col(COMMIT_TIMESTAMP)).alias("ts_ms"),
        ),
        WRITE_OPTIONS,
    )
    out = staged.select("_topic", "_k", value.alias("_v"), *order, paired_post.alias("_drop"))
    return _records(out.where(~F.col("_drop")).sortWithinPartitions(*order))


def _is_snapshot_row(df: Any, ct: Any, read_version: int | None = None) -> Any:
    """Snapshot rows are inserts (and a re-read's upserts) at ``read_version`` when given,
    else without a binlog position (when the column is there)."""
    from pyspark.sql import functions as F

    if read_version is not None:
        return ct.isin("insert", "update_postimage") & (F.col(COMMIT_VERSION) == read_version)
    if "binlog_file" not in df.columns:
        return F.lit(False)
    return ct.isin("insert", "update_postimage") & F.col("binlog_file").isNull()


def _source(df: Any, database: str | None, table: str | None) -> Any:
    from pyspark.sql import functions as F

    def column(name: str, fallback: Any) -> Any:
        return F.col(name) if name in df.columns else F.lit(fallback)

    return F.struct(
        column("database_name", database).cast("string").alias("db"),
        column("table_name", table).cast("string").alias("table"),
        column("binlog_file", None).cast("string").alias("file"),
        column("binlog_pos", None).cast("long").alias("pos"),
        column("binlog_gtid", None).cast("string").alias("gtid"),
    )


def _records(out: Any) -> Any:
    from pyspark.sql import functions as F

    return out.select(
        F.col("_topic").alias("topic"), F.col("_k").alias("key"), F.col("_v").alias("value")
    )


def produce(records: Any, bootstrap_servers: str, kafka_options: Mapping[str, str]) -> None:
    """Write a DataFrame of ``topic``, ``key``, ``value`` to the brokers (``kafka_options``:
    producer settings without the ``kafka.`` prefix)."""
    writer = records.write.format("kafka").option("kafka.bootstrap.servers", bootstrap_servers)
    for name, value in kafka_options.items():
        writer = writer.option(f"kafka.{name}", value)
    writer.save()


@dataclass
class KafkaChangelogWriter:
    """Writes static changelog DataFrames to Kafka; also a ``foreachBatch`` function.

    ``kafka_options`` are producer settings without the ``kafka.`` prefix (e.g.
    ``{"acks": "all"}``).
    """

    bootstrap_servers: str
    format: str
    key: Sequence[str]
    topic: str | None = None
    topic_pattern: str | None = None
    database: str | None = None
    table: str | None = None
    kafka_options: Mapping[str, str] = field(default_factory=dict)
    #: See :func:`kafka_records`.
    read_version: int | None = None

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown Kafka format {self.format!r}; valid: {', '.join(FORMATS)}")
        if (self.topic is None) == (self.topic_pattern is None):
            raise ValueError("give exactly one of topic and topic_pattern")

    def records(self, df: Any) -> Any:
        return kafka_records(
            df,
            self.format,
            self.key,
            topic=self.topic,
            topic_pattern=self.topic_pattern,
            database=self.database,
            table=self.table,
            read_version=self.read_version,
        )

    def write(self, df: Any) -> None:
        self.produce(self.records(df))

    def produce(self, records: Any) -> None:
        produce(records, self.bootstrap_servers, self.kafka_options)

    def write_truncate(self, spark: Any, position: dict[str, Any] | None) -> None:
        """debezium-json only: one ``t`` message (no key, no images), as Debezium writes
        for a truncate; ``source`` names the table and the log position after it,
        ``ts_ms`` is when it was written (the statement's own time is not kept)."""
        if self.format != "debezium-json" or self.topic is None:
            raise ValueError("a truncate is written as a debezium-json message to one topic")
        log = position or {}
        value = {
            "before": None,
            "after": None,
            "op": "t",
            "source": {
                "db": self.database,
                "table": self.table,
                "file": log.get("file"),
                "pos": log.get("pos"),
                "gtid": log.get("gtid"),
            },
            "ts_ms": int(time.time() * 1000),
        }
        records = spark.createDataFrame(
            [(self.topic, None, json.dumps(value))], "topic string, key string, value string"
        )
        self.produce(records)

    def __call__(self, batch: Any, batch_id: int) -> None:
        self.write(batch)


def write_kafka(
    df: Any,
    bootstrap_servers: str,
    *,
    format: str,
    key: Sequence[str],
    topic: str | None = None,
    topic_pattern: str | None = None,
    database: str | None = None,
    table: str | None = None,
    kafka_options: Mapping[str, str] | None = None,
    checkpoint_location: str | None = None,
) -> Any:
    """A ``DataStreamWriter`` that writes the streaming changelog ``df`` to Kafka; call
    ``.start()`` (add a trigger first if wanted). At-least-once: a batch re-run after a
    failure is produced again."""
    writer = KafkaChangelogWriter(
        bootstrap_servers,
        format,
        key,
        topic,
        topic_pattern,
        database,
        table,
        dict(kafka_options or {}),
    )
    stream = df.writeStream.foreachBatch(writer)
    if checkpoint_location is not None:
        stream = stream.option("checkpointLocation", checkpoint_location)
    return stream

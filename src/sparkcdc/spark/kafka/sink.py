"""Writing a sparkcdc changelog DataFrame to Kafka as changelog-json, debezium-json or
upsert messages (docs/kafka.md).

Ordering: every batch is shuffled by the Kafka key (the primary key JSON) and sorted by
``_commit_version`` within each Spark partition, so one key's messages are sent by one
task, in order, to one Kafka partition (the producer hashes the key; idempotent producers
keep the order across retries); a batch of inserts of distinct keys only
(``inserts_only``) has no order to keep and is not shuffled. Streaming DataFrames go
through ``foreachBatch``, because sorts and windows need a static DataFrame. Delivery is
at-least-once.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.spark.kafka.codec import ROW_KINDS, data_columns, row_struct_sql, to_row_json_sql

FORMATS = ("changelog-json", "debezium-json", "upsert")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def topic_sql(df: Any, topic: str | None, topic_pattern: str | None) -> str:
    """The Kafka topic per row, as Spark SQL text: ``topic``, or ``topic_pattern`` with
    ``{column}`` placeholders replaced by that column's value
    (``cdc.{database_name}.{table_name}``)."""
    if (topic is None) == (topic_pattern is None):
        raise ValueError("give exactly one of topic and topic_pattern")
    if topic is not None:
        return sql_string(topic)
    assert topic_pattern is not None
    parts: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(topic_pattern):
        if match.group(1) not in df.columns:
            raise ValueError(
                f"topic_pattern {topic_pattern!r} names column {match.group(1)!r}, which the "
                f"DataFrame lacks (columns: {df.columns}); add it, e.g. with metadata.list"
            )
        parts += [sql_string(topic_pattern[last : match.start()]), quoted(match.group(1))]
        last = match.end()
    parts.append(sql_string(topic_pattern[last:]))
    return f"concat({', '.join(parts)})"


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
    inserts_only: bool = False,
) -> Any:
    """A static changelog DataFrame as Kafka records: ``topic``, ``key``, ``value``
    (strings; ``value`` null for a tombstone), partitioned by key and sorted by
    ``_commit_version`` within each partition. ``database``/``table`` fill debezium's
    ``source`` when the DataFrame has no ``database_name``/``table_name`` columns.
    ``read_version``: the ``_commit_version`` of the rows a snapshot or re-read emitted
    (a pipeline batch's end; no log change has it), which debezium-json writes as ``r``.
    ``inserts_only``: the caller knows every row is an insert of a key no other row has
    (a batch of snapshot rows): there are no images to pair and no order to keep, so the
    records are made where the rows are, without a shuffle.

    Built as Spark SQL text (``selectExpr``): each ``pyspark.sql.functions`` call is
    several Py4J round trips, and a pipeline builds these records for every table a
    batch changes (README, "Many tables")."""
    from pyspark.sql.types import StructType

    if format not in FORMATS:
        raise ValueError(f"unknown Kafka format {format!r}; valid: {', '.join(FORMATS)}")
    if not key:
        raise ValueError("key: the primary key columns are needed to partition by key")
    fields = {f.name: f for f in df.schema.fields}
    schema = StructType([fields[n] for n in data_columns(df)])
    data = row_struct_sql(schema)
    ct, version = quoted(CHANGE_TYPE), quoted(COMMIT_VERSION)
    sets = f"{ct} IN ('insert', 'update_postimage')"
    staged = df.selectExpr(
        "*",
        f"{to_row_json_sql(row_struct_sql(schema, key))} AS _k",
        f"{topic_sql(df, topic, topic_pattern)} AS _topic",
        # within one commit version: images that remove a key's row (0) before images
        # that set it (1), as an update's pre-image precedes its post-image
        f"CASE WHEN {sets} THEN 1 ELSE 0 END AS _rank",
    )
    order = ["_k", COMMIT_VERSION, "_rank"]
    if inserts_only:
        read = _is_snapshot_row_sql(df, sets, read_version)
        return _records(_inserts(staged, format, data, read, df, database, table))
    if format == "changelog-json":
        kinds = ", ".join(sql_string(x) for kv in ROW_KINDS.items() for x in kv)
        value = to_row_json_sql(f"named_struct('data', {data}, 'op', map({kinds})[{ct}])")
        out = staged.selectExpr("_topic", "_k", f"{value} AS _v", *map(quoted, order))
        return _records(out.repartition("_k").sortWithinPartitions(*order))
    # The other formats pair an update's pre-image with the post-image that follows it
    # for the same key and version; a pre-image without one moved the key away.
    window = f"OVER (PARTITION BY _k ORDER BY {version}, _rank)"
    paired_pre = (  # lead/lag are null at a key's edges: not paired
        f"coalesce({ct} = 'update_preimage' AND lead({ct}) {window} = 'update_postimage' "
        f"AND lead({version}) {window} = {version}, false)"
    )
    paired_post = (
        f"coalesce({ct} = 'update_postimage' AND lag({ct}) {window} = 'update_preimage' "
        f"AND lag({version}) {window} = {version}, false)"
    )
    if format == "upsert":
        value = f"CASE WHEN {sets} THEN {to_row_json_sql(data)} END"  # else: a tombstone
        out = staged.selectExpr(
            "_topic", "_k", f"{value} AS _v", *map(quoted, order), f"{paired_pre} AS _drop"
        )
        return _records(out.where("NOT _drop").sortWithinPartitions(*order))
    # debezium-json: the paired pre-image becomes the message, its post-image is dropped
    after = f"CASE WHEN {paired_pre} THEN lead({data}) {window} WHEN {sets} THEN {data} END"
    before = f"CASE WHEN NOT ({sets}) THEN {data} END"
    read = _is_snapshot_row_sql(df, sets, read_version)
    op = (
        f"CASE WHEN {paired_pre} THEN 'u' WHEN NOT ({sets}) THEN 'd' "
        f"WHEN {read} THEN 'r' ELSE 'c' END"
    )
    message = (
        f"named_struct('before', {before}, 'after', {after}, 'op', {op}, "
        f"'source', {_source_sql(df, database, table)}, "
        f"'ts_ms', unix_millis({quoted(COMMIT_TIMESTAMP)}))"
    )
    out = staged.selectExpr(
        "_topic",
        "_k",
        f"{to_row_json_sql(message)} AS _v",
        *map(quoted, order),
        f"{paired_post} AS _drop",
    )
    return _records(out.where("NOT _drop").sortWithinPartitions(*order))


def _inserts(
    staged: Any,
    format: str,
    data: str,
    read: str,
    df: Any,
    database: str | None,
    table: str | None,
) -> Any:
    """The records of rows that are all inserts of distinct keys, as :func:`kafka_records`
    makes them for inserts: no window, no shuffle, no sort."""
    if format == "changelog-json":
        value = to_row_json_sql(
            f"named_struct('data', {data}, 'op', {sql_string(ROW_KINDS['insert'])})"
        )
    elif format == "upsert":
        value = to_row_json_sql(data)
    else:
        value = to_row_json_sql(
            # a null of any type is written as null
            f"named_struct('before', CAST(NULL AS STRING), 'after', {data}, "
            f"'op', CASE WHEN {read} THEN 'r' ELSE 'c' END, "
            f"'source', {_source_sql(df, database, table)}, "
            f"'ts_ms', unix_millis({quoted(COMMIT_TIMESTAMP)}))"
        )
    return staged.selectExpr("_topic", "_k", f"{value} AS _v")


def _is_snapshot_row_sql(df: Any, sets: str, read_version: int | None = None) -> str:
    """Snapshot rows are inserts (and a re-read's upserts) at ``read_version`` when given,
    else without a binlog position (when the column is there)."""
    if read_version is not None:
        return f"({sets} AND {quoted(COMMIT_VERSION)} = {int(read_version)})"
    if "binlog_file" not in df.columns:
        return "false"
    return f"({sets} AND binlog_file IS NULL)"


def _source_sql(df: Any, database: str | None, table: str | None) -> str:
    """debezium's ``source``: the row's database, table and log position."""

    def column(name: str, fallback: str | None, kind: str) -> str:
        if name in df.columns:
            value = quoted(name)
        else:
            value = "NULL" if fallback is None else sql_string(fallback)
        return f"CAST({value} AS {kind})"

    return (
        f"named_struct('db', {column('database_name', database, 'STRING')}, "
        f"'table', {column('table_name', table, 'STRING')}, "
        f"'file', {column('binlog_file', None, 'STRING')}, "
        f"'pos', {column('binlog_pos', None, 'BIGINT')}, "
        f"'gtid', {column('binlog_gtid', None, 'STRING')})"
    )


def _records(out: Any) -> Any:
    return out.selectExpr("_topic AS topic", "_k AS key", "_v AS value")


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
    #: See :func:`kafka_records`.
    inserts_only: bool = False

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
            inserts_only=self.inserts_only,
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

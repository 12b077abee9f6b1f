"""Writing a sparkcdc changelog DataFrame to Kafka as changelog-json, debezium-json or
upsert messages (docs/kafka.md).

Ordering: every batch is shuffled by the Kafka key (the primary key JSON; with the table,
when tables are written together) and sorted by ``_commit_version`` within each Spark
partition, so one key's messages are sent by one
task, in order, to one Kafka partition (the producer hashes the key; idempotent producers
keep the order across retries); a batch of inserts of distinct keys only
(``inserts_only``) has no order to keep and is not shuffled. A table without a key
(changelog formats only) has null keys, as Debezium writes them; its records are shuffled
by table, so one task sends them in version order, and all go to partition 0 (a null key
leaves the partition to the producer, which would spread them and lose their order: a
multiset's replay needs a row's insert before its delete). Streaming DataFrames go
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


@dataclass(frozen=True)
class RecordOptions:
    """What a table's records need besides its rows: their topic (``topic``, or
    ``topic_pattern`` with ``{column}`` placeholders), debezium's ``source`` database and
    table where the rows lack ``database_name``/``table_name``, the ``read_version``
    of snapshot rows (see :func:`kafka_records`), and whether they carry Kafka's
    ``partition`` column (``partition``, see :func:`_carries_partition`)."""

    topic: str | None = None
    topic_pattern: str | None = None
    database: str | None = None
    table: str | None = None
    read_version: int | None = None
    #: Records written together with a keyless table's carry the ``partition`` column.
    partition: bool = False


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
    options = RecordOptions(topic, topic_pattern, database, table, read_version)
    if inserts_only:
        return inserted_records(df, format, key, options)
    return records_of_staged(staged_changes(df, format, key, options), format)


def staged_changes(
    df: Any, format: str, key: Sequence[str], options: RecordOptions, index: int = 0
) -> Any:
    """``df``'s changes in the shape every table shares, whatever its columns. Tables
    staged so (``index`` tells them apart) are unioned and made into records by
    :func:`records_of_staged` with one shuffle for all of them: a batch that changes many
    tables paid a shuffle stage (a job, with adaptive execution) per table.

    The columns: ``_topic``; ``_t``, the ``index`` as text (pairs are made within one
    table); ``_k``, the key JSON; ``_ct``, ``_version``: the change type and version;
    ``_rank``, 1 for an image that sets the key's row (insert, post-image) and 0 for one
    that removes it, so that within a version a pre-image comes first; ``_read``, a row a
    snapshot or re-read emitted (debezium-json's ``r``); ``_data``, per format:
    changelog-json's whole message (it needs no other image), upsert's row JSON of an
    image that sets the row (null: a tombstone), debezium-json's row JSON; ``_source`` and
    ``_ts``: debezium-json's ``source`` as JSON text and ``ts_ms``."""
    schema, sets = _checked(df, format, key), _SETS
    data = row_struct_sql(schema)
    none = ["CAST(NULL AS STRING) AS _source", "CAST(NULL AS BIGINT) AS _ts"]
    if format == "changelog-json":
        kinds = ", ".join(sql_string(x) for kv in ROW_KINDS.items() for x in kv)
        message = f"named_struct('data', {data}, 'op', map({kinds})[{quoted(CHANGE_TYPE)}])"
        payload = [f"{to_row_json_sql(message)} AS _data", *none]
    elif format == "upsert":
        payload = [f"CASE WHEN {sets} THEN {to_row_json_sql(data)} END AS _data", *none]
    else:
        payload = [
            f"{to_row_json_sql(data)} AS _data",
            f"{to_row_json_sql(_source_sql(df, options))} AS _source",
            f"unix_millis({quoted(COMMIT_TIMESTAMP)}) AS _ts",
        ]
    return df.selectExpr(
        f"{topic_sql(df, options.topic, options.topic_pattern)} AS _topic",
        # text, not a number: Spark writes an integer literal into the generated code and
        # a string one beside it, so tables of one shape share their compiled code
        f"'{int(index)}' AS _t",
        f"{_key_sql(schema, key)} AS _k",
        *([f"{_partition_sql(key)} AS _p"] if _carries_partition(key, options) else []),
        f"{quoted(CHANGE_TYPE)} AS _ct",
        f"CAST({quoted(COMMIT_VERSION)} AS BIGINT) AS _version",
        f"CASE WHEN {sets} THEN 1 ELSE 0 END AS _rank",
        f"{_is_snapshot_row_sql(df, sets, options.read_version)} AS _read",
        *payload,
    )


def records_of_staged(staged: Any, format: str) -> Any:
    """The records of changes staged by :func:`staged_changes` (of one table or a union of
    many), shuffled once by table and key and sorted by version within each partition,
    so one key's records are made, in order, by one task. The other formats pair an
    update's pre-image with the post-image that follows it for the same key and version;
    a pre-image without one moved the key away. debezium-json's message is put together
    from its parts' JSON text, byte for byte what ``to_json`` writes of the struct
    (tests/integration/test_kafka_codec.py)."""
    order = ["_t", "_k", "_version", "_rank"]
    if format == "changelog-json":
        out = staged.repartition("_t", "_k").sortWithinPartitions(*order)
        return out.selectExpr(*_record(staged), "_data AS value")
    window = "OVER (PARTITION BY _t, _k ORDER BY _version, _rank)"
    paired_pre = (  # lead/lag are null at a key's edges: not paired
        f"coalesce(_ct = 'update_preimage' AND lead(_ct) {window} = 'update_postimage' "
        f"AND lead(_version) {window} = _version, false)"
    )
    if format == "upsert":
        kept = ["_topic", *_partition_of(staged), *order, "_data"]
        out = staged.selectExpr(*kept, f"{paired_pre} AS _drop")
        out = out.where("NOT _drop").sortWithinPartitions(*order)
        return out.selectExpr(*_record(staged), "_data AS value")
    paired_post = (
        f"coalesce(_ct = 'update_postimage' AND lag(_ct) {window} = 'update_preimage' "
        f"AND lag(_version) {window} = _version, false)"
    )
    # the paired pre-image becomes the message, its post-image is dropped
    before = "CASE WHEN _rank = 0 THEN _data END"
    after = f"CASE WHEN {paired_pre} THEN lead(_data) {window} WHEN _rank = 1 THEN _data END"
    op = f"CASE WHEN {paired_pre} THEN 'u' WHEN _rank = 0 THEN 'd' WHEN _read THEN 'r' ELSE 'c' END"
    message = (
        "concat('{\"before\":', coalesce(_before, 'null'), ',\"after\":', "
        "coalesce(_after, 'null'), ',\"op\":\"', _op, '\",\"source\":', _source, "
        "',\"ts_ms\":', coalesce(CAST(_ts AS STRING), 'null'), '}')"
    )
    out = staged.selectExpr(
        "_topic",
        *_partition_of(staged),
        *order,
        "_source",
        "_ts",
        f"{before} AS _before",
        f"{after} AS _after",
        f"{op} AS _op",
        f"{paired_post} AS _drop",
    )
    out = out.where("NOT _drop").sortWithinPartitions(*order)
    return out.selectExpr(*_record(staged), f"{message} AS value")


def inserted_records(df: Any, format: str, key: Sequence[str], options: RecordOptions) -> Any:
    """The records of rows that are all inserts of distinct keys, as :func:`kafka_records`
    makes them for inserts: no window, no shuffle, no sort."""
    schema = _checked(df, format, key)
    data = row_struct_sql(schema)
    if format == "changelog-json":
        value = to_row_json_sql(
            f"named_struct('data', {data}, 'op', {sql_string(ROW_KINDS['insert'])})"
        )
    elif format == "upsert":
        value = to_row_json_sql(data)
    else:
        read = _is_snapshot_row_sql(df, _SETS, options.read_version)
        value = to_row_json_sql(
            # a null of any type is written as null
            f"named_struct('before', CAST(NULL AS STRING), 'after', {data}, "
            f"'op', CASE WHEN {read} THEN 'r' ELSE 'c' END, "
            f"'source', {_source_sql(df, options)}, "
            f"'ts_ms', unix_millis({quoted(COMMIT_TIMESTAMP)}))"
        )
    return df.selectExpr(
        f"{topic_sql(df, options.topic, options.topic_pattern)} AS topic",
        f"{_key_sql(schema, key)} AS key",
        *([f"{_partition_sql(key)} AS partition"] if _carries_partition(key, options) else []),
        f"{value} AS value",
    )


#: An image that sets its key's row (the others remove it), as Spark SQL text.
_SETS = f"{quoted(CHANGE_TYPE)} IN ('insert', 'update_postimage')"


def _partition_of(staged: Any) -> list[str]:
    """``_p`` where the staged changes carry it (:func:`_carries_partition`)."""
    return ["_p"] if "_p" in staged.columns else []


def _record(staged: Any) -> list[str]:
    """A record's columns besides its value, from the staged columns."""
    return ["_topic AS topic", "_k AS key", *(f"{p} AS partition" for p in _partition_of(staged))]


def _carries_partition(key: Sequence[str], options: RecordOptions) -> bool:
    """Whether a table's records carry Kafka's ``partition`` column: a keyless table's
    do (0, see the module doc), and so do those written with one (a union needs one shape;
    null there: the producer's choice by key). Other writes leave the column out: it cost
    ~8 % of a 200-table write into Kafka (benchmarks.many_tables, 2026-12-05)."""
    return options.partition or not key


def _key_sql(schema: Any, key: Sequence[str]) -> str:
    """The Kafka key: the primary key's row JSON, or null for a table without a key."""
    if not key:
        return "CAST(NULL AS STRING)"
    return to_row_json_sql(row_struct_sql(schema, key))


def _partition_sql(key: Sequence[str]) -> str:
    """The Kafka partition: the producer's choice by key, or 0 for a table without a key
    (see the module doc)."""
    return "CAST(NULL AS INT)" if key else "0"


def _checked(df: Any, format: str, key: Sequence[str]) -> Any:
    """The schema of ``df``'s own table columns (row JSON's), once ``format`` and ``key``
    are known to be valid."""
    from pyspark.sql.types import StructType

    if format not in FORMATS:
        raise ValueError(f"unknown Kafka format {format!r}; valid: {', '.join(FORMATS)}")
    if not key and format == "upsert":
        raise ValueError("key: an upsert topic needs the primary key columns")
    fields = {f.name: f for f in df.schema.fields}
    return StructType([fields[n] for n in data_columns(df)])


def _is_snapshot_row_sql(df: Any, sets: str, read_version: int | None = None) -> str:
    """Snapshot rows are inserts (and a re-read's upserts) at ``read_version`` when given,
    else without a binlog position (when the column is there)."""
    if read_version is not None:
        return f"({sets} AND {quoted(COMMIT_VERSION)} = {int(read_version)})"
    if "binlog_file" not in df.columns:
        return "false"
    return f"({sets} AND binlog_file IS NULL)"


def _source_sql(df: Any, options: RecordOptions) -> str:
    """debezium's ``source``: the row's database, table and log position."""

    def column(name: str, fallback: str | None, kind: str) -> str:
        if name in df.columns:
            value = quoted(name)
        else:
            value = "NULL" if fallback is None else sql_string(fallback)
        return f"CAST({value} AS {kind})"

    return (
        f"named_struct('db', {column('database_name', options.database, 'STRING')}, "
        f"'table', {column('table_name', options.table, 'STRING')}, "
        f"'file', {column('binlog_file', None, 'STRING')}, "
        f"'pos', {column('binlog_pos', None, 'BIGINT')}, "
        f"'gtid', {column('binlog_gtid', None, 'STRING')})"
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
    #: See :func:`kafka_records`.
    inserts_only: bool = False
    #: See :class:`RecordOptions`.
    partition: bool = False

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown Kafka format {self.format!r}; valid: {', '.join(FORMATS)}")
        if (self.topic is None) == (self.topic_pattern is None):
            raise ValueError("give exactly one of topic and topic_pattern")

    @property
    def options(self) -> RecordOptions:
        return RecordOptions(
            self.topic,
            self.topic_pattern,
            self.database,
            self.table,
            self.read_version,
            self.partition,
        )

    def records(self, df: Any) -> Any:
        """``df``'s records, as :func:`kafka_records` makes them."""
        if self.inserts_only:
            return inserted_records(df, self.format, self.key, self.options)
        return records_of_staged(self.staged(df, 0), self.format)

    def staged(self, df: Any, index: int) -> Any:
        """``df``'s changes staged to the shape all tables share (:func:`staged_changes`)."""
        return staged_changes(df, self.format, self.key, self.options, index)

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
        partition = None if self.key else 0  # a keyless table's records: all in partition 0
        records = spark.createDataFrame(
            [(self.topic, None, json.dumps(value), partition)],
            "topic string, key string, value string, partition int",
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

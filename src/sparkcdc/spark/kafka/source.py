"""Changelog DataFrames from Kafka topics: changelog-json, debezium-json and upsert.

All three give the MySQL source's shape: the table's columns, then ``_change_type``
(insert, update_preimage, update_postimage, delete), ``_commit_version`` (``partition <<
44 | offset`` of the message: strictly increasing per key, as one key lives in one
partition) and ``_commit_timestamp``. Upsert topics are normalised into a changelog by a
keep-last-row step on Spark's state store (Flink's ``ChangelogNormalize``), see
:func:`normalize_upsert`. Malformed messages follow a policy (:class:`Malformed`).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.changes import CHANGE_COLUMNS, CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION
from sparkcdc.core.secret import SecretSettings
from sparkcdc.formats.upsert_json import normalize
from sparkcdc.spark.kafka.codec import (
    CORRUPT,
    commit_version,
    parse_json,
    row_struct,
    sub_schema,
    to_row_json,
)
from sparkcdc.spark.kafka.startup import Startup, spark_options

log = logging.getLogger(__name__)

POLICIES = ("fail", "skip", "dead-letter")
#: Name of the observed metric (query progress ``observedMetrics``) counting skipped messages.
MALFORMED_METRIC = "sparkcdc_kafka_malformed"
_KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp")
_ERROR = "_error"


def read_kafka(
    spark: Any,
    bootstrap_servers: str,
    topics: str | Sequence[str],
    *,
    startup: Startup | None = None,
    kafka_options: Mapping[str, str] | None = None,
    client_options: Mapping[str, str] | None = None,
    streaming: bool = True,
) -> Any:
    """The raw Kafka DataFrame of ``topics`` from the startup position (streaming by
    default; ``streaming=False`` reads up to the latest offsets now). ``kafka_options``
    are further Spark Kafka source options (e.g. ``maxOffsetsPerTrigger``,
    ``kafka.security.protocol``); ``client_options`` librdkafka settings for the offset
    lookups of group-offsets/specific-offsets."""
    names = [topics] if isinstance(topics, str) else list(topics)
    options = {
        "kafka.bootstrap.servers": bootstrap_servers,
        "subscribe": ",".join(names),
        "failOnDataLoss": "true",
        **spark_options(startup or Startup(), bootstrap_servers, names, client_options or {}),
        **(kafka_options or {}),
    }
    reader = spark.readStream if streaming else spark.read
    return reader.format("kafka").options(**options).load()


@dataclass(frozen=True)
class Malformed:
    """What to do with a message that does not decode.

    ``fail`` stops the query with the topic, partition, offset and reason; ``skip`` drops
    it and counts it in the observed metric ``metric`` of the query's progress;
    ``dead-letter`` produces the original key and value to ``dead_letter_topic`` (headers
    ``sparkcdc.topic``/``.partition``/``.offset``/``.error``) and drops it, at-least-once.
    """

    policy: str = "fail"
    dead_letter_topic: str | None = None
    dead_letter_bootstrap_servers: str | None = None
    producer_options: Mapping[str, str] = field(default_factory=SecretSettings)
    metric: str = MALFORMED_METRIC

    def __post_init__(self) -> None:
        # the repr hides SASL and key passwords (a frozen dataclass: set once, here)
        object.__setattr__(self, "producer_options", SecretSettings(self.producer_options))
        if self.policy not in POLICIES:
            raise ValueError(f"unknown malformed policy {self.policy!r}; valid: {POLICIES}")
        if self.policy == "dead-letter" and not (
            self.dead_letter_topic and self.dead_letter_bootstrap_servers
        ):
            raise ValueError("'dead-letter' needs dead_letter_topic and its bootstrap servers")


def handle_malformed(df: Any, malformed: Malformed) -> Any:
    """``df`` (Kafka columns plus ``_error``: why a message is malformed, or null) without
    its malformed messages, after applying the policy to them."""
    from pyspark.sql import functions as F

    error = F.col(_ERROR)
    if malformed.policy == "fail":
        message = F.concat(
            F.lit("malformed Kafka message at topic "),
            F.col("topic"),
            F.lit(", partition "),
            F.col("partition").cast("string"),
            F.lit(", offset "),
            F.col("offset").cast("string"),
            F.lit(": "),
            error,
        )
        checked = F.when(error.isNull(), F.lit(True)).otherwise(F.raise_error(message))
        return df.where(checked)
    if malformed.policy == "skip":
        counted = df.observe(malformed.metric, F.count(error).alias("malformed"))
        return counted.where(error.isNull())
    produce = _dead_letter_producer(malformed)
    return df.mapInArrow(produce, df.schema).where(error.isNull())


def _dead_letter_producer(
    malformed: Malformed,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """A ``mapInArrow`` function: produces malformed rows to the dead-letter topic, passes
    every row on, and fails the task if a dead letter was not acknowledged."""
    topic = malformed.dead_letter_topic
    config = {
        "bootstrap.servers": malformed.dead_letter_bootstrap_servers,
        "enable.idempotence": True,
        **malformed.producer_options,
    }

    def produce(batches: Iterator[Any]) -> Iterator[Any]:
        from confluent_kafka import Producer

        producer: Any = None
        failures: list[str] = []

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                failures.append(str(err))

        for batch in batches:
            errors = batch.column(_ERROR)
            if errors.null_count < batch.num_rows:
                producer = producer or Producer(config)
                for row in batch.filter(errors.is_valid()).to_pylist():
                    producer.produce(
                        topic,
                        key=row["key"],
                        value=row["value"],
                        headers=[
                            ("sparkcdc.topic", str(row["topic"]).encode()),
                            ("sparkcdc.partition", str(row["partition"]).encode()),
                            ("sparkcdc.offset", str(row["offset"]).encode()),
                            ("sparkcdc.error", str(row[_ERROR]).encode()),
                        ],
                        on_delivery=delivered,
                    )
                    producer.poll(0)
            yield batch
        if producer is not None:
            remaining = producer.flush(60)
            if remaining or failures:
                raise RuntimeError(
                    f"dead-letter topic {topic!r}: {remaining} messages not delivered, "
                    f"errors: {failures[:3]}"
                )

    return produce


def _error_of(checks: Sequence[tuple[Any, str]]) -> Any:
    """The first failing check's reason (null when every check passes)."""
    from pyspark.sql import functions as F

    result = F.lit(None).cast("string")
    for failed, reason in reversed(checks):
        result = F.when(failed, F.lit(reason)).otherwise(result)
    return result


def _changelog(rows: Any, images: Any, timestamp: Any) -> Any:
    """Explode ``images`` (array of struct(kind, image)) into changelog rows."""
    from pyspark.sql import functions as F

    exploded = rows.select(
        F.explode(images).alias("_c"),
        commit_version(F.col("partition"), F.col("offset")).alias(COMMIT_VERSION),
        timestamp.alias(COMMIT_TIMESTAMP),
    )
    return exploded.select(
        "_c.image.*",
        F.col("_c.kind").alias(CHANGE_TYPE),
        COMMIT_VERSION,
        COMMIT_TIMESTAMP,
    )


def _image(kind: str, value: Any) -> Any:
    from pyspark.sql import functions as F

    return F.struct(F.lit(kind).alias("kind"), value.alias("image"))


def decode_changelog_json(raw: Any, schema: Any, malformed: Malformed | None = None) -> Any:
    """A changelog DataFrame from a Kafka DataFrame of changelog-json messages.

    ``schema`` is the table's StructType. Tombstones (null values) are ignored.
    ``_commit_timestamp`` is the Kafka message timestamp (changelog-json has none).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    message = StructType([StructField("data", schema), StructField("op", StringType())])
    parsed = raw.where(F.col("value").isNotNull()).select(
        *_KAFKA_COLUMNS, parse_json(F.col("value").cast("string"), message).alias("_m")
    )
    op = F.col("_m.op")
    error = _error_of(
        [
            (F.col(f"_m.{CORRUPT}").isNotNull(), "not changelog-json of the table's schema"),
            (~op.isin("+I", "-U", "+U", "-D") | op.isNull(), "unknown or missing op"),
            (F.col("_m.data").isNull(), "no data"),
        ]
    )
    good = handle_malformed(parsed.withColumn(_ERROR, error), malformed or Malformed())
    kinds = {"+I": "insert", "-U": "update_preimage", "+U": "update_postimage", "-D": "delete"}
    kind = F.create_map(*[F.lit(x) for kv in kinds.items() for x in kv])[op]
    images = F.array(F.struct(kind.alias("kind"), F.col("_m.data").alias("image")))
    return _changelog(good, images, F.col("timestamp"))


def decode_debezium_json(raw: Any, schema: Any, malformed: Malformed | None = None) -> Any:
    """A changelog DataFrame from a Kafka DataFrame of debezium-json messages.

    An update (``u``) gives its pre- and post-image with one ``_commit_version``;
    ``c`` and ``r`` give inserts, ``d`` a delete. Tombstones (Debezium writes one after a
    delete) are ignored. ``_commit_timestamp`` is ``ts_ms``, else the message timestamp.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    message = StructType(
        [
            StructField("before", schema),
            StructField("after", schema),
            StructField("op", StringType()),
            StructField("ts_ms", LongType()),
        ]
    )
    parsed = raw.where(F.col("value").isNotNull()).select(
        *_KAFKA_COLUMNS, parse_json(F.col("value").cast("string"), message).alias("_m")
    )
    op, before, after = F.col("_m.op"), F.col("_m.before"), F.col("_m.after")
    error = _error_of(
        [
            (F.col(f"_m.{CORRUPT}").isNotNull(), "not debezium-json of the table's schema"),
            (op == "t", "a truncate (op t): a changelog cannot say which rows it removed"),
            (~op.isin("c", "u", "d", "r") | op.isNull(), "unknown or missing op"),
            (op.isin("u", "d") & before.isNull(), "no before image"),
            (op.isin("c", "u", "r") & after.isNull(), "no after image"),
        ]
    )
    good = handle_malformed(parsed.withColumn(_ERROR, error), malformed or Malformed())
    images = (
        F.when(
            op == "u", F.array(_image("update_preimage", before), _image("update_postimage", after))
        )
        .when(op == "d", F.array(_image("delete", before)))
        .otherwise(F.array(_image("insert", after)))
    )
    stamp = F.coalesce(F.timestamp_millis(F.col("_m.ts_ms")), F.col("timestamp"))
    return _changelog(good, images, stamp)


def read_upsert_kafka(
    raw: Any,
    schema: Any,
    key_fields: Sequence[str],
    *,
    malformed: Malformed | None = None,
    state_ttl_ms: int | None = None,
) -> Any:
    """A changelog DataFrame from a streaming Kafka DataFrame of upsert messages.

    The key of a message is its Kafka key (a JSON object with ``key_fields``) or, for a
    keyless message, those fields of its value. Per key, in (partition, offset) order,
    :func:`normalize` keeps the last row on Spark's state store: ``+I`` for a new key,
    ``-U``/``+U`` for a changed row, nothing for an identical one, ``-D`` for a tombstone
    of a known key. ``state_ttl_ms`` forgets keys without messages for that long (in
    message time, see :func:`normalize_upsert`). Works on a batch DataFrame too (state
    then starts empty).
    """
    from pyspark.sql import functions as F

    key_schema = sub_schema(schema, key_fields)
    value = parse_json(F.col("value").cast("string"), schema)
    message_key = parse_json(F.col("key").cast("string"), key_schema)
    parsed = raw.select(*_KAFKA_COLUMNS, value.alias("_v"), message_key.alias("_mk"))
    has_key = F.col("key").isNotNull()
    key_source = F.struct(  # the message key's fields, else the value's
        *[
            F.when(has_key, F.col("_mk").getField(k)).otherwise(F.col("_v").getField(k)).alias(k)
            for k in key_fields
        ]
    )
    any_key_null = F.lit(False)
    for k in key_fields:
        any_key_null = any_key_null | key_source.getField(k).isNull()
    error = _error_of(
        [
            (F.col("value").isNull() & ~has_key, "tombstone without a key"),
            (has_key & F.col(f"_mk.{CORRUPT}").isNotNull(), "key is not a JSON object of key"),
            (F.col(f"_v.{CORRUPT}").isNotNull(), "value is not row JSON of the table's schema"),
            (any_key_null, f"key fields {list(key_fields)} missing or null"),
        ]
    )
    good = handle_malformed(parsed.withColumn(_ERROR, error), malformed or Malformed())
    keyed = good.select(
        to_row_json(row_struct(key_schema, source=key_source)).alias("_key"),
        F.when(
            F.col("value").isNotNull(), to_row_json(row_struct(schema, source=F.col("_v")))
        ).alias("_row"),
        "partition",
        "offset",
        "timestamp",
    )
    return normalize_upsert(keyed, schema, state_ttl_ms)


#: What the keep-last-row step emits before the row JSON is parsed back into columns.
_NORMALIZED = (
    f"_row string, {CHANGE_TYPE} string, {COMMIT_VERSION} long, {COMMIT_TIMESTAMP} timestamp"
)


def normalize_upsert(keyed: Any, schema: Any, state_ttl_ms: int | None = None) -> Any:
    """Keep-last-row over ``keyed`` (``_key``, ``_row`` canonical row JSON or null,
    ``partition``, ``offset``, ``timestamp``) into a typed changelog DataFrame.

    The TTL runs on message time (the Kafka timestamp), not the wall clock: a key is
    forgotten once a message more than ``state_ttl_ms`` newer than its last one has been
    seen (on any key: Spark's event-time timeout with a watermark of ``state_ttl_ms``).
    Processing-time timeouts would keep ``availableNow`` queries from ever finishing.
    Spark drops messages older than the watermark, i.e. more than the TTL behind the
    newest message seen, so only use a TTL when message timestamps roughly increase.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    keyed = keyed.withColumn("_ts_ms", F.unix_millis(F.col("timestamp")))
    timeout = GroupStateTimeout.NoTimeout
    if state_ttl_ms:
        keyed = keyed.withWatermark("timestamp", f"{int(state_ttl_ms)} milliseconds")
        timeout = GroupStateTimeout.EventTimeTimeout
    out = keyed.groupBy("_key").applyInPandasWithState(
        _keep_last_row(state_ttl_ms), _NORMALIZED, "row string, seen_ms long", "append", timeout
    )
    row = parse_json(F.col("_row"), schema, corrupt=False)
    return out.select(row.alias("_r"), *CHANGE_COLUMNS).select("_r.*", *CHANGE_COLUMNS)


def _keep_last_row(ttl_ms: int | None) -> Callable[..., Iterator[Any]]:
    """The per-key state function: the state is the key's last row JSON and the time of
    its last message (for the TTL)."""

    def apply(key: tuple[Any, ...], frames: Iterator[Any], state: Any) -> Iterator[Any]:
        pd: Any = importlib.import_module("pandas")  # no pandas stubs in this project

        if state.hasTimedOut:
            state.remove()  # TTL: forget the key
            return
        messages = pd.concat(list(frames)).sort_values(["partition", "offset"])
        stored: str | None = None
        seen = 0
        if state.exists:
            stored, seen = state.get
        rows: list[str] = []
        kinds: list[str] = []
        versions: list[int] = []
        stamps: list[Any] = []
        for row, partition, offset, stamp, millis in zip(
            messages["_row"],
            messages["partition"],
            messages["offset"],
            messages["timestamp"],
            messages["_ts_ms"],
            strict=True,
        ):
            if ttl_ms and stored is not None and int(millis) - seen > ttl_ms:
                stored = None  # expired, even if its timeout has not fired yet
            incoming = None if pd.isna(row) else str(row)
            version = (int(partition) << 44) | int(offset)
            for kind, image in normalize(
                None if stored is None else (stored,), None if incoming is None else (incoming,)
            ):
                rows.append(image[0])
                kinds.append(kind.value)
                versions.append(version)
                stamps.append(stamp)
            stored, seen = incoming, max(seen, int(millis))
        if stored is None:
            if state.exists:
                state.remove()
        else:
            state.update((stored, seen))
            if ttl_ms:
                state.setTimeoutTimestamp(seen + ttl_ms)
        if rows:
            yield pd.DataFrame(
                {
                    "_row": rows,
                    CHANGE_TYPE: kinds,
                    COMMIT_VERSION: versions,
                    COMMIT_TIMESTAMP: stamps,
                }
            )

    return apply

"""The Spark column codecs agree with the pure-Python formats, value for value, and the
sink's records pair updates and split primary-key moves per key."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.changes import ChangeType
from sparkcdc.formats.changelog_json import ChangelogJsonCodec
from sparkcdc.formats.debezium_json import (
    DebeziumJsonCodec,
    DebeziumRecord,
    SourceInfo,
    to_changes,
)
from sparkcdc.formats.row_json_decode import RowJson
from sparkcdc.formats.upsert_json import UpsertJsonCodec, UpsertMessage
from sparkcdc.spark.kafka.codec import parse_json, row_struct, to_row_json
from sparkcdc.spark.kafka.sink import kafka_records
from sparkcdc.spark.schema import to_spark_schema
from tests.support.kafka_rows import NAMES, SCHEMA, TYPES, rows

CODEC = RowJson(NAMES, TYPES, ["id"])


def _frame(spark: Any, batch: list[tuple[Any, ...]]) -> Any:
    table = pa.Table.from_pylist([dict(zip(NAMES, r, strict=True)) for r in batch], SCHEMA)
    return spark.createDataFrame(table, to_spark_schema(SCHEMA))


def _tuples(df: Any) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in df.toArrow().to_pylist()]


@settings(max_examples=4, deadline=None)
@given(st.lists(rows(), min_size=1, max_size=40))
def test_spark_and_python_row_json_agree(spark: Any, batch: list[tuple[Any, ...]]) -> None:
    from pyspark.sql import functions as F

    batch = [(i, *r[1:]) for i, r in enumerate(batch)]  # ids give the order back
    df = _frame(spark, batch)
    assert _tuples(df) == batch  # the frame holds exactly the generated values
    spark_texts = [
        r[0] for r in df.orderBy("id").select(to_row_json(row_struct(df.schema))).collect()
    ]
    assert [CODEC.decode(t) for t in spark_texts] == batch
    python_texts = spark.createDataFrame([(CODEC.encode(r),) for r in batch], "j string")
    parsed = python_texts.select(parse_json(F.col("j"), df.schema, corrupt=False).alias("r"))
    assert sorted(_tuples(parsed.select("r.*"))) == batch
    for spark_text, row in zip(spark_texts, batch, strict=True):  # the same JSON values,
        python_json, spark_json = json.loads(CODEC.encode(row)), json.loads(spark_text)
        for name in ("f32", "f64"):  # but floats: Java and Python print digits differently
            python_json.pop(name), spark_json.pop(name)
        assert spark_json == python_json


def test_sink_records_pair_updates_and_split_key_moves(spark: Any) -> None:
    at = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)
    changes = [  # id 1 inserted, updated, moved to id 2, deleted
        (1, "a", "insert", 10),
        (1, "a", "update_preimage", 20),
        (1, "b", "update_postimage", 20),
        (1, "b", "update_preimage", 30),
        (2, "b", "update_postimage", 30),
        (2, "b", "delete", 40),
        (7, "z", "insert", 5),
    ]
    df = spark.createDataFrame(
        [(i, v, t, n, at) for i, v, t, n in reversed(changes)],
        "id long, v string, _change_type string, _commit_version long, _commit_timestamp timestamp",
    )
    names, types = ["id", "v"], [pa.int64(), pa.string()]

    def messages(fmt: str) -> dict[str, list[str | None]]:
        out: dict[str, list[str | None]] = {}
        records = kafka_records(df, fmt, ["id"], topic_pattern="t.{v}")
        for r in records.collect():  # one Spark partition holds a key, in order
            if fmt == "changelog-json":  # the pattern's placeholder is a column
                assert r["topic"] == f"t.{json.loads(r['value'])['data']['v']}"
            out.setdefault(r["key"], []).append(r["value"])
        return out

    cj = ChangelogJsonCodec(names, types)
    got = {k: [cj.decode(v or "") for v in vs] for k, vs in messages("changelog-json").items()}
    assert got == {
        '{"id":1}': [
            (ChangeType.INSERT, (1, "a")),
            (ChangeType.UPDATE_PREIMAGE, (1, "a")),
            (ChangeType.UPDATE_POSTIMAGE, (1, "b")),
            (ChangeType.UPDATE_PREIMAGE, (1, "b")),
        ],
        '{"id":2}': [(ChangeType.UPDATE_POSTIMAGE, (2, "b")), (ChangeType.DELETE, (2, "b"))],
        '{"id":7}': [(ChangeType.INSERT, (7, "z"))],
    }
    deb = DebeziumJsonCodec(names, types)
    records = {k: [deb.decode(v or "") for v in vs] for k, vs in messages("debezium-json").items()}
    assert {k: [r.op for r in rs] for k, rs in records.items()} == {
        '{"id":1}': ["c", "u", "d"],
        '{"id":2}': ["c", "d"],
        '{"id":7}': ["c"],
    }
    assert to_changes(records['{"id":1}'][1]) == [
        (ChangeType.UPDATE_PREIMAGE, (1, "a")),
        (ChangeType.UPDATE_POSTIMAGE, (1, "b")),
    ]
    assert records['{"id":2}'][1].ts_ms == int(at.timestamp() * 1000)
    upsert = UpsertJsonCodec(names, types, ["id"])
    got_upsert = {
        k: [upsert.decode(UpsertMessage(k, v))[1] for v in vs]
        for k, vs in messages("upsert").items()
    }
    assert got_upsert == {
        '{"id":1}': [(1, "a"), (1, "b"), None],
        '{"id":2}': [(2, "b"), None],
        '{"id":7}': [(7, "z")],
    }


@settings(max_examples=3, deadline=None)
@given(st.lists(rows(), min_size=1, max_size=30), st.sampled_from([None, 5]))
def test_records_of_snapshot_rows_need_no_shuffle_and_are_the_same(
    spark: Any, batch: list[tuple[Any, ...]], read_version: int | None
) -> None:
    """A batch of snapshot rows only (inserts of distinct keys) is made into records
    without a window, a shuffle or a sort, and they are the records the general path
    makes, for every format."""
    from pyspark.sql import functions as F

    batch = [(i, *r[1:]) for i, r in enumerate(batch)]  # distinct keys
    df = (
        _frame(spark, batch)
        .withColumn("_change_type", F.lit("insert"))
        .withColumn("_commit_version", F.lit(5).cast("long"))
        .withColumn("_commit_timestamp", F.lit(dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc)))
    )
    for fmt in ("changelog-json", "debezium-json", "upsert"):

        def records(inserts_only: bool, fmt: str = fmt) -> Any:
            return kafka_records(
                df,
                fmt,
                ["id"],
                topic="t",
                database="d",
                table="t",
                read_version=read_version,
                inserts_only=inserts_only,
            )

        fast = records(True)
        plan = fast._jdf.queryExecution().executedPlan().toString()
        assert "Exchange" not in plan and "Window" not in plan and "Sort" not in plan, plan
        assert sorted(map(tuple, fast.collect())) == sorted(map(tuple, records(False).collect()))


def test_tables_staged_together_are_shuffled_once_and_keep_their_own_records(
    spark: Any,
) -> None:
    """A batch's tables go through one shuffle (pipeline sink): each table's records are
    those it has alone, in order per key, though both tables change key 1 at the same
    version (an update's images must pair within their own table). debezium-json's
    message, put together from JSON text, is byte for byte the Python codec's."""
    from decimal import Decimal

    from sparkcdc.spark.kafka.sink import RecordOptions, records_of_staged, staged_changes

    at = dt.datetime(2024, 5, 1, 12, 30, 1, 250000, tzinfo=dt.timezone.utc)
    first = spark.createDataFrame(
        [  # id 1 inserted, updated, moved to id 2, deleted
            (1, "a", "insert", 10, at),
            (1, "a", "update_preimage", 20, at),
            (1, "b", "update_postimage", 20, at),
            (1, "b", "update_preimage", 30, at),
            (2, "b", "update_postimage", 30, at),
            (2, "b", "delete", 40, None),
        ],
        "id long, v string, _change_type string, _commit_version long, _commit_timestamp timestamp",
    )
    second = spark.createDataFrame(
        [
            (1, Decimal("1.50"), None, "update_preimage", 20, at),
            (1, Decimal("2.50"), 'say "hi"', "update_postimage", 20, at),
            (3, Decimal("0.00"), "é", "insert", 25, at),
        ],
        "id long, amount decimal(10,2), note string, _change_type string, "
        "_commit_version long, _commit_timestamp timestamp",
    )
    tables = {"a": first, "b": second}
    for fmt in ("changelog-json", "debezium-json", "upsert"):
        # debezium-json records name their table: both in one topic, as a pipeline allows
        topics = {t: "shared" if fmt == "debezium-json" else t for t in tables}
        staged = [
            staged_changes(
                df, fmt, ["id"], RecordOptions(topic=topics[t], database="d", table=t), i
            )
            for i, (t, df) in enumerate(tables.items())
        ]
        together = records_of_staged(staged[0].unionByName(staged[1]), fmt)
        plan = together._jdf.queryExecution().executedPlan().toString()
        assert plan.count("Exchange hashpartitioning") == 1, plan

        def per_key(records: Any, fmt: str = fmt) -> dict[tuple[str, str], list[str]]:
            out: dict[tuple[str, str], list[str]] = {}
            for r in records.collect():  # one Spark partition holds a key, in order
                table = r["topic"]
                if fmt == "debezium-json":
                    table = json.loads(r["value"])["source"]["table"]
                out.setdefault((table, r["key"]), []).append(r["value"])
            return out

        alone = {
            k: v
            for t, df in tables.items()
            for k, v in per_key(
                kafka_records(df, fmt, ["id"], topic=topics[t], database="d", table=t)
            ).items()
        }
        assert per_key(together) == alone, fmt

    deb = {
        t: DebeziumJsonCodec(df.columns[:-3], [pa.int64(), *types])
        for (t, df), types in zip(
            tables.items(), [[pa.string()], [pa.decimal128(10, 2), pa.string()]], strict=True
        )
    }
    staged = [
        staged_changes(
            df, "debezium-json", ["id"], RecordOptions(topic="shared", database="d", table=t), i
        )
        for i, (t, df) in enumerate(tables.items())
    ]
    texts: dict[tuple[str, str], list[str]] = {}
    for r in records_of_staged(staged[0].unionByName(staged[1]), "debezium-json").collect():
        texts.setdefault((json.loads(r["value"])["source"]["table"], r["key"]), []).append(
            r["value"]
        )
    ms = int(at.timestamp() * 1000)

    def source(table: str) -> SourceInfo:
        return SourceInfo("d", table)

    expected = {
        ("a", '{"id":1}'): [
            DebeziumRecord("c", None, (1, "a"), source("a"), ms),
            DebeziumRecord("u", (1, "a"), (1, "b"), source("a"), ms),
            DebeziumRecord("d", (1, "b"), None, source("a"), ms),  # moved away
        ],
        ("a", '{"id":2}'): [
            DebeziumRecord("c", None, (2, "b"), source("a"), ms),
            DebeziumRecord("d", (2, "b"), None, source("a"), None),
        ],
        ("b", '{"id":1}'): [
            DebeziumRecord(
                "u", (1, Decimal("1.50"), None), (1, Decimal("2.50"), 'say "hi"'), source("b"), ms
            )
        ],
        ("b", '{"id":3}'): [DebeziumRecord("c", None, (3, Decimal("0.00"), "é"), source("b"), ms)],
    }
    assert texts == {
        k: [deb[k[0]].encode(record) for record in records] for k, records in expected.items()
    }

"""transform: and route: blocks: parsed offline, every mistake names the file and line;
the plan of targets refuses whatever would let rows collide; types widen only exactly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql import types as T

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.projection import ExpressionError, parse_projection, split_items
from sparkcdc.pipeline.rules import RouteRule, TransformRule, sink_table_id
from sparkcdc.pipeline.targets import plan_targets
from sparkcdc.pipeline.widening import widen
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.options import table_patterns

HEAD = """\
source:
  type: mysql
  hostname: 127.0.0.1
  username: cdc
  password: x
  tables: app.\\.*
sink:
  type: delta
  path: lake
pipeline:
  checkpoint: ckpt
"""

RULES = """\
transform:
  - source-table: app.orders_\\.*
    projection: \\*, UPPER(name) AS name_upper, __table_name__ AS source_table
    filter: id > 10 AND name <> 'x, y'
    primary-keys: id, source_table
    partition-keys: source_table
    description: shards
route:
  - source-table: app.orders_\\.*
    sink-table: ods.orders
  - source-table: app.items_[0-9]+
    sink-table: ods.<>_copy
    replace-symbol: <>
    disjoint-keys: true
"""


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path)


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(PipelineFileError) as info:
        load(tmp_path, text)
    return str(info.value)


def test_rules_load_with_flink_keys(tmp_path: Path) -> None:
    definition = load(tmp_path, HEAD + RULES)
    (transform,) = definition.transforms  # type: ignore[attr-defined]
    assert [i.text for i in transform.projection] == [
        "*",
        "UPPER(name) AS name_upper",
        "__table_name__ AS source_table",
    ]
    assert transform.projection[2].metadata == "__table_name__"
    assert transform.filter == "id > 10 AND name <> 'x, y'"
    assert transform.primary_keys == ("id", "source_table")
    assert transform.partition_keys == ("source_table",)
    assert transform.where.endswith("pipeline.yaml:13")
    first, second = definition.routes  # type: ignore[attr-defined]
    assert first.target(TableId("app", "orders_1")) == TableId("ods", "orders")
    assert second.target(TableId("app", "items_7")) == TableId("ods", "items_7_copy")
    assert second.disjoint_keys and not first.disjoint_keys


@pytest.mark.parametrize(
    ("rules", "line", "says"),
    [
        (
            "transform:\n  - source-table: app.t\n    projection: id, UPPER(name AS n\n",
            14,
            "projection",
        ),
        ("transform:\n  - source-table: app.t\n    filter: id >\n", 14, "filter 'id >'"),
        ("transform:\n  - source-table: app.t\n    colums: id\n", 14, "unknown key"),
        ("transform:\n  - app.t\n", 13, "a transform rule is a mapping"),
        ("route:\n  - source-table: app.t\n", 13, "'route[0].sink-table': is required"),
        ("route:\n  - source-table: app.t\n    sink-table: nothing.\n", 14, "namespace.table"),
        ("route:\n  source-table: app.t\n", 12, "list of rules"),
        ("routes:\n  - source-table: app.t\n", 12, "unknown block"),
        ("transform:\n  - source-table: app.t\n    primary-keys: id,,k\n", 14, "empty column"),
    ],
)
def test_mistakes_name_the_line(tmp_path: Path, rules: str, line: int, says: str) -> None:
    message = error_of(tmp_path, HEAD + rules)
    assert re.search(rf"pipeline\.yaml:{line}: ", message), message
    assert says in message


def test_projection_items_split_outside_quotes_and_calls() -> None:
    assert split_items("a, concat(b, ','), 'x,y' AS z, `c,d`") == [
        "a",
        "concat(b, ',')",
        "'x,y' AS z",
        "`c,d`",
    ]
    with pytest.raises(ExpressionError, match="statement"):
        parse_projection("SELECT 1")


# -- planning ---------------------------------------------------------------------------


def table(name: str, *fields: tuple[str, T.DataType], key: tuple[str, ...] = ("id",)) -> SinkTable:
    schema = T.StructType([T.StructField(n, t, n not in key) for n, t in fields])
    return SinkTable(TableId("app", name), schema, key)


def transform(text: str = "", keys: str = "", pattern: str = "app.\\.*") -> TransformRule:
    return TransformRule(
        table_patterns(pattern),
        parse_projection(text) if text else (),
        None,
        tuple(k.strip() for k in keys.split(",")) if keys else (),
        (),
        "p.yaml:20",
    )


def route(sink: str = "ods.orders", disjoint: bool = False, pattern: str = "app.\\.*") -> RouteRule:
    return RouteRule(table_patterns(pattern), sink, None, disjoint, "p.yaml:30")


def projected(table: SinkTable, rule: TransformRule) -> T.StructType:
    """What Spark's analysis gives for the projections these tests use (pass-throughs and
    string metadata): enough to test the planner without a session."""
    fields = []
    for item in rule.projection or parse_projection("*"):
        if item.star:
            fields.extend(table.schema.fields)
        elif item.column in table.columns:
            fields.append(T.StructField(item.name or "", table.schema[item.column].dataType))
        else:
            fields.append(T.StructField(item.name or "", T.StringType(), False))
    return T.StructType(fields)


INT, LONG, STR = T.IntegerType(), T.LongType(), T.StringType()


def test_without_rules_each_table_is_its_own_target() -> None:
    tables = [table("a", ("id", INT)), table("b", ("id", INT))]
    targets = plan_targets(tables, [], [], projected)
    assert [t.table for t in targets] == tables and all(t.as_captured for t in targets)


def test_shards_merge_into_a_union_of_columns_with_widened_types() -> None:
    shards = [
        table("s1", ("id", INT), ("name", STR)),
        table("s2", ("id", LONG), ("price", T.DecimalType(10, 2))),
        table("s3", ("id", INT), ("price", LONG), ("name", STR)),
    ]
    rule = transform("*, __table_name__ AS src", "id, src")
    (target,) = plan_targets(shards, [route()], [rule], projected)
    assert target.table.source == TableId("ods", "orders")
    assert target.table.key == ("id", "src")
    assert [(f.name, f.dataType, f.nullable) for f in target.table.schema.fields] == [
        ("id", LONG, False),
        ("name", STR, True),
        ("src", STR, False),
        ("price", T.DecimalType(22, 2), True),
    ]


def test_merged_tables_need_keys_that_cannot_collide() -> None:
    shards = [table("s1", ("id", INT)), table("s2", ("id", INT))]
    with pytest.raises(PipelineFileError, match="does not tell their rows apart") as info:
        plan_targets(shards, [route()], [], projected)
    assert "p.yaml:30" in str(info.value) and "disjoint-keys: true" in str(info.value)
    assert plan_targets(shards, [route(disjoint=True)], [], projected)
    # the schema alone does not tell tables of two databases apart
    other = SinkTable(TableId("b", "s1"), shards[0].schema, ("id",))
    rule = transform("*, __table_name__ AS t", "id, t", pattern="\\.*.s1")
    with pytest.raises(PipelineFileError, match="does not tell"):
        plan_targets([shards[0], other], [route(pattern="\\.*.s1")], [rule], projected)


def test_transforms_keep_the_source_key() -> None:
    orders = table("orders", ("id", INT), ("email", STR))
    with pytest.raises(PipelineFileError, match="replace it"):
        plan_targets([orders], [], [transform("*", "email")], projected)
    with pytest.raises(PipelineFileError, match="primary-key column 'id'"):
        plan_targets([orders], [], [transform("UPPER(email) AS email")], projected)
    with pytest.raises(PipelineFileError, match="more than once"):
        plan_targets([orders], [], [transform("*, email")], projected)
    (target,) = plan_targets([orders], [], [transform("id, email AS mail")], projected)
    assert target.table.columns == ("id", "mail") and not target.as_captured


def test_a_table_in_two_routes_and_types_that_do_not_widen_are_refused() -> None:
    shards = [
        table("s1", ("id", INT), ("v", LONG)),
        table("s2", ("id", INT), ("v", T.DoubleType())),
    ]
    with pytest.raises(PipelineFileError, match="matches the routes at"):
        plan_targets(shards, [route(disjoint=True), route("ods.x")], [], projected)
    with pytest.raises(PipelineFileError, match=r"column 'v' of ods\.orders is bigint in app\.s1"):
        plan_targets(shards, [route(disjoint=True)], [], projected)


# -- widening ---------------------------------------------------------------------------

NUMERIC = st.sampled_from(
    [T.ByteType(), T.ShortType(), INT, LONG, T.FloatType(), T.DoubleType(), STR, T.DateType()]
    + [T.DecimalType(p, s) for p in (5, 10, 20, 38) for s in (0, 2, 5)]
)


@given(NUMERIC, NUMERIC)
def test_widening_is_symmetric_and_holds_both(a: T.DataType, b: T.DataType) -> None:
    wider = widen(a, b)
    assert wider == widen(b, a)
    if wider is not None:
        assert widen(wider, a) == wider and widen(wider, b) == wider


def test_widening_keeps_every_value() -> None:
    assert widen(LONG, T.DecimalType(10, 2)) == T.DecimalType(22, 2)
    assert widen(T.DecimalType(38, 0), T.DecimalType(10, 2)) is None  # 40 digits
    assert widen(LONG, T.DoubleType()) is None  # 2**53 + 1 has no double
    assert widen(INT, T.DoubleType()) == T.DoubleType()
    assert widen(T.BinaryType(), STR) is None
    assert widen(T.DateType(), T.TimestampType()) == T.TimestampType()


def test_a_one_part_sink_table_is_a_target_in_the_sinks_default_namespace() -> None:
    """Flink CDC's ``sink-table: kafka_ods_orders`` (a topic, or a table of the sink's
    default database); ``replace-symbol`` works in one part too."""
    one = route("kafka_ods_orders", pattern="app.orders")
    assert one.target(TableId("app", "orders")) == TableId("", "kafka_ods_orders")
    per_table = RouteRule(table_patterns("app.\\.*"), "ods_<>", "<>", False, "p.yaml:30")
    assert per_table.target(TableId("app", "items")) == TableId("", "ods_items")
    assert sink_table_id("ods.orders") == TableId("ods", "orders")
    assert sink_table_id("a\\.b") == TableId("", "a.b")  # an escaped dot is the name's

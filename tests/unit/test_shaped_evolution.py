"""Column changes of tables whose target is merged by a route or shaped by a transform
(pipeline/shaped_evolution.py): the target takes the union of its tables' shaped columns,
widened, and never drops or renames one, whatever the behaviour but ``ignore`` and
``exception``; the expected targets are written down here from docs/schema-evolution.md."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pyspark.sql import types as T

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.rules import RouteRule, TransformRule
from sparkcdc.pipeline.shaped_evolution import (
    joined_target,
    reshaped,
    restored_shaped,
    shaped_evolution,
    with_source,
)
from sparkcdc.pipeline.targets import Target, TargetSource, kept_columns
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.options import table_patterns
from sparkcdc.snapshot.schema_change import NO_MOVES, ColumnMoves

A, B = TableId("shop", "orders_1"), TableId("shop", "orders_2")
MERGED = TableId("shop", "orders")
ANY = table_patterns("shop.orders_[0-9]+")
ROUTE = RouteRule(ANY, "shop.orders", None, False, "pipeline.yaml:9")


def columns(spec: str) -> T.StructType:
    """``"id:bigint! a:int b:string"``: name, type, ``!`` for NOT NULL."""
    kinds = {
        "bigint": T.LongType(),
        "int": T.IntegerType(),
        "string": T.StringType(),
        "binary": T.BinaryType(),
    }
    fields = []
    for item in spec.split():
        name, kind = item.split(":")
        fields.append(T.StructField(name, kinds[kind.rstrip("!")], not kind.endswith("!")))
    return T.StructType(fields)


def source(table: TableId, spec: str) -> TargetSource:
    schema = columns(spec)
    return TargetSource(SinkTable(table, schema, ("id",)), None, ROUTE, schema, ("id",))


def merged(spec: str, *sources: TargetSource) -> Target:
    return Target(SinkTable(MERGED, columns(spec), ("id",)), sources)


def shape(schema: T.StructType) -> str:
    return " ".join(
        f"{f.name}:{f.dataType.simpleString()}{'' if f.nullable else '!'}" for f in schema.fields
    )


ONE = source(A, "id:bigint! a:int b:string")
TWO = source(B, "id:bigint! a:int c:string")
TARGET = merged("id:bigint! a:int b:string c:string", ONE, TWO)


def changed(before: TargetSource, spec: str) -> TargetSource:
    """``before`` once its table has the columns ``spec`` (no transform: shaped as is)."""
    table = SinkTable(before.table.source, columns(spec), before.key)
    return reshaped(before, table, _no_transform, "ALTER TABLE ...")


def _no_transform(table: SinkTable, rule: Any) -> Any:
    raise AssertionError("a table without transform is not shaped")


@pytest.mark.parametrize("behavior", ["lenient", "evolve", "try_evolve"])
def test_a_merged_target_adds_widens_and_never_drops(behavior: str) -> None:
    # orders_1: a widened to bigint, b dropped, d added; orders_2 still has all it had
    after = changed(ONE, "id:bigint! a:bigint d:string")
    moves = ColumnMoves(dropped=("b",))
    change = shaped_evolution(behavior, TARGET, ONE, after, "ALTER", moves, frozenset())
    assert shape(change.schema) == "id:bigint! a:bigint b:string c:string d:string"
    assert change.moves == NO_MOVES  # nothing renamed or dropped in the target


def test_a_rename_in_one_table_adds_the_new_name_and_keeps_the_old() -> None:
    after = changed(ONE, "id:bigint! a:int e:string")
    moves = ColumnMoves(renamed={"b": "e"})
    change = shaped_evolution("evolve", TARGET, ONE, after, "RENAME", moves, frozenset())
    assert shape(change.schema) == "id:bigint! a:int b:string c:string e:string"


def test_ignore_keeps_the_merged_columns() -> None:
    after = changed(ONE, "id:bigint! a:int d:string")
    change = shaped_evolution("ignore", TARGET, ONE, after, "ALTER", NO_MOVES, frozenset())
    assert shape(change.schema) == shape(TARGET.table.schema)


def test_exception_stops_at_a_change_of_the_tables_shape_only() -> None:
    after = changed(ONE, "id:bigint! a:int b:string d:string")
    with pytest.raises(SchemaError, match=r"ADD d.*'exception'"):
        shaped_evolution("exception", TARGET, ONE, after, "ADD d", NO_MOVES, frozenset())
    # the target's columns from other tables (c) are no change of orders_1
    same = changed(ONE, "id:bigint! a:int b:string")
    change = shaped_evolution("exception", TARGET, ONE, same, "x", NO_MOVES, frozenset())
    assert shape(change.schema) == shape(TARGET.table.schema)
    # an excluded change type passes, as 'ignore' takes it
    excluded = frozenset({"add.column"})
    change = shaped_evolution("exception", TARGET, ONE, after, "ADD d", NO_MOVES, excluded)
    assert shape(change.schema) == shape(TARGET.table.schema)


def test_a_type_no_target_column_holds_stops() -> None:
    after = changed(ONE, "id:bigint! a:binary b:string")
    with pytest.raises(SchemaError, match="column a of the target is int"):
        shaped_evolution("lenient", TARGET, ONE, after, "MODIFY a", NO_MOVES, frozenset())


def test_a_transform_shapes_the_new_columns_and_must_keep_the_key() -> None:
    rule = TransformRule(ANY, (), None, ("id", "src"), (), "pipeline.yaml:3")

    def with_src(table: SinkTable, _: Any) -> Any:
        return T.StructType([*table.schema.fields, T.StructField("src", T.StringType())])

    shaped = TargetSource(ONE.table, rule, ROUTE, with_src(ONE.table, rule), ("id", "src"))
    table = SinkTable(A, columns("id:bigint! a:int b:string d:int"), ("id",))
    after = reshaped(shaped, table, with_src, "ADD d")
    assert shape(after.schema) == "id:bigint! a:int b:string d:int src:string"
    assert after.route is ROUTE and after.key == ("id", "src")
    rekeyed = SinkTable(A, table.schema, ("id", "a"))
    with pytest.raises(SchemaError, match=r"primary-keys .* leave out the table's key column"):
        reshaped(shaped, rekeyed, with_src, "ALTER TABLE orders_1 ADD PRIMARY KEY")


def test_the_target_takes_the_new_source_and_schema() -> None:
    after = changed(ONE, "id:bigint! a:int d:string")
    change = shaped_evolution("lenient", TARGET, ONE, after, "ALTER", NO_MOVES, frozenset())
    target = with_source(TARGET, ONE, after, change.schema)
    assert [s.table.columns for s in target.sources] == [("id", "a", "d"), ("id", "a", "c")]
    assert target.table.columns == ("id", "a", "b", "c", "d")
    assert target.table.source == MERGED
    # rows read again keep what their own table lacks: b (no table has it any more), and
    # the column only the other table has
    assert kept_columns(target) == (("b", "c"), ("b", "d"))


def test_a_restart_evolves_the_stored_schema_by_every_tables_columns() -> None:
    # stored: after orders_1 dropped b (kept); since, orders_2 gained f while stopped
    stored = columns("id:bigint! a:int b:string c:string")
    now = merged("id:bigint! a:int c:string f:int", source(A, "id:bigint! a:int"), TWO)
    later = source(B, "id:bigint! a:int c:string f:int")
    now = Target(now.table, (now.sources[0], later))
    assert shape(restored_shaped(now, stored, "lenient").table.schema) == (
        "id:bigint! a:int b:string c:string f:int"
    )
    assert shape(restored_shaped(now, stored, "ignore").table.schema) == shape(stored)


def test_a_table_created_while_running_joins_its_merged_target() -> None:
    three = source(TableId("shop", "orders_3"), "id:bigint! a:int g:int")
    planned = merged("id:bigint! a:int g:int", three)
    disjoint = dataclasses.replace(ROUTE, disjoint_keys=True)
    target = Target(
        TARGET.table,
        tuple(dataclasses.replace(s, route=disjoint) for s in TARGET.sources),
    )
    planned = Target(planned.table, (dataclasses.replace(three, route=disjoint),))
    joined = joined_target(target, planned, "lenient", None)
    assert shape(joined.table.schema) == "id:bigint! a:int b:string c:string g:int"
    assert [s.table.source.table for s in joined.sources] == ["orders_1", "orders_2", "orders_3"]
    assert shape(joined_target(target, planned, "ignore", None).table.schema) == shape(
        TARGET.table.schema
    )
    with pytest.raises(SchemaError, match="'exception'"):
        joined_target(target, planned, "exception", None)
    other_key = Target(
        dataclasses.replace(planned.table, key=("g",)),
        (dataclasses.replace(planned.sources[0], key=("g",)),),
    )
    with pytest.raises(SchemaError, match=r"whose key is \(id\)"):
        joined_target(target, other_key, "lenient", None)


def test_a_created_table_whose_keys_could_collide_is_refused() -> None:
    three = source(TableId("shop", "orders_3"), "id:bigint! a:int")
    planned = merged("id:bigint! a:int", three)
    with pytest.raises(PipelineFileError, match="does not tell their rows apart"):
        joined_target(TARGET, planned, "lenient", None)

"""``kept_columns``: which target columns rows read again leave alone: per kind of row,
the target's columns its table's (shaped) rows do not carry."""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import IntegerType, StructField, StructType

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.schema_follow import plain_target
from sparkcdc.pipeline.targets import Target, TargetSource, kept_columns, kept_kind
from sparkcdc.sinks.base import SinkTable

T = TableId("app", "t")


def table(names: str, source: TableId = T) -> SinkTable:
    """A table of int columns ``names`` (space separated), keyed by id."""
    schema = StructType([StructField(n, IntegerType()) for n in names.split()])
    return SinkTable(source, schema, ("id",))


def test_a_one_table_target_keeps_the_columns_its_table_lost() -> None:
    now = table("id a d")
    evolved = plain_target(now, table("id b a c").schema)  # lenient after drops of b, c
    assert kept_columns(evolved) == (("b", "c"),)
    assert kept_columns(plain_target(now)) == ((),)  # as captured


def test_shaped_and_merged_targets_keep_per_table_what_its_rows_lack() -> None:
    now = table("id a")
    wide = table("id a b")
    rule: Any = object()  # a transform or route rule: only its presence counts here
    shaped = Target(wide, (TargetSource(now, rule, None, wide.schema, ("id",)),))
    routed = Target(wide, (TargetSource(now, None, rule, now.schema, ("id",)),))
    other = table("id b", TableId("app", "u"))
    merged = Target(
        wide,
        (
            TargetSource(now, None, None, now.schema, ("id",)),
            TargetSource(other, None, None, other.schema, ("id",)),
        ),
    )
    assert kept_columns(shaped) == ((),)  # the transform makes b
    assert kept_columns(routed) == (("b",),)  # a schema change left it in the target
    # t's rows lack b (u has it: t's rows read again must not blank it), u's lack a
    assert kept_columns(merged) == (("b",), ("a",))
    assert [kept_kind(merged, s) for s in merged.sources] == [0, 1]
    same = table("id a", TableId("app", "v"))
    three = Target(wide, (*merged.sources, TargetSource(same, None, None, same.schema, ("id",))))
    assert kept_columns(three) == (("b",), ("a",))  # t and v are the same kind
    assert [kept_kind(three, s) for s in three.sources] == [0, 1, 0]

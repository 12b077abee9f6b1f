"""``kept_columns``: which target columns rows read again leave alone: the target's
columns none of its tables' (shaped) rows carry."""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import IntegerType, StructField, StructType

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.schema_follow import plain_target
from sparkcdc.pipeline.targets import Target, TargetSource, kept_columns
from sparkcdc.sinks.base import SinkTable

T = TableId("app", "t")


def table(names: str, source: TableId = T) -> SinkTable:
    """A table of int columns ``names`` (space separated), keyed by id."""
    schema = StructType([StructField(n, IntegerType()) for n in names.split()])
    return SinkTable(source, schema, ("id",))


def test_a_one_table_target_keeps_the_columns_its_table_lost() -> None:
    now = table("id a d")
    evolved = plain_target(now, table("id b a c").schema)  # lenient after drops of b, c
    assert kept_columns(evolved) == ("b", "c")
    assert kept_columns(plain_target(now)) == ()  # as captured


def test_shaped_and_merged_targets_keep_what_none_of_their_tables_has() -> None:
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
    assert kept_columns(shaped) == ()  # the transform makes b
    assert kept_columns(routed) == ("b",)  # a schema change left it in the target
    assert kept_columns(merged) == ()  # u has b

"""The console sink's table-level lines: a schema change, a truncate and a drop printed
as Flink's print sink prints them, prefixed by the table when several are printed."""

from __future__ import annotations

import io

from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.console.config import ConsoleSinkConfig
from sparkcdc.sinks.console.sink import ConsoleSink
from sparkcdc.sinks.write_plan import plan_of

ORDERS, ITEMS = TableId("shop", "orders"), TableId("shop", "items")


def table(source: TableId, *fields: StructField) -> SinkTable:
    return SinkTable(source, StructType(list(fields)), ("id",))


def test_schema_changes_truncates_and_drops_are_printed_with_the_table() -> None:
    out = io.StringIO()
    sink = ConsoleSink(ConsoleSinkConfig.from_options({}), out)
    key = StructField("id", IntegerType(), False)
    sink.open(None, [table(ORDERS, key), table(ITEMS, key)])
    evolved = table(ORDERS, key, StructField("note", StringType()))
    sink.evolve(None, evolved, sink.tables[ORDERS])
    batch = plan_of("p:1", 3, {})
    sink.truncate(None, sink.tables[ITEMS], batch)
    sink.drop_table(None, sink.tables[ITEMS], batch)
    assert out.getvalue().splitlines() == [
        "shop.orders> schema change: id int, note string",
        "shop.items> truncate table",
        "shop.items> drop table",
    ]
    assert sink.tables[ORDERS] is evolved  # later rows are printed with the new columns

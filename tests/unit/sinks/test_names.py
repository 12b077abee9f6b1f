"""Target names of a route's one-part ``sink-table`` (an empty namespace: the sink's
default database or schema) in every sink's name pattern (sinks/names.py)."""

from __future__ import annotations

import pytest

from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable, target_names
from sparkcdc.sinks.jdbc.config import TableName
from sparkcdc.sinks.kafka.config import KafkaSinkConfig
from sparkcdc.sinks.names import fill_name


@pytest.mark.parametrize(
    ("pattern", "named", "default"),
    [
        ("{database}.{table}", "app.orders", "orders"),
        ("{database}/{table}", "app/orders", "orders"),
        ("{table}_{database}", "orders_app", "orders"),
        ("ods_{database}_{table}", "ods_app_orders", "ods_orders"),
        ("{database}-{table}-cdc", "app-orders-cdc", "orders-cdc"),
        ("{table}", "orders", "orders"),
        ("lake_{table}", "lake_orders", "lake_orders"),
    ],
)
def test_an_empty_namespace_leaves_no_trace_and_a_named_one_is_as_before(
    pattern: str, named: str, default: str
) -> None:
    assert fill_name(pattern, "app", "orders") == pattern.format(database="app", table="orders")
    assert fill_name(pattern, "app", "orders") == named
    assert fill_name(pattern, "", "orders") == default


def test_each_sink_names_a_one_part_target_without_a_namespace() -> None:
    one_part = TableId("", "kafka_ods_orders")
    assert str(one_part) == "kafka_ods_orders"
    kafka = KafkaSinkConfig.from_options({"properties.bootstrap.servers": "h:9092"})
    assert kafka.topic_of(one_part) == "kafka_ods_orders"
    assert kafka.topic_of(TableId("app", "orders")) == "app.orders"
    jdbc = TableName.parse("table-name", "{database}.{table}")
    assert jdbc.resolve("", "orders") == (None, "orders")  # the connection's default schema
    assert jdbc.resolve("app", "orders") == ("app", "orders")
    delta = SinkTable(TableId("", "orders"), {}, ())
    assert target_names([delta], "{database}/{table}") == {TableId("", "orders"): "orders"}

"""The captured tables of a pipeline's source, as sinks see them."""

from __future__ import annotations

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.discovery import CapturedTable
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.connectors.mysql.types import arrow_type
from sparkcdc.sinks.base import SinkTable


def captured_tables(config: MySqlSourceConfig) -> list[CapturedTable]:
    """Validate the server for CDC and list the matching tables (fails with the fix)."""
    source = MySqlCdcSource(config)
    try:
        return list(source.tables.values())
    finally:
        source.close()


def sink_table(table: CapturedTable) -> SinkTable:
    """A captured table's Spark schema (the same types the source emits) and key."""
    import pyarrow as pa

    from sparkcdc.spark.schema import to_spark_schema

    fields = [pa.field(c.name, arrow_type(c), nullable=c.nullable) for c in table.columns]
    return SinkTable(table.table_id, to_spark_schema(pa.schema(fields)), table.primary_key)

"""The captured tables of a pipeline's source, as sinks see them."""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.sinks.base import SinkTable


def captured_tables(
    found: Connector[Any], config: Any, *, inspect_only: bool = False
) -> list[SinkTable]:
    """Validate the server for CDC and list the matching tables with the Spark schema the
    source emits for each (fails with the fix). ``inspect_only``: leave the server as it
    is, making nothing capture would need (``Dialect.inspect``)."""
    import pyarrow as pa

    from sparkcdc.spark.schema import to_spark_schema

    source = found.create_source(config)
    try:
        return [
            SinkTable(
                table.table_id,
                to_spark_schema(pa.schema(source.dialect.arrow_fields(table))),
                table.primary_key,
            )
            for table in (source.dialect.inspect() if inspect_only else source.tables.values())
        ]
    finally:
        source.close()

"""The captured tables of a pipeline's source, as sinks see them."""

from __future__ import annotations

from typing import Any

from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.handle import SourceHandle, TableColumns


def captured_tables(
    handle: SourceHandle[Any, Any], *, inspect_only: bool = False
) -> list[SinkTable]:
    """Validate the server for CDC and list the matching tables with the Spark schema the
    source emits for each (fails with the fix). ``inspect_only``: leave the server as it
    is, making nothing capture would need (``Dialect.inspect``)."""
    found = handle.inspect() if inspect_only else handle.discover()
    return [sink_table(t) for t in found]


def sink_table(table: TableColumns) -> SinkTable:
    """A source table as sinks see it: its columns as a Spark schema."""
    import pyarrow as pa

    from sparkcdc.spark.schema import to_spark_schema

    schema = to_spark_schema(pa.schema(table.fields))
    return SinkTable(table.table_id, schema, table.primary_key, comments=table.comments)

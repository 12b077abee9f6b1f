"""``format("mysql-cdc")``: the MySQL/MariaDB CDC source as a PySpark Python data source.

Streaming reads give the changelog (snapshot, then binlog, exactly once with Spark's
checkpoint); batch reads give a consistent snapshot. All logic lives in
:mod:`sparkcdc.connectors.mysql.source`; this module only adapts it to PySpark's API.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource, PartitionSpec
from sparkcdc.core.position import BinlogPosition
from sparkcdc.spark.schema import to_spark_schema


def _source(options: Any) -> MySqlCdcSource:
    # ``options`` is Spark's case-insensitive map; parse_options looks keys up case-insensitively
    return MySqlCdcSource(parse_config(list(options.items())))


class MySqlCdcDataSource(DataSource):
    """``spark.readStream.format("mysql-cdc")`` / ``spark.read.format("mysql-cdc")``."""

    @classmethod
    def name(cls) -> str:
        return "mysql-cdc"

    def schema(self) -> StructType:
        source = _source(self.options)
        try:
            schema: StructType = to_spark_schema(source.arrow_schema())
            return schema
        finally:
            source.close()

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return MySqlCdcStreamReader(_source(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return MySqlSnapshotReader(_source(self.options))


class MySqlCdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, source: MySqlCdcSource) -> None:
        self.source = source  # no connection yet: __init__ runs in several processes
        self._target: BinlogPosition | None = None

    def initialOffset(self) -> dict[str, Any]:
        return self.source.initial_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.source.config.max_rows_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return self.source.latest_offset(start, max_rows, cap=self._target)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.source.current_position()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        return [InputPartition(spec) for spec in self.source.partitions(start, end)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self.source.read(cast(PartitionSpec, partition.value))

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: the source keeps no state beyond Spark's checkpoint."""

    def stop(self) -> None:
        self.source.close()


class MySqlSnapshotReader(DataSourceReader):
    """A consistent snapshot of the captured table as a batch DataFrame."""

    def __init__(self, source: MySqlCdcSource) -> None:
        self.source = source

    def partitions(self) -> list[InputPartition]:
        try:
            return [InputPartition(spec) for spec in self.source.snapshot_partitions()]
        finally:
            self.source.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return self.source.read(cast(PartitionSpec, partition.value))

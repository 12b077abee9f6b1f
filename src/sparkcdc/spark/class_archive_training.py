"""A Python streaming data source for the class-data archive's training run (no database):
the same PySpark interfaces as sparkcdc's sources (read limits, available-now, Arrow
batches), so the archive holds the JVM classes that serve them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

_ROWS = 3000
_PER_BATCH = 1000
_SCHEMA = "id bigint, name string, amount decimal(10,2), at timestamp"


class _TrainingSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "sparkcdc-class-archive-training"

    def schema(self) -> str:
        return _SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return _TrainingReader()


class _TrainingReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def initialOffset(self) -> dict[str, Any]:
        return {"row": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(_PER_BATCH)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        step = limit.max_rows if isinstance(limit, ReadMaxRows) else _ROWS
        return {"row": min(_ROWS, start["row"] + step)}

    def prepareForTriggerAvailableNow(self) -> None:
        pass

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        middle = (start["row"] + end["row"]) // 2
        return [InputPartition((start["row"], middle)), InputPartition((middle, end["row"]))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import datetime
        import decimal

        first, last = partition.value
        ids = list(range(first, last))
        yield pa.RecordBatch.from_pydict(
            {
                "id": pa.array(ids, pa.int64()),
                "name": pa.array([str(i) for i in ids], pa.string()),
                "amount": pa.array([decimal.Decimal(i) / 4 for i in ids], pa.decimal128(10, 2)),
                "at": pa.array(
                    [datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)] * len(ids),
                    pa.timestamp("us", tz="UTC"),
                ),
            }
        )

    def commit(self, end: dict[str, Any]) -> None:
        pass


def register_training_source(spark: Any) -> None:
    spark.dataSource.register(_TrainingSource)

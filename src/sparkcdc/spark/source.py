"""Every registered connector as a PySpark Python data source (``format("mysql-cdc")``...).

Streaming reads give the changelog (snapshot, then log, exactly once with Spark's
checkpoint); batch reads give a consistent snapshot. All logic lives in the engine-neutral
driver (snapshot/driver.py) over the connector's dialect; this module only adapts it to
PySpark's API. One subclass per connector is made in spark/registry.py, because Spark finds
a data source by its class's ``name()``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any, ClassVar, cast

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

from sparkcdc.connectors.registry import connector
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.partitions import PartitionSpec
from sparkcdc.spark.read_counters import counted
from sparkcdc.spark.schema import to_spark_schema


class CdcDataSource(DataSource):
    """``spark.readStream.format(F)`` / ``spark.read.format(F)`` for one connector."""

    #: The registry name of the connector (``mysql``).
    connector_name: ClassVar[str]
    #: The accumulator the readers add the source's retries to (set by ``register``).
    read_counter: ClassVar[Any] = None

    @classmethod
    def name(cls) -> str:
        return connector(cls.connector_name).format

    def _source(self) -> IncrementalSource[Any, Any]:
        # ``options`` is Spark's case-insensitive map; parse_options looks keys up
        # case-insensitively
        found = connector(self.connector_name)
        config = found.parse_config(dict(self.options.items()))
        source = found.source(config)
        if config.signal_kafka_topic:  # Debezium's Kafka signal channel
            from sparkcdc.spark.kafka.signals import KafkaSignals

            source.channels.append(
                KafkaSignals(
                    config.signal_kafka_servers,
                    config.signal_kafka_topic,
                    config.signal_kafka_key,
                    config.connect_timeout,
                    config.signal_consumer,
                )
            )
        return source

    def schema(self) -> StructType:
        source = self._source()
        try:
            schema: StructType = to_spark_schema(source.arrow_schema())
            return schema
        finally:
            source.close()

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return CdcStreamReader(self._source(), self.read_counter)

    def reader(self, schema: StructType) -> DataSourceReader:
        return SnapshotReader(self._source(), self.read_counter)


class CdcStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, source: IncrementalSource[Any, Any], counter: Any = None) -> None:
        self.source = source  # no connection yet: __init__ runs in several processes
        self.counter = counter
        self._target: Any = None

    def initialOffset(self) -> dict[str, Any]:
        return self.source.initial_offset()

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.source.settings.max_rows_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The next batch's end: ``IncrementalSource.latest_offset``, whose planner
        (snapshot/planner.py) runs its steps in order; docs/design.md draws the path."""
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return self.source.latest_offset(start, max_rows, cap=self._target)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        """The log's end when the last batch was planned: Spark's query progress shows it
        as the source's ``latestOffset``, beside the batch's ``endOffset``."""
        head = self.source.head
        return None if head is None else {"log": head.to_json()}

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.source.current_position()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        return [InputPartition(spec) for spec in self.source.partitions(start, end)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        spec = cast(PartitionSpec, partition.value)
        return counted(self.counter, lambda: self.source.read(spec))

    def commit(self, end: dict[str, Any]) -> None:
        """Spark will not replay before ``end``: the connector may release the log it
        keeps for the stream (PostgreSQL's slot). Called when the next batch starts."""
        self.source.commit(end)

    def stop(self) -> None:
        """Spark's streaming runner (a Python process of its own) calls this when its loop
        ends. When the JVM hung up on it (the query stopped: ``read_int`` of the next call
        met the end of the socket), the runner would then write that ``EOFError`` back to
        the closed socket and print the ``BrokenPipeError``'s traceback into Spark's log,
        an error line for a clean stop. The process is ending anyway: it ends here, quietly.
        Any other error still goes back to the JVM as the runner reports it."""
        self.source.close()
        if jvm_hung_up(sys.exc_info()[1]):
            os._exit(0)


def jvm_hung_up(error: BaseException | None) -> bool:
    """Whether ``error`` (the exception in flight) is PySpark's ``read_int`` meeting the
    end of its socket (an ``EOFError`` raised by our own code is an error to report)."""
    if not isinstance(error, EOFError) or error.__traceback__ is None:
        return False
    trace = error.__traceback__
    while trace.tb_next is not None:
        trace = trace.tb_next
    code = trace.tb_frame.f_code
    return code.co_name == "read_int" and code.co_filename.endswith(
        os.path.join("pyspark", "serializers.py")
    )


class SnapshotReader(DataSourceReader):
    """A consistent snapshot of the captured tables as a batch DataFrame."""

    def __init__(self, source: IncrementalSource[Any, Any], counter: Any = None) -> None:
        self.source = source
        self.counter = counter

    def partitions(self) -> list[InputPartition]:
        try:
            return [InputPartition(spec) for spec in self.source.snapshot_partitions()]
        finally:
            self.source.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        spec = cast(PartitionSpec, partition.value)
        return counted(self.counter, lambda: self.source.read(spec))

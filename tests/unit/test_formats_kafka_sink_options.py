"""The Kafka pipeline sink's options (no services needed)."""

from __future__ import annotations

import math

import pytest

from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from sparkcdc.sinks.kafka.config import KafkaSinkConfig
from sparkcdc.sinks.kafka.sink import ROWS_PER_TASK, balanced_union, fewer_tasks


def test_options_are_validated() -> None:
    with pytest.raises(OptionError, match=r"properties\.bootstrap\.servers"):
        KafkaSinkConfig.from_options({})
    with pytest.raises(OptionError, match=r"value\.format"):
        KafkaSinkConfig.from_options({"properties.bootstrap.servers": "h:1", "value.format": "x"})
    config = KafkaSinkConfig.from_options(
        {
            "properties.bootstrap.servers": "h:1",
            "topic-pattern": "cdc.{table}",
            "properties.acks": "all",
        }
    )
    assert config.topic_of(TableId("shop", "orders")) == "cdc.orders"
    assert config.producer == {"acks": "all"} and config.format == "debezium-json"


class _Frame:
    """A DataFrame stand-in that records its unions."""

    def __init__(self, names: list[str], depth: int = 0) -> None:
        self.names, self.depth = names, depth

    def unionByName(self, other: _Frame) -> _Frame:
        return _Frame(self.names + other.names, 1 + max(self.depth, other.depth))

    class sparkSession:  # as DataFrame.sparkSession.sparkContext is reached
        class sparkContext:
            defaultParallelism = 4

    def coalesce(self, partitions: int) -> tuple[_Frame, int]:
        return self, partitions


@pytest.mark.parametrize("count", [1, 2, 3, 7, 1000])
def test_a_batch_of_many_tables_is_one_union_of_little_depth(count: int) -> None:
    """One Kafka write per batch: every table's records, in order, in a tree Spark's
    analysis walks without a deep recursion."""
    names = [f"t{i}" for i in range(count)]
    union = balanced_union([_Frame([n]) for n in names])
    assert union.names == names
    assert union.depth == math.ceil(math.log2(count))


@pytest.mark.parametrize(
    ("rows", "tasks"),
    [(0, 4), (3, 4), (4 * ROWS_PER_TASK, 4), (4 * ROWS_PER_TASK + 1, 5), (10**7, 200)],
)
def test_a_batch_is_read_by_a_task_per_core_or_per_rows_per_task(rows: int, tasks: int) -> None:
    """A batch's union is read by as many tasks as cores, more only when each would make
    records of more than ROWS_PER_TASK rows; uncounted (-1), it is left as it is."""
    frame = _Frame(["t"])
    assert fewer_tasks(frame, rows) == (frame, tasks)
    assert fewer_tasks(frame, -1) is frame

"""The Kafka pipeline sink's options (no services needed)."""

from __future__ import annotations

import pytest

from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from sparkcdc.sinks.kafka.config import KafkaSinkConfig


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

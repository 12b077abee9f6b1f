"""JDBC sink for PostgreSQL and MySQL/MariaDB targets (see docs/sinks-jdbc.md).

``JdbcSink(JdbcSinkConfig.from_options({...}))``: batched upserts and deletes, one target
transaction per micro-batch that also records the batch id, so replays change nothing.
"""

from __future__ import annotations

from sparkcdc.sinks.jdbc_config import JdbcSinkConfig, JdbcUrl, TableName
from sparkcdc.sinks.jdbc_dialects import SinkError
from sparkcdc.sinks.jdbc_sink import JdbcSink

__all__ = ["JdbcSink", "JdbcSinkConfig", "JdbcUrl", "SinkError", "TableName"]

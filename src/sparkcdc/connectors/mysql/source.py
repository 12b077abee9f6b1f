"""The MySQL/MariaDB CDC source: the framework's driver over the MySQL dialect."""

from __future__ import annotations

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.dialect import MySqlDialect
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.snapshot.driver import IncrementalSource


class MySqlCdcSource(IncrementalSource[BinlogPosition, CapturedTable]):
    """``IncrementalSource(MySqlDialect(config))``, with the config at hand."""

    dialect: MySqlDialect

    def __init__(self, config: MySqlSourceConfig) -> None:
        super().__init__(MySqlDialect(config))

    @property
    def config(self) -> MySqlSourceConfig:
        return self.dialect.config

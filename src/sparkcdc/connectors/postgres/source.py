"""The PostgreSQL CDC source: the framework's driver over the PostgreSQL dialect."""

from __future__ import annotations

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.dialect import PostgresDialect
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.snapshot.driver import IncrementalSource


class PostgresCdcSource(IncrementalSource[LsnPosition, PgTable]):
    """``IncrementalSource(PostgresDialect(config))``, with the config at hand."""

    dialect: PostgresDialect

    def __init__(self, config: PostgresSourceConfig) -> None:
        super().__init__(PostgresDialect(config))

    @property
    def config(self) -> PostgresSourceConfig:
        return self.dialect.config

"""PostgreSQL connector: logical decoding (pgoutput) through a replication slot, MVCC
snapshots normalised by transaction visibility; wal/, snapshot/ and server/ parts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.connectors.postgres.config import (
    SPECS,
    PostgresSourceConfig,
    one_table_options,
    parse_config,
)

if TYPE_CHECKING:
    from sparkcdc.snapshot.dialect import Dialect


def _create(config: PostgresSourceConfig) -> Dialect[Any, Any]:
    from sparkcdc.connectors.postgres.dialect import PostgresDialect

    return PostgresDialect(config)


CONNECTOR = Connector(
    name="postgres",
    format="postgres-cdc",
    parse=parse_config,
    create=_create,
    one_table=one_table_options,
    specs=SPECS,
    namespace=lambda config: config.database,
)

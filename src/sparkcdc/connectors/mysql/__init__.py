"""MySQL / MariaDB connector: binlog/, snapshot/ and server/ parts, the dialect, the options."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.connectors.mysql.config import (
    SPECS,
    MySqlSourceConfig,
    one_table_options,
    parse_config,
)

if TYPE_CHECKING:
    from sparkcdc.snapshot.dialect import Dialect


def _create(config: MySqlSourceConfig) -> Dialect[Any, Any]:
    from sparkcdc.connectors.mysql.dialect import MySqlDialect

    return MySqlDialect(config)


CONNECTOR = Connector(
    name="mysql",
    format="mysql-cdc",
    parse=parse_config,
    create=_create,
    one_table=one_table_options,
    specs=SPECS,
)

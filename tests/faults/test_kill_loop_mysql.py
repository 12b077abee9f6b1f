"""The kill loop on Oracle's MySQL 8.0: pipelines MySQL 8.0 -> Delta through the native
writer (and through Spark's writer and -> PostgreSQL in the long form: those targets' kills
run from MariaDB in the short form, the native writer's upserts from here) under random
writes, ``sparkcdc run`` SIGKILLed again and again (``SPARKCDC_FAULT_KILLS``), then the
targets equal the source, ``verify`` agrees and delta-rs made the commits
(test_kill_loop.py's loop, with the MySQL server as source: GTID positions, watermark
chunks, caching_sha2_password)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.embedded import EmbeddedPostgres
from sparkcdc.embedded.binlog_server import BinlogServer
from tests.conftest import on_flavors
from tests.faults import test_kill_loop as loop
from tests.integration.test_mysql_source import orders

__all__ = ["orders"]  # the fixture, on the server below

mariadb = on_flavors("mysql8")


@pytest.mark.faults
@pytest.mark.timeout(600 + 120 * loop.KILLS)
@pytest.mark.parametrize(
    "sink", ["delta-native"] + (["delta", "jdbc-postgres"] if loop.KILLS > 2 else [])
)
def test_sigkill_on_mysql8_loses_and_repeats_nothing(
    spark: Any,
    mariadb: BinlogServer,
    orders: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop.test_sigkill_again_and_again_loses_and_repeats_nothing(
        spark, mariadb, orders, postgres, pg_db, None, "", scratch, sink, monkeypatch
    )

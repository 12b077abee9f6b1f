"""Checkpoints and the set of captured tables: odd database names survive a restart, and a
checkpointed table that disappears fails with the fix instead of a bare KeyError."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SchemaError
from sparkcdc.embedded import EmbeddedMariaDB
from tests.support.inprocess import run_batches


def source(mariadb: EmbeddedMariaDB, database: str, table: str) -> MySqlCdcSource:
    options = {
        **mariadb.source_options(),
        "database-name": database,
        "table-name": table,
        "server-id": "6100-6110",
    }
    return MySqlCdcSource(parse_config(options))


def test_a_dotted_database_name_survives_a_restart(mariadb: EmbeddedMariaDB) -> None:
    db = "sparkcdc.dotted"
    mariadb.execute(f"CREATE DATABASE `{db}`")
    try:
        mariadb.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
        mariadb.execute(f"INSERT INTO `{db}`.t VALUES (1, 1), (2, 2)")
        rows: list[dict[str, Any]] = []
        first = source(mariadb, r"sparkcdc\.dotted", "t")
        offset = run_batches(first, None, rows.extend)
        first.close()
        assert sorted(r["id"] for r in rows) == [1, 2]
        assert list(offset["tables"]) == ["sparkcdc\\.dotted.t"]

        mariadb.execute(f"UPDATE `{db}`.t SET v = 5 WHERE id = 2")
        restarted = source(mariadb, r"sparkcdc\.dotted", "t")  # as after a restart
        later: list[dict[str, Any]] = []
        run_batches(restarted, json.loads(json.dumps(offset)), later.extend)
        restarted.close()
        assert [(r["id"], r["v"], r["_change_type"]) for r in later] == [
            (2, 2, "update_preimage"),
            (2, 5, "update_postimage"),
        ]
    finally:
        mariadb.execute(f"DROP DATABASE `{db}`")


def test_a_dropped_checkpointed_table_fails_with_the_fix(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    for name in ("a", "b"):
        mariadb.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY)", database=mysql_db)
        mariadb.execute(f"INSERT INTO {name} VALUES (1)", database=mysql_db)
    first = source(mariadb, mysql_db, "a|b")
    offset = run_batches(first, None, lambda rows: None)
    first.close()
    mariadb.execute("DROP TABLE b", database=mysql_db)
    restarted = source(mariadb, mysql_db, "a|b")
    with pytest.raises(SchemaError, match=rf"captures {mysql_db}\.b, which .* no longer match"):
        restarted.latest_offset(offset, None)
    restarted.close()

"""Checkpoints and the set of captured tables: odd database names survive a restart, and a
checkpointed table dropped while the stream was stopped is followed up to its drop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SchemaError
from sparkcdc.embedded import EmbeddedMariaDB
from tests.support.inprocess import run_batches


def source(mariadb: EmbeddedMariaDB, database: str, table: str, **extra: str) -> MySqlCdcSource:
    options = {
        **mariadb.source_options(),
        "database-name": database,
        "table-name": table,
        "server-id": "6100-6110",
        **extra,
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


def test_a_table_dropped_while_stopped_is_followed_to_its_drop(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """A checkpointed table dropped while the stream was stopped is not on the server at
    the restart; the table options still match it, so its changes up to the drop are read
    with its columns from the checkpoint, and the drop stops the stream (naming the option)
    or, skipped, is a batch of its own after which the table is forgotten."""
    for name in ("a", "b"):
        mariadb.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY)", database=mysql_db)
        mariadb.execute(f"INSERT INTO {name} VALUES (1)", database=mysql_db)
    first = source(mariadb, mysql_db, "a|b")
    offset = run_batches(first, None, lambda rows: None)
    first.close()
    mariadb.execute("INSERT INTO b VALUES (2)", database=mysql_db)
    mariadb.execute("DROP TABLE b", database=mysql_db)
    restarted = source(mariadb, mysql_db, "a|b")
    with pytest.raises(SchemaError, match=rf"DROP of {mysql_db}\.b .*truncate\.handling\.mode"):
        restarted.latest_offset(offset, None)
    restarted.close()
    skipping = source(mariadb, mysql_db, "a|b", **{"truncate.handling.mode": "skip"})
    rows: list[dict[str, Any]] = []
    ends: list[Any] = []
    try:
        run_batches(skipping, offset, rows.extend, ends=ends)
    finally:
        skipping.close()
    assert [(r["table_name"], r["_change_type"]) for r in rows] == [("b", "insert")]
    assert "table_dropped" in ends[-2]["tables"][f"{mysql_db}.b"]["schema"]
    assert list(ends[-1]["tables"]) == [f"{mysql_db}.a"]

"""Tables without a primary key in a pattern (MariaDB): left out with a warning, at the start
and when created while the stream runs, never failing the tables around them.

Capturing them as multisets is designed (docs/design.md, "Tables without a primary key")
but not built; this checks what a pattern pipeline meets today.
"""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from functools import partial
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SchemaError, SourceConfigurationError
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.embedded.binlog_server import BinlogServer
from tests.support.inprocess import run_batches


def test_keyless_tables_never_fail_the_keyed_ones(
    mariadb: EmbeddedMariaDB, mysql_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A pattern matching a keyed and a keyless table, and a keyless table created while
    the stream runs (``scan.newly-added-table.enabled``): the keyed table replays to its
    source under random writes to all three, the keyless ones emit nothing and are named
    in one warning each."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE kept (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE kept_too (id INT PRIMARY KEY, a INT)")  # two: the shared envelope
    execute("CREATE TABLE log_a (a INT, b INT)")
    execute("INSERT INTO kept VALUES (1, 1), (2, 2), (3, 3)")
    execute("INSERT INTO log_a VALUES (1, 1), (1, 1), (2, 2)")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "kept|kept_too|log_.*",
        "server-id": "6300-6310",
        "scan.newly-added-table.enabled": "true",
    }
    state: dict[Any, Any] = {}
    seen_tables: set[str] = set()

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            seen_tables.add(r["table_name"])
            if r["table_name"] != "kept":
                continue
            if r["before"]:
                del state[json.loads(r["before"])["id"]]
            if r["after"]:
                image = json.loads(r["after"])
                state[image["id"]] = image["a"]

    rng = random.Random(64)

    def writes(_: int) -> None:
        for _ in range(5):
            key = rng.randrange(1, 12)
            execute(
                "INSERT INTO kept VALUES (%s, %s) ON DUPLICATE KEY UPDATE a = VALUES(a)",
                (key, rng.randrange(100)),
            )
            execute("DELETE FROM kept WHERE id = %s", (rng.randrange(1, 12),))
            execute("INSERT INTO log_a VALUES (%s, %s)", (rng.randrange(3), rng.randrange(3)))
            execute("DELETE FROM log_a WHERE a = %s LIMIT 1", (rng.randrange(3),))

    cdc = MySqlCdcSource(parse_config(options))
    try:
        with caplog.at_level(logging.WARNING, logger="sparkcdc.snapshot.keyless"):
            offset = run_batches(cdc, None, replay, between=writes, write_batches=3)
            execute("CREATE TABLE log_b (a INT)")
            execute("INSERT INTO log_b VALUES (1), (1)")
            execute("UPDATE kept SET a = -1 WHERE id = 1")
            offset = run_batches(cdc, offset, replay, between=writes, write_batches=3)
        assert state == dict(execute("SELECT id, a FROM kept"))
        assert seen_tables <= {"kept", "kept_too"}
        warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
        for name in ("log_a", "log_b"):
            assert any(f"table {mysql_db}.{name} has no primary key" in w for w in warned), warned
        assert all("'scan.incremental.snapshot.chunk.key-column'" in w for w in warned), warned
    finally:
        cdc.close()


def test_a_captured_table_that_lost_its_primary_key_fails_the_restart(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """Left out silently it would lose its changes since the checkpoint: the restart
    fails naming the table and the reason."""
    execute = partial(mariadb.execute, database=mysql_db)
    for name in ("t", "u"):
        execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, a INT)")
        execute(f"INSERT INTO {name} VALUES (1, 1), (2, 2)")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "t|u",
        "server-id": "6311-6320",
    }
    cdc = MySqlCdcSource(parse_config(options))
    try:
        offset = run_batches(cdc, None, lambda rows: None)
    finally:
        cdc.close()
    execute("ALTER TABLE t DROP PRIMARY KEY")
    restarted = MySqlCdcSource(parse_config(options))
    try:
        with pytest.raises(
            SchemaError,
            match=rf"table {mysql_db}\.t is captured by the checkpoint, but it has no primary key",
        ):
            run_batches(restarted, offset, lambda rows: None)
    finally:
        restarted.close()


def _multiset_replay(state: Counter[tuple[Any, ...]], rows: list[dict[str, Any]]) -> None:
    """Replay a batch into a multiset of (a, b, note) rows: every image counts once."""
    for r in sorted(rows, key=lambda r: r["_commit_version"]):
        if r["before"]:
            before = json.loads(r["before"])
            state[(before["a"], before["b"], before["note"])] -= 1
        if r["after"]:
            after = json.loads(r["after"])
            state[(after["a"], after["b"], after["note"])] += 1


@pytest.mark.parametrize("reader", ["native", "classic"])
def test_keyless_table_with_a_chunk_key_replays_as_a_multiset(
    mariadb: EmbeddedMariaDB, mysql_db: str, reader: str
) -> None:
    """A keyless table chunked by a non-unique column (chunks of 3 rows, one batch of 4
    rows at most) under random inserts, updates (moving rows between chunks) and deletes
    of one of two identical rows, between batches and between a batch's planning and its
    chunk reads (their log windows), with a restart from the checkpointed offset: the
    changelog replays to the table as a multiset, duplicates counted. A keyed table in the
    same pattern is captured alongside. Both chunk readers (the native one patches a
    partition, the classic one each chunk)."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE logs (a INT, b INT, note VARCHAR(10))")
    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    rng = random.Random(640)
    for _ in range(30):
        execute(
            "INSERT INTO logs VALUES (%s, %s, %s)",
            (rng.randrange(8), rng.randrange(3), rng.choice(["x", "y"])),
        )
    execute("INSERT INTO logs VALUES (1, 1, 'x'), (1, 1, 'x'), (NULL, 2, 'n'), (NULL, 2, 'n')")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "logs|keyed",
        "server-id": "6321-6330",
        "scan.incremental.snapshot.chunk.key-column": f"{mysql_db}.logs:a",
        "scan.incremental.snapshot.chunk.size": "3",
        "scan.snapshot.reader": reader,
    }

    def writes(_: int) -> None:
        for _ in range(4):
            a = rng.choice([None, *range(8)])
            row = (a, rng.randrange(3), rng.choice(["x", "y"]))
            execute("INSERT INTO logs VALUES (%s, %s, %s)", row)
            execute("INSERT INTO logs VALUES (%s, %s, %s)", row)  # a duplicate
            execute(
                "DELETE FROM logs WHERE a <=> %s AND b = %s LIMIT 1",
                (rng.choice([None, *range(8)]), rng.randrange(3)),
            )
            execute(  # moves rows to another chunk
                "UPDATE logs SET a = %s WHERE b = %s AND note = %s LIMIT 2",
                (rng.randrange(8), rng.randrange(3), rng.choice(["x", "y"])),
            )
            execute("UPDATE logs SET note = 'z' WHERE a = %s LIMIT 1", (rng.randrange(8),))
            execute(
                "INSERT INTO keyed VALUES (%s, %s) ON DUPLICATE KEY UPDATE a = a + 1",
                (rng.randrange(5), rng.randrange(9)),
            )

    state: Counter[tuple[Any, ...]] = Counter()
    tables: set[str] = set()

    def replay(rows: list[dict[str, Any]]) -> None:
        tables.update(r["table_name"] for r in rows)
        _multiset_replay(state, [r for r in rows if r["table_name"] == "logs"])

    cdc = MySqlCdcSource(parse_config(options))
    try:
        offset = run_batches(
            cdc, None, replay, max_rows=4, between=writes, after_planning=writes, write_batches=6
        )
    finally:
        cdc.close()
    writes(0)
    execute("DELETE FROM logs WHERE a = 1 AND b = 1 AND note = 'x' LIMIT 1")
    restarted = MySqlCdcSource(parse_config(options))
    try:
        run_batches(
            restarted,
            offset,
            replay,
            max_rows=4,
            between=writes,
            after_planning=writes,
            write_batches=4,
        )
    finally:
        restarted.close()
    table = Counter(execute("SELECT a, b, note FROM logs"))
    assert +state == table
    assert min(state.values()) >= 0, "a row removed more often than it was added"
    assert max(table.values()) > 1, "the table should hold duplicate rows"
    assert tables == {"logs", "keyed"}


@pytest.mark.parametrize("binlog_server", ["mysql8"], indirect=True)
def test_mysql_watermark_chunks_of_a_keyless_table(
    binlog_server: BinlogServer, flavor_db: str
) -> None:
    """MySQL places a chunk only by a watermark: a keyless chunk whose window no change
    touches is exact (duplicates, deletes of one of two identical rows, streamed after),
    and one a change touches fails naming the table and the option instead of guessing."""
    execute = partial(binlog_server.execute, database=flavor_db)
    execute("CREATE TABLE logs (a INT, b INT, note VARCHAR(10))")
    execute("INSERT INTO logs VALUES (1, 1, 'x'), (1, 1, 'x'), (2, 0, 'y'), (3, 1, 'x')")
    options = {
        **binlog_server.source_options(),
        "database-name": flavor_db,
        "table-name": "logs",
        "server-id": "6331-6340",
        "scan.incremental.snapshot.chunk.key-column": "a",
        "scan.incremental.snapshot.chunk.size": "2",
    }
    rng = random.Random(641)

    def writes(_: int) -> None:
        for _ in range(3):
            row = (rng.randrange(5), rng.randrange(2), rng.choice(["x", "y"]))
            execute("INSERT INTO logs VALUES (%s, %s, %s), (%s, %s, %s)", row + row)
            execute("DELETE FROM logs WHERE a = %s LIMIT 1", (rng.randrange(5),))
            execute("UPDATE logs SET a = %s WHERE a = %s LIMIT 1", (rng.randrange(5), 1))

    state: Counter[tuple[Any, ...]] = Counter()

    def replay(rows: list[dict[str, Any]]) -> None:  # a one-table stream: the table's columns
        for r in rows:
            gone = r["_change_type"] in ("delete", "update_preimage")
            state[(r["a"], r["b"], r["note"])] += -1 if gone else 1

    cdc = MySqlCdcSource(parse_config(options))
    try:
        run_batches(cdc, None, replay, max_rows=3, between=writes)
    finally:
        cdc.close()
    assert +state == Counter(execute("SELECT a, b, note FROM logs"))

    touched = MySqlCdcSource(parse_config({**options, "server-id": "6341-6350"}))
    try:
        with pytest.raises(SourceConfigurationError, match=r"scan\.snapshot\.consistency") as e:
            run_batches(touched, None, lambda rows: None, after_planning=writes)
        assert f"table {flavor_db}.logs has no primary key" in str(e.value)
    finally:
        touched.close()

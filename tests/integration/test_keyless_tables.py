"""Tables without a primary key (MariaDB, MySQL 8, PostgreSQL): captured as multisets of rows
with a chunk key column, or without one as one chunk while small (MariaDB, PostgreSQL)
(docs/design.md, "Tables without a primary key"), exact under writes inside the chunks' log
windows; the ones that cannot be captured are left out with a warning naming the fix, at
the start and when created while the stream runs, never failing the tables around them.
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
from sparkcdc.connectors.postgres.server.connection import connect
from sparkcdc.connectors.postgres.server.discovery import discover_tables
from sparkcdc.connectors.registry import connector
from sparkcdc.core.errors import SchemaError, SourceConfigurationError
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.embedded.binlog_server import BinlogServer
from tests.support.inprocess import run_batches


def test_keyless_tables_never_fail_the_keyed_ones(
    mariadb: EmbeddedMariaDB, mysql_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A pattern matching a keyed and a keyless table, and keyless tables created while
    the stream runs (``scan.newly-added-table.enabled``), two with no chunk key column and
    too large to read as one chunk (more rows than ``scan.incremental.snapshot.chunk.size``),
    one whose configured chunk key column it lacks: the keyed table replays to its source
    under random writes, the keyless ones emit nothing and are named in one warning each."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE kept (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE kept_too (id INT PRIMARY KEY, a INT)")  # two: the shared envelope
    execute("CREATE TABLE log_a (a INT, b INT)")
    execute("INSERT INTO kept VALUES (1, 1), (2, 2), (3, 3)")
    execute("INSERT INTO log_a VALUES (1, 1), (1, 1), (2, 2), (2, 2), (3, 3)")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "kept|kept_too|log_.*",
        "server-id": "6300-6310",
        "scan.newly-added-table.enabled": "true",
        "scan.incremental.snapshot.chunk.size": "3",
        "scan.incremental.snapshot.chunk.key-column": f"{mysql_db}.log_c:missing",
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
            execute("INSERT INTO log_b VALUES (1), (1), (2), (2)")
            execute("CREATE TABLE log_c (a INT)")
            execute("UPDATE kept SET a = -1 WHERE id = 1")
            offset = run_batches(cdc, offset, replay, between=writes, write_batches=3)
        assert state == dict(execute("SELECT id, a FROM kept"))
        assert seen_tables <= {"kept", "kept_too"}
        warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
        for name in ("log_a", "log_b", "log_c"):
            assert any(f"table {mysql_db}.{name} has no primary key" in w for w in warned), warned
        assert all("'scan.incremental.snapshot.chunk.key-column'" in w for w in warned), warned
        too_large = [w for w in warned if "at most 3 rows" in w]
        assert {w.split(" ")[1] for w in too_large} == {f"{mysql_db}.log_a", f"{mysql_db}.log_b"}
        assert any(f"table {mysql_db}.log_c has no such column" in w for w in warned), warned
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


@pytest.mark.parametrize("reader", ["native", "classic"])
def test_small_keyless_table_without_a_chunk_key_is_read_as_one_chunk(
    mariadb: EmbeddedMariaDB, mysql_db: str, reader: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Keyless tables with no chunk key column: one of at most
    ``scan.incremental.snapshot.chunk.size`` rows (with duplicates) is read as one chunk,
    one created while the stream runs too, one over the size is left out with the warning
    naming the chunk key option while the others flow. Random inserts, updates and deletes
    of one of two identical rows between batches and inside the chunk's log window; the
    batch that read the one chunk replayed after a restart (its commit lost); a restart
    after the table grew past the size keeps capturing it. The changelog replays to each
    captured table as a multiset."""
    execute = partial(mariadb.execute, database=mysql_db)
    for name in ("logs", "big"):
        execute(f"CREATE TABLE {name} (a INT, b INT, note VARCHAR(10))")
    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    rng = random.Random(642)
    for _ in range(30):
        execute("INSERT INTO logs VALUES (%s, %s, %s)", (rng.randrange(4), rng.randrange(3), "x"))
    execute("INSERT INTO logs VALUES (1, 1, 'x'), (1, 1, 'x'), (NULL, 2, 'n'), (NULL, 2, 'n')")
    execute("INSERT INTO big SELECT a, b, note FROM logs")
    execute("INSERT INTO big SELECT a, b, note FROM logs")  # 68 rows: over the size
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "logs|big|keyed|new_.*",
        "server-id": "6351-6360",
        "scan.newly-added-table.enabled": "true",
        "scan.incremental.snapshot.chunk.size": "50",
        "scan.snapshot.reader": reader,
    }
    keyless = ["logs"]

    def writes(_: int) -> None:
        for name in keyless:
            for _ in range(3):
                row = (rng.choice([None, *range(4)]), rng.randrange(3), rng.choice(["x", "y"]))
                execute(f"INSERT INTO {name} VALUES (%s, %s, %s), (%s, %s, %s)", row + row)
                execute(
                    f"DELETE FROM {name} WHERE a <=> %s AND b = %s LIMIT 1",
                    (rng.choice([None, *range(4)]), rng.randrange(3)),
                )
                execute(
                    f"UPDATE {name} SET a = %s, note = 'z' WHERE b = %s LIMIT 1",
                    (rng.randrange(4), rng.randrange(3)),
                )
        execute("INSERT INTO big VALUES (1, 1, 'x')")
        execute(
            "INSERT INTO keyed VALUES (%s, %s) ON DUPLICATE KEY UPDATE a = a + 1",
            (rng.randrange(5), rng.randrange(9)),
        )

    states: dict[str, Counter[tuple[Any, ...]]] = {}
    seen: set[str] = set()

    def replay(rows: list[dict[str, Any]]) -> None:
        seen.update(r["table_name"] for r in rows)
        for name in ("logs", "new_logs"):
            state = states.setdefault(name, Counter())
            _multiset_replay(state, [r for r in rows if r["table_name"] == name])

    batches: list[list[dict[str, Any]]] = []
    ends: list[Any] = []
    caplog.set_level(logging.WARNING, logger="sparkcdc.snapshot.keyless")
    cdc = MySqlCdcSource(parse_config(options))
    try:
        run_batches(
            cdc, None, batches.append, max_rows=4, after_planning=writes, ends=ends, batches=2
        )
    finally:
        cdc.close()
    for rows in batches[:-1]:  # the last batch's commit is lost: it is read again
        replay(rows)
    restarted = MySqlCdcSource(parse_config(options))
    try:
        offset = run_batches(
            restarted,
            ends[-2],
            replay,
            max_rows=4,
            between=writes,
            after_planning=writes,
            write_batches=3,
        )
        execute("CREATE TABLE new_logs (a INT, b INT, note VARCHAR(10))")
        keyless.append("new_logs")
        offset = run_batches(
            restarted, offset, replay, between=writes, after_planning=writes, write_batches=3
        )
    finally:
        restarted.close()
    execute("INSERT INTO logs SELECT a, b, note FROM big")  # grown past the size
    again = MySqlCdcSource(parse_config(options))
    try:
        run_batches(again, offset, replay, between=writes, after_planning=writes, write_batches=3)
    finally:
        again.close()
    for name in ("logs", "new_logs"):
        table = Counter(execute(f"SELECT a, b, note FROM {name}"))
        assert +states[name] == table, name
        assert min(states[name].values()) >= 0, f"{name}: a row removed more than added"
    assert max(Counter(execute("SELECT a, b, note FROM logs")).values()) > 1
    assert seen == {"logs", "new_logs", "keyed"}
    warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
    assert any(f"table {mysql_db}.big has no primary key" in w for w in warned), warned
    assert all("'scan.incremental.snapshot.chunk.key-column'" in w for w in warned), warned


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
        # a restart replays the same batch: the message names the ways out of it
        assert "start a new checkpoint" in str(e.value)
        assert "leave the table out of 'tables'" in str(e.value)
    finally:
        touched.close()


@pytest.mark.parametrize("binlog_server", ["mysql8", "mariadb"], indirect=True)
def test_watermark_chunks_never_read_a_keyless_table_as_one_chunk(
    binlog_server: BinlogServer, flavor_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Where chunks are placed by a watermark (MySQL under ``auto``, MariaDB under
    ``scan.snapshot.consistency`` ``watermark``), a small keyless table with no chunk key
    column is left out with a warning naming it and the fixes, as before one-chunk reads:
    read as one chunk, a write while it is read would fail the read, and a restart
    replays the same batch, failing forever. The pattern's keyed table streams, writes to
    both landing in the chunks' windows; a pattern matching only the keyless table is
    refused naming the fix. MariaDB's exact reader keeps reading it as one chunk
    (``test_small_keyless_table_without_a_chunk_key_is_read_as_one_chunk``)."""
    execute = partial(binlog_server.execute, database=flavor_db)
    execute("CREATE TABLE logs (a INT, b INT, note VARCHAR(10))")
    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    execute("INSERT INTO logs VALUES (1, 1, 'x'), (1, 1, 'x'), (2, 0, 'y'), (3, 1, 'x')")
    execute("INSERT INTO keyed VALUES (1, 1), (2, 2)")
    options = {
        **binlog_server.source_options(),
        "database-name": flavor_db,
        "table-name": "logs|keyed",
        "server-id": "6361-6370",
        "scan.envelope.enabled": "true",  # rows say their table: none is of logs
    }
    if binlog_server.flavor == "mariadb":
        options["scan.snapshot.consistency"] = "watermark"
    rng = random.Random(644)

    def writes(_: int) -> None:
        execute("INSERT INTO logs VALUES (%s, 1, 'x')", (rng.randrange(5),))
        execute("DELETE FROM logs WHERE a = %s LIMIT 1", (rng.randrange(5),))
        execute(
            "INSERT INTO keyed VALUES (%s, %s) ON DUPLICATE KEY UPDATE a = a + 1",
            (rng.randrange(5), rng.randrange(9)),
        )

    state: dict[Any, Any] = {}
    seen: set[str] = set()

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            seen.add(r["table_name"])
            if r["table_name"] != "keyed":
                continue
            if r["before"]:
                del state[json.loads(r["before"])["id"]]
            if r["after"]:
                image = json.loads(r["after"])
                state[image["id"]] = image["a"]

    caplog.set_level(logging.WARNING, logger="sparkcdc.snapshot.keyless")
    cdc = MySqlCdcSource(parse_config(options))
    try:
        run_batches(cdc, None, replay, max_rows=3, between=writes, after_planning=writes)
    finally:
        cdc.close()
    assert seen == {"keyed"}
    assert state == dict(execute("SELECT id, a FROM keyed"))
    warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
    assert any(f"table {flavor_db}.logs has no primary key" in w for w in warned), warned
    assert all("'scan.incremental.snapshot.chunk.key-column'" in w for w in warned), warned
    assert all("MariaDB" in w for w in warned), warned

    alone = MySqlCdcSource(parse_config({**options, "table-name": "logs"}))
    try:
        with pytest.raises(SchemaError, match=r"matches only tables without a primary key"):
            alone.arrow_schema()
    finally:
        alone.close()


def test_a_keyless_table_whose_count_waits_for_a_lock_is_left_out(
    mariadb: EmbeddedMariaDB, mysql_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Discovery counts a keyless table with no chunk key column to decide whether it is
    read as one chunk. One whose count waits for a lock held past the count's short lock
    wait (``LOCK TABLES ... WRITE`` in another session, as an ALTER would) is left out with
    a warning naming the error, while the pattern's other tables are captured and stream:
    neither a failure of every table nor planning held until the lock goes."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE logs (a INT)")
    execute("CREATE TABLE locked (a INT)")
    execute("INSERT INTO keyed VALUES (1, 1), (2, 2)")
    execute("INSERT INTO logs VALUES (1), (1)")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "keyed|logs|locked",
        "server-id": "6391-6399",
        "connect.timeout": "2s",  # the count waits at most half of it for a lock
    }
    seen: set[str] = set()

    def writes(_: int) -> None:
        execute("UPDATE keyed SET a = a + 1")

    caplog.set_level(logging.WARNING, logger="sparkcdc.snapshot.keyless")
    holder = mariadb.connect(database=mysql_db)
    try:
        with holder.cursor() as cur:
            cur.execute("LOCK TABLES locked WRITE")
        cdc = MySqlCdcSource(parse_config(options))
        try:
            run_batches(
                cdc,
                None,
                lambda rows: seen.update(r["table_name"] for r in rows),
                between=writes,
                write_batches=2,
            )
        finally:
            cdc.close()
    finally:
        holder.close()
    assert seen == {"keyed", "logs"}
    warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
    assert any(f"table {mysql_db}.locked has no primary key" in w for w in warned), warned
    assert any("error 1205" in w for w in warned), warned


def test_a_one_chunk_table_given_a_chunk_key_before_its_chunk_is_read_fails_the_restart(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """The checkpoint reads a small keyless table as one chunk, not read yet; a chunk key
    column named for it since would have planning plan key ranges where the checkpoint's
    batch reads one chunk (every task retry failing): the restart fails naming the table,
    the option and the way out. Once its one chunk is read, the restart goes on."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE logs (a INT, b INT)")
    execute("INSERT INTO keyed VALUES (1, 1)")
    execute("INSERT INTO logs VALUES (1, 1), (1, 1), (2, 2)")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "keyed|logs",
        "server-id": "6401-6410",
    }
    keyed_now = {**options, "scan.incremental.snapshot.chunk.key-column": f"{mysql_db}.logs:a"}
    cdc = MySqlCdcSource(parse_config(options))
    try:
        start = cdc.initial_offset()
        read = run_batches(cdc, start, lambda rows: None)
    finally:
        cdc.close()
    restarted = MySqlCdcSource(parse_config(keyed_now))
    try:
        with pytest.raises(
            SchemaError, match=r"scan\.incremental\.snapshot\.chunk\.key-column"
        ) as e:
            restarted.latest_offset(start, None)
        assert f"table {mysql_db}.logs is read as one chunk by the checkpoint" in str(e.value)
        assert "start a new checkpoint" in str(e.value)
        execute("INSERT INTO logs VALUES (3, 3)")
        seen: set[str] = set()
        run_batches(restarted, read, lambda rows: seen.update(r["table_name"] for r in rows))
        assert seen == {"logs"}
    finally:
        restarted.close()


def _postgres_source(postgres: EmbeddedPostgres, database: str, **extra: str) -> Any:
    found = connector("postgres")
    options = {
        "hostname": postgres.host,
        "port": str(postgres.port),
        "username": postgres.user,
        "password": postgres.password,
        "database-name": database,
        "schema-name": "public",
        "slot.name": f"s_{database[-6:]}",
        **extra,
    }
    return found.source(found.parse_config(options))


def test_postgres_keyless_table_replays_as_a_multiset(
    postgres: EmbeddedPostgres, pg_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL: a keyless ``REPLICA IDENTITY FULL`` table chunked by a non-unique column
    (chunks of 3 rows, batches of 4 rows at most) under random inserts of duplicates,
    updates moving rows between chunks and deletes of one of two identical rows (by
    ``ctid``: no DELETE ... LIMIT), between batches and between a batch's planning and its
    chunk reads (the changes then lie in the reads' visibility windows), with a restart:
    the changelog replays to the table as a multiset, the keyed table of the pattern is
    captured alongside. Keyless tables without a chunk key column and too large to read
    as one chunk, or without FULL, are left out, each with a warning naming its fix, and
    kept out of the publication; under
    ``changelog-mode: upsert`` the keyless table is left out naming FULL and
    ``changelog-mode: all``."""

    def execute(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return postgres.execute(sql, args, dbname=pg_db)

    # the defaults: a removal is matched by all values, snapshot and WAL decoded alike
    execute(
        "CREATE TABLE logs (a INT NOT NULL, b INT, note TEXT, "
        "at TIMESTAMPTZ DEFAULT '2024-01-02 03:04:05.678901+00', n NUMERIC(6, 2) DEFAULT 1.50)"
    )
    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE log_nochunk (v INT)")
    execute("CREATE TABLE log_default (a INT NOT NULL)")  # REPLICA IDENTITY DEFAULT
    for name in ("logs", "keyed", "log_nochunk"):
        execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    execute("INSERT INTO log_nochunk VALUES (1), (1), (2), (3)")  # over the chunk size
    rng = random.Random(642)
    for _ in range(30):
        execute(
            "INSERT INTO logs (a, b, note) VALUES (%s, %s, %s)",
            (rng.randrange(8), rng.randrange(3), rng.choice(["x", "y"])),
        )
    execute(
        "INSERT INTO logs (a, b, note) "
        "VALUES (1, 1, 'x'), (1, 1, 'x'), (2, NULL, 'n'), (2, NULL, 'n')"
    )
    options = {
        "table-name": "logs|keyed|log_.*",
        "scan.incremental.snapshot.chunk.key-column": "public.logs:a;public.log_default:a",
        "scan.incremental.snapshot.chunk.size": "3",
    }
    one = "SELECT ctid FROM logs WHERE {} LIMIT 1"  # no DELETE ... LIMIT in PostgreSQL
    same_a_b = "a = %s AND b IS NOT DISTINCT FROM %s"

    def writes(_: int) -> None:
        for _ in range(4):
            row = (rng.randrange(8), rng.choice([None, 0, 1, 2]), rng.choice(["x", "y"]))
            execute("INSERT INTO logs (a, b, note) VALUES (%s, %s, %s), (%s, %s, %s)", row + row)
            execute(
                f"DELETE FROM logs WHERE ctid = ({one.format(same_a_b)})",
                (rng.randrange(8), rng.choice([None, 0, 1, 2])),
            )
            execute(  # moves rows to another chunk
                "UPDATE logs SET a = %s WHERE ctid IN "
                "(SELECT ctid FROM logs WHERE b = %s AND note = %s LIMIT 2)",
                (rng.randrange(8), rng.randrange(3), rng.choice(["x", "y"])),
            )
            execute(
                f"UPDATE logs SET note = 'z' WHERE ctid = ({one.format('a = %s')})",
                (rng.randrange(8),),
            )
            execute(
                "INSERT INTO keyed VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET a = keyed.a + 1",
                (rng.randrange(5), rng.randrange(9)),
            )

    state: Counter[tuple[Any, ...]] = Counter()
    tables: set[str] = set()

    def replay(rows: list[dict[str, Any]]) -> None:
        tables.update(r["table_name"] for r in rows)
        _multiset_replay(state, [r for r in rows if r["table_name"] == "logs"])

    slot = f"s_{pg_db[-6:]}"
    try:
        with caplog.at_level(logging.WARNING, logger="sparkcdc.snapshot.keyless"):
            cdc = _postgres_source(postgres, pg_db, **options)
            try:
                offset = run_batches(
                    cdc,
                    None,
                    replay,
                    max_rows=4,
                    between=writes,
                    after_planning=writes,
                    write_batches=6,
                )
            finally:
                cdc.close()
        warned = {
            r.getMessage().split(" ")[1]: r.getMessage()
            for r in caplog.records
            if r.name == "sparkcdc.snapshot.keyless"
        }
        assert set(warned) == {"public.log_nochunk", "public.log_default"}, warned
        assert "'scan.incremental.snapshot.chunk.key-column'" in warned["public.log_nochunk"]
        assert (
            'ALTER TABLE "public"."log_default" REPLICA IDENTITY FULL;'
            in warned["public.log_default"]
        )
        published = execute("SELECT tablename FROM pg_publication_tables ORDER BY tablename")
        assert [name for (name,) in published] == ["keyed", "logs"]
        execute("UPDATE log_default SET a = 2")  # the server still takes its updates
        writes(0)
        execute(
            f"DELETE FROM logs WHERE ctid = ({one.format('a = 1 AND b = 1 AND note = %s')})", ("x",)
        )
        restarted = _postgres_source(postgres, pg_db, **options)
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

        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparkcdc.snapshot.keyless"):
            upsert = _postgres_source(postgres, pg_db, **options, **{"changelog-mode": "upsert"})
            try:
                assert [str(t) for t in upsert.catalog.tables] == ["public.keyed"]
            finally:
                upsert.close()
        said = "\n".join(r.getMessage() for r in caplog.records)
        assert "table public.logs has no primary key: not captured (changelog-mode: upsert" in said
        assert "REPLICA IDENTITY FULL" in said and "changelog-mode: all" in said
    finally:
        execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (slot,),
        )


def test_postgres_small_keyless_table_without_a_chunk_key_is_read_as_one_chunk(
    postgres: EmbeddedPostgres, pg_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL: a ``REPLICA IDENTITY FULL`` keyless table with no chunk key column and at
    most ``scan.incremental.snapshot.chunk.size`` rows is read as one chunk (duplicates,
    random inserts, updates and deletes of one of two identical rows between batches and
    inside its visibility window); the batch that read it replayed after a restart; a
    keyless table created while the stream runs is captured once FULL; one over the size
    is left out with the warning naming the chunk key option while the others flow; a
    restart after the table grew past the size keeps capturing it. The changelog replays
    to each captured table as a multiset."""

    def execute(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return postgres.execute(sql, args, dbname=pg_db)

    for name in ("logs", "big"):
        execute(f"CREATE TABLE {name} (a INT, b INT, note TEXT)")
    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    for name in ("logs", "big", "keyed"):
        execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    rng = random.Random(643)
    for _ in range(30):
        execute("INSERT INTO logs VALUES (%s, %s, 'x')", (rng.randrange(4), rng.randrange(3)))
    execute("INSERT INTO logs VALUES (1, 1, 'x'), (1, 1, 'x'), (NULL, 2, 'n'), (NULL, 2, 'n')")
    execute("INSERT INTO big SELECT a, b, note FROM logs")
    execute("INSERT INTO big SELECT a, b, note FROM logs")  # 68 rows: over the size
    options = {
        "table-name": "logs|big|keyed|new_.*",
        "scan.newly-added-table.enabled": "true",
        "scan.incremental.snapshot.chunk.size": "50",
        "scan.incremental.snapshot.chunk.key-column": "public.new_nullable:a",
    }
    keyless = ["logs"]

    def writes(_: int) -> None:
        for name in keyless:
            one = f"SELECT ctid FROM {name} WHERE {{}} LIMIT 1"  # no DELETE ... LIMIT
            for _ in range(3):
                row = (rng.choice([None, *range(4)]), rng.randrange(3), rng.choice(["x", "y"]))
                execute(f"INSERT INTO {name} VALUES (%s, %s, %s), (%s, %s, %s)", row + row)
                execute(
                    f"DELETE FROM {name} WHERE ctid = "
                    f"({one.format('a IS NOT DISTINCT FROM %s AND b = %s')})",
                    (rng.choice([None, *range(4)]), rng.randrange(3)),
                )
                execute(
                    f"UPDATE {name} SET a = %s, note = 'z' WHERE ctid = ({one.format('b = %s')})",
                    (rng.randrange(4), rng.randrange(3)),
                )
        execute("INSERT INTO big VALUES (1, 1, 'x')")
        execute(
            "INSERT INTO keyed VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET a = keyed.a + 1",
            (rng.randrange(5), rng.randrange(9)),
        )

    states: dict[str, Counter[tuple[Any, ...]]] = {}
    seen: set[str] = set()

    def replay(rows: list[dict[str, Any]]) -> None:
        seen.update(r["table_name"] for r in rows)
        for name in ("logs", "new_logs"):
            state = states.setdefault(name, Counter())
            _multiset_replay(state, [r for r in rows if r["table_name"] == name])

    slot = f"s_{pg_db[-6:]}"
    batches: list[list[dict[str, Any]]] = []
    ends: list[Any] = []
    caplog.set_level(logging.WARNING, logger="sparkcdc.snapshot.keyless")
    try:
        cdc = _postgres_source(postgres, pg_db, **options)
        try:
            run_batches(
                cdc, None, batches.append, max_rows=4, after_planning=writes, ends=ends, batches=2
            )
        finally:
            cdc.close()
        for rows in batches[:-1]:  # the last batch's commit is lost: it is read again
            replay(rows)
        restarted = _postgres_source(postgres, pg_db, **options)
        try:
            offset = run_batches(
                restarted,
                ends[-2],
                replay,
                max_rows=4,
                between=writes,
                after_planning=writes,
                write_batches=3,
            )
            execute("CREATE TABLE new_logs (a INT, b INT, note TEXT)")
            execute("ALTER TABLE new_logs REPLICA IDENTITY FULL")
            execute("CREATE TABLE new_nullable (a INT)")  # its chunk key column may be NULL
            execute("ALTER TABLE new_nullable REPLICA IDENTITY FULL")
            keyless.append("new_logs")
            offset = run_batches(
                restarted, offset, replay, between=writes, after_planning=writes, write_batches=3
            )
        finally:
            restarted.close()
        execute("INSERT INTO logs SELECT a, b, note FROM big")  # grown past the size
        again = _postgres_source(postgres, pg_db, **options)
        try:
            run_batches(
                again, offset, replay, between=writes, after_planning=writes, write_batches=3
            )
        finally:
            again.close()
        for name in ("logs", "new_logs"):
            table = Counter(execute(f"SELECT a, b, note FROM {name}"))
            assert +states[name] == table, name
            assert min(states[name].values()) >= 0, f"{name}: a row removed more than added"
        assert max(Counter(execute("SELECT a, b, note FROM logs")).values()) > 1
        assert seen == {"logs", "new_logs", "keyed"}
        warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
        assert any("table public.big has no primary key" in w for w in warned), warned
        assert any("table public.new_nullable has no primary key" in w for w in warned), warned
        assert any("chunk key column 'a' may be NULL" in w for w in warned), warned
        assert all("'scan.incremental.snapshot.chunk.key-column'" in w for w in warned), warned
        published = execute("SELECT tablename FROM pg_publication_tables ORDER BY tablename")
        assert [name for (name,) in published] == ["keyed", "logs", "new_logs"]
    finally:
        execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (slot,),
        )


def test_postgres_keyless_table_whose_count_waits_for_a_lock_is_left_out(
    postgres: EmbeddedPostgres, pg_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL: discovery counts a FULL keyless table with no chunk key column to decide
    whether it is read as one chunk; one whose count waits for a lock held past the count's
    short ``lock_timeout`` (an ACCESS EXCLUSIVE lock in another session, as an ALTER TABLE
    takes) is left out with a warning naming the error, and the other tables are captured,
    instead of discovery failing or waiting."""

    def execute(sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return postgres.execute(sql, args, dbname=pg_db)

    execute("CREATE TABLE keyed (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE logs (a INT)")
    execute("CREATE TABLE locked (a INT)")
    for name in ("keyed", "logs", "locked"):
        execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    execute("INSERT INTO logs VALUES (1), (1)")
    config = connector("postgres").parse_config(
        {
            "hostname": postgres.host,
            "port": str(postgres.port),
            "username": postgres.user,
            "password": postgres.password,
            "database-name": pg_db,
            "schema-name": "public",
            "slot.name": f"s_{pg_db[-6:]}",  # never made: discovery alone runs
            "table-name": "keyed|logs|locked",
            "connect.timeout": "2s",  # the count waits at most half of it for a lock
        }
    )
    caplog.set_level(logging.WARNING, logger="sparkcdc.snapshot.keyless")
    holder = postgres.connect(pg_db)
    conn = connect(config)
    try:
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE locked IN ACCESS EXCLUSIVE MODE")
        found = discover_tables(conn, config)  # discovery's tables, as the dialect's
    finally:
        conn.close()
        holder.close()
    assert sorted(t.table_id.table for t in found) == ["keyed", "logs"]
    warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
    assert any("table public.locked has no primary key" in w for w in warned), warned
    assert any("SQLSTATE 55P03" in w for w in warned), warned


def test_postgres_keyless_table_whose_column_change_needs_a_re_read_stops_the_stream(
    postgres: EmbeddedPostgres, pg_db: str
) -> None:
    """An ADD COLUMN with a DEFAULT fills the rows with values the WAL does not carry, so
    a keyed table's rows are read again as upserts; a keyless table's re-read would be one
    more copy of each row, so the stream stops there, saying what to do."""

    def execute(sql: str) -> Any:
        return postgres.execute(sql, dbname=pg_db)

    execute("CREATE TABLE logs (a INT NOT NULL, b INT)")
    execute("CREATE TABLE keyed (id INT PRIMARY KEY)")
    for name in ("logs", "keyed"):
        execute(f"ALTER TABLE {name} REPLICA IDENTITY FULL")
    execute("INSERT INTO logs VALUES (1, 1), (1, 1), (2, 2)")
    options = {
        "table-name": "logs|keyed",
        "scan.incremental.snapshot.chunk.key-column": "public.logs:a",
    }
    try:
        cdc = _postgres_source(postgres, pg_db, **options)
        try:
            offset = run_batches(cdc, None, lambda rows: None)
        finally:
            cdc.close()
        execute("ALTER TABLE logs ADD COLUMN c INT DEFAULT 7")
        execute("INSERT INTO logs VALUES (3, 3)")
        cdc = _postgres_source(postgres, pg_db, **options)
        try:
            with pytest.raises(SchemaError, match=r"public\.logs has no primary key"):
                run_batches(cdc, offset, lambda rows: None)
        finally:
            cdc.close()
    finally:
        postgres.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (f"s_{pg_db[-6:]}",),
            dbname=pg_db,
        )

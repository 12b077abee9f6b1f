"""The native (C, libmariadb -> Arrow buffers) snapshot reader: the same values as the classic
reader for every type, normalisation to any target position, bounded batches, and a lost
connection is an error, never a short read; and the replay invariant under concurrent writes
for both readers."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import current_position
from sparkcdc.connectors.mysql.config import MySqlSourceConfig, parse_config
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.snapshot import consistent
from sparkcdc.connectors.mysql.snapshot.native_reader import connect_native, read_chunks_native
from sparkcdc.connectors.mysql.snapshot.reader import reader_for
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.rows import Row
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.snapshot.chunks import Chunk
from tests.integration import test_mysql_types_roundtrip as types
from tests.integration.test_mysql_source import (  # noqa: F401  (orders is a fixture)
    orders,
    replay_stream,
    source_options,
)
from tests.support.changelog import ChangelogReplayer
from tests.support.mariadb_writes import mariadb_writer, table_state


def _config(mariadb: EmbeddedMariaDB, db: str, table: str, **extra: str) -> MySqlSourceConfig:
    return parse_config(
        {**mariadb.source_options(), "database-name": db, "table-name": table, **extra}
    )


def _captured(config: MySqlSourceConfig) -> CapturedTable:
    source = MySqlCdcSource(config)
    try:
        return next(iter(source.tables.values()))
    finally:
        source.close()


def _read(config: MySqlSourceConfig) -> pa.Table:
    """The whole table through MySqlCdcSource.read (what a Spark worker runs), sorted."""
    source = MySqlCdcSource(config)
    try:
        batches = [b for spec in source.snapshot_partitions() for b in source.read(spec)]
        schema = source.arrow_schema()
    finally:
        source.close()
    table = pa.Table.from_batches(batches, schema=schema)
    return table.drop_columns(["_commit_timestamp", "_commit_version"]).sort_by("id")


def _position(mariadb: EmbeddedMariaDB) -> BinlogPosition:
    file, pos = types.binlog_position(mariadb)
    return BinlogPosition(file, pos)


def test_native_reader_equals_the_classic_reader_for_every_type(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """Extremes, NULLs, zero dates, negative TIME, DECIMAL(65), BIT, spatial, latin1, emoji:
    the native reader gives the classic reader's Arrow columns and the written values."""
    mariadb.execute(types.DDL, database=mysql_db)
    for row_id in sorted(types.INSERTS):
        types.insert(mariadb, mysql_db, types.INSERTS[row_id][0])
    native = _config(mariadb, mysql_db, "all_types", **{"scan.snapshot.reader": "native"})
    classic = _config(mariadb, mysql_db, "all_types", **{"scan.snapshot.reader": "classic"})
    assert reader_for(_config(mariadb, mysql_db, "all_types")) == "native"
    assert reader_for(classic) == "classic"

    expected = _read(classic)
    assert expected.num_rows == len(types.INSERTS)
    got = _read(native)
    for name in expected.schema.names:  # column by column: a failure names the column
        assert got.column(name).equals(expected.column(name)), name
    for row in got.to_pylist():
        want = types.INSERTS[row["id"]][1]
        assert {n: row[n] for n in types.COLUMNS} == {n: want[n] for n in types.COLUMNS}

    # TIMESTAMP is rendered in the session zone: the reader must not depend on the server's
    mariadb.execute("SET GLOBAL time_zone = '+05:00'")
    try:
        assert _read(native).equals(expected)
    finally:
        mariadb.execute("SET GLOBAL time_zone = 'SYSTEM'")


def _state(mariadb: EmbeddedMariaDB, db: str) -> dict[int, Row]:
    return {r[0]: tuple(r) for r in mariadb.execute("SELECT id, v, n FROM w", database=db)}


def _rows(batches: Any) -> dict[int, Row]:
    rows = [r for b in batches for r in b.canonical()]
    by_key = {r[0]: tuple(r) for r in rows}
    assert len(by_key) == len(rows), "duplicate keys"
    return by_key


@pytest.mark.parametrize(
    "chunks",
    [(Chunk(None, None),), (Chunk(None, 30), Chunk(30, 60)), (Chunk(None, 20), Chunk(40, 60))],
    ids=["whole", "contiguous", "gap"],
)
def test_partitions_normalise_to_earlier_and_later_targets(
    mariadb: EmbeddedMariaDB, mysql_db: str, chunks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read after all writes, normalised back to each earlier position (backward rule); and
    with the snapshot reported at the first position, forward to the last one (the window's
    changes are then already in the rows: applying them again must change nothing)."""
    db = mysql_db
    mariadb.execute("CREATE TABLE w (id BIGINT PRIMARY KEY, v VARCHAR(20), n INT)", database=db)
    with mariadb.connect(db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO w VALUES (%s, %s, %s)", [(i, f"r{i}", i) for i in range(50)])
        conn.commit()

    def write(*statements: str) -> tuple[BinlogPosition, dict[int, Row]]:
        with mariadb.connect(db) as conn, conn.cursor() as cur:
            for sql in statements:
                cur.execute(sql)
            conn.commit()
        return _position(mariadb), _state(mariadb, db)

    history = [
        write(),
        write("UPDATE w SET v = 'a' WHERE id = 1", "DELETE FROM w WHERE id = 2"),
        write("UPDATE w SET id = 104 WHERE id = 4", "INSERT INTO w VALUES (55, 'in', 1)"),
        write("DELETE FROM w WHERE id = 25", "UPDATE w SET id = 25 WHERE id = 45"),
        write("UPDATE w SET id = 2 WHERE id = 104", "UPDATE w SET n = 7 WHERE id = 7"),
    ]
    config = _config(mariadb, db, "w", **{"scan.snapshot.reader": "native"})
    table = _captured(config)

    def in_partition(key: int) -> bool:
        return any((c.lo is None or key >= c.lo) and (c.hi is None or key < c.hi) for c in chunks)

    for target, state in history:
        got = _rows(read_chunks_native(config, table, chunks, target, 6101, 7))
        assert got == {k: v for k, v in state.items() if in_partition(k)}, f"target {target}"

    first, (last, final) = history[0][0], history[-1]
    monkeypatch.setattr(consistent, "snapshot_position", lambda _conn: first)
    got = _rows(read_chunks_native(config, table, chunks, last, 6102, 7))
    assert got == {k: v for k, v in final.items() if in_partition(k)}


def test_batches_are_bounded_and_pass_through_as_arrow(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    mariadb.execute("CREATE TABLE w (id BIGINT PRIMARY KEY, v VARCHAR(20))", database=mysql_db)
    mariadb.execute(
        "INSERT INTO w SELECT seq, CONCAT('v', seq) FROM seq_1_to_1000", database=mysql_db
    )
    config = _config(mariadb, mysql_db, "w", **{"scan.snapshot.reader": "native"})
    table = _captured(config)
    source = MySqlCdcSource(config)
    try:
        target = current_position(source.dialect.conn)
    finally:
        source.close()
    chunks = (Chunk(None, 500), Chunk(500, None))
    out = list(read_chunks_native(config, table, chunks, target, 6103, 300))
    assert [c.num_rows for c in out] == [300, 300, 300, 100]
    assert all(c.columns is not None for c in out)  # no Python rows: nothing to patch
    assert sorted(_rows(out)) == list(range(1, 1001))


def test_a_connection_lost_mid_read_is_an_error(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    """A killed session ends the stream with an error, never as a silently short result."""
    from sparkcdc.connectors.mysql.snapshot import _mysqlarrow

    mariadb.execute("CREATE TABLE big (id BIGINT PRIMARY KEY, v CHAR(200))", database=mysql_db)
    mariadb.execute(
        "INSERT INTO big SELECT seq, REPEAT('x', 200) FROM seq_1_to_200000", database=mysql_db
    )
    config = _config(mariadb, mysql_db, "big")
    conn = connect_native(config)
    try:
        _, ((session,),) = conn.raw.query("SELECT CONNECTION_ID()")
        result = conn.raw.stream(f"SELECT id, v FROM `{mysql_db}`.big", (4, 12), (0, 0), 1000)
        rows, _ = next(result)
        assert rows == 1000
        killer = threading.Thread(target=mariadb.execute, args=(f"KILL {session}",))
        killer.start()
        killer.join()
        with pytest.raises(_mysqlarrow.Error):
            for _ in result:
                pass
    finally:
        conn.close()


def test_wrong_password_is_a_clear_error_without_the_secret(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    options = {**mariadb.source_options(), "password": "not-the-Secret-42"}
    config = parse_config({**options, "database-name": mysql_db, "table-name": "w"})
    with pytest.raises(Exception, match="cannot log in") as failure:
        connect_native(config)
    assert "not-the-Secret-42" not in str(failure.value)


@pytest.mark.parametrize("reader", ["native", "classic"])
def test_concurrent_writes_replay_to_the_source_with_every_reader(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,  # noqa: F811
    scratch: Path,
    reader: str,
) -> None:
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"])
    writer = mariadb_writer(mariadb, orders, seed=11, key_space=7000)
    options = source_options(
        mariadb, orders, maxRowsPerTrigger="500", **{"scan.snapshot.reader": reader}
    )
    writer.start()
    try:
        sizes = replay_stream(spark, options, scratch / "ckpt", replayer)
        assert len(sizes) >= 4
    finally:
        writer.stop()
    assert writer.transactions > 50
    replay_stream(spark, options, scratch / "ckpt", replayer)
    assert replayer.state == table_state(mariadb, orders, "orders")


#: The child of the close-race test: a thread waits inside the C reader (in the query, or
#: in the next batch's rows) while the main thread closes the connection. The close used to
#: free the handle under the reading thread (a crash, or rows read from freed memory).
CLOSE_RACE_CHILD = """
import json, os, threading, time
from sparkcdc.connectors.mysql.snapshot import _mysqlarrow

server = json.loads(os.environ["SPARKCDC_TEST_SERVER"])
login = (server["host"], server["port"], server["user"], server["password"])
watch = _mysqlarrow.Connection(*login)
SLEEPING = "FROM information_schema.PROCESSLIST WHERE STATE = 'User sleep'"
queries = {  # name: (sql, column kinds): int64
    "query": ("SELECT SLEEP(20)", (4,)),
    "rows": ("SELECT n, SLEEP(n * 20) FROM (SELECT 0 AS n UNION ALL SELECT 1) AS t", (4, 4)),
}
for name, (sql, kinds) in queries.items():
    conn = _mysqlarrow.Connection(*login)
    errors = []

    def read():
        try:
            for _ in conn.stream(sql, kinds, (0,) * len(kinds), 10):
                pass
        except _mysqlarrow.Error as exc:
            errors.append(list(exc.args))

    reader = threading.Thread(target=read)
    reader.start()
    # until the server sleeps: the reader waits on the network, inside the C code
    while reader.is_alive() and not watch.query("SELECT 1 " + SLEEPING)[1]:
        time.sleep(0.01)
    conn.close()
    reader.join()
    try:
        conn.query("SELECT 1")
    except _mysqlarrow.Error as exc:
        errors.append(list(exc.args))
    conn.close()  # twice: a no-op
    print(json.dumps([name, errors]))
    for (session,) in watch.query("SELECT ID " + SLEEPING)[1]:  # the abandoned sleep
        watch.query("KILL QUERY " + session)
"""


def test_close_from_another_thread_fails_the_read_and_frees_nothing_in_use(
    mariadb: EmbeddedMariaDB,
) -> None:
    """close() while another thread is inside the C reader with the GIL released makes that
    read fail with the "closed" error; the handle is freed only when the reader is out."""
    import json
    import os
    import subprocess
    import sys

    options = mariadb.source_options()
    server = {
        "host": options["hostname"],
        "port": int(options["port"]),
        "user": options["username"],
        "password": options["password"],
    }
    child = subprocess.run(
        [sys.executable, "-c", CLOSE_RACE_CHILD],
        env={**os.environ, "SPARKCDC_TEST_SERVER": json.dumps(server)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    closed = [2006, "the connection is closed"]
    outcomes = [json.loads(line) for line in child.stdout.splitlines()]
    assert outcomes == [["query", [closed, closed]], ["rows", [closed, closed]]]


@pytest.fixture(scope="module")
def decimal_comma_locale(tmp_path_factory: pytest.TempPathFactory) -> str:
    """LOCPATH of a compiled de_DE.UTF-8 (decimal comma), built with localedef from the
    Debian ``locales`` sources (scripts/bootstrap.sh installs them)."""
    import subprocess

    path = tmp_path_factory.mktemp("locales")
    built = subprocess.run(
        ["localedef", "-i", "de_DE", "-f", "UTF-8", str(path / "de_DE.UTF-8")],
        capture_output=True,
        text=True,
    )
    assert (path / "de_DE.UTF-8").is_dir(), (
        f"cannot build the de_DE locale ({built.stderr.strip()}): apt-get install locales"
    )
    return str(path)


def test_numbers_parse_the_same_under_a_decimal_comma_locale(
    mariadb: EmbeddedMariaDB, mysql_db: str, decimal_comma_locale: str
) -> None:
    """The server's number text always has a '.'; strtod follows LC_NUMERIC, which a
    library or user code may set to a decimal-comma locale: the C reader parses under "C"."""
    import locale
    import os
    from decimal import Decimal

    config = _config(mariadb, mysql_db, "w")
    conn = connect_native(config)
    sql = (
        "SELECT CAST(1.5 AS DOUBLE), CAST(-0.00225 AS DOUBLE), CAST(1.25e300 AS DOUBLE), "
        "CAST(-12.345 AS DECIMAL(10, 3))"
    )
    before = os.environ.get("LOCPATH")
    os.environ["LOCPATH"] = decimal_comma_locale
    try:
        locale.setlocale(locale.LC_NUMERIC, "de_DE.UTF-8")
        assert locale.localeconv()["decimal_point"] == ","
        ((rows, columns),) = list(conn.raw.stream(sql, (9, 8, 9, 7), (0, 0, 0, 3), 10))
    finally:
        locale.setlocale(locale.LC_NUMERIC, "C")
        if before is None:
            del os.environ["LOCPATH"]
        else:
            os.environ["LOCPATH"] = before
        conn.close()
    types = (pa.float64(), pa.float32(), pa.float64(), pa.decimal128(10, 3))
    values = [
        pa.Array.from_buffers(
            t, rows, [None if v is None else pa.py_buffer(v), pa.py_buffer(d)]
        ).to_pylist()[0]
        for t, (v, d, _) in zip(types, columns, strict=True)
    ]
    assert values == [1.5, pa.scalar(-0.00225, pa.float32()).as_py(), 1.25e300, Decimal("-12.345")]

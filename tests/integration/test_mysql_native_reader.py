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

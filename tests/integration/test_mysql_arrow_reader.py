"""The connectorx (Arrow) snapshot reader: same values as the classic reader for every type
it takes, exact normalisation of changes inside its low/high watermark window, fallback to
the classic reader, and the replay invariant with concurrent writes for both readers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql import arrow_reader
from sparkcdc.connectors.mysql.arrow_reader import ArrowReadError, read_chunks_arrow
from sparkcdc.connectors.mysql.config import MySqlSourceConfig, parse_config
from sparkcdc.connectors.mysql.discovery import CapturedTable
from sparkcdc.connectors.mysql.positions import current_position
from sparkcdc.connectors.mysql.snapshot_reader import reader_for
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.position import BinlogPosition
from sparkcdc.core.rows import Row
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.snapshot.chunks import Chunk
from tests.integration import test_mysql_types_roundtrip as types
from tests.integration.test_mysql_source import (  # noqa: F401  (orders is a fixture)
    RandomWriter,
    orders,
    replay_stream,
    source_options,
    table_state,
)
from tests.support.changelog import ChangelogReplayer

#: all_types minus the columns connectorx cannot read exactly (BIT, TIME, DECIMAL(65),
#: spatial): the Arrow reader must take this table.
ARROW_DDL = """
CREATE TABLE all_types (
  id INT PRIMARY KEY,
  ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
  mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
  bo BOOLEAN, t1 TINYINT(1), d10 DECIMAL(10,2), fl FLOAT, db DOUBLE,
  dt DATE, dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
  ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, yr YEAR,
  c CHAR(10), vc VARCHAR(50), tx TEXT, l1 VARCHAR(20) CHARACTER SET latin1,
  bn BINARY(4), vb VARBINARY(16), bl BLOB,
  en ENUM('small','medium','large'), st SET('c','a','b'), js JSON
) DEFAULT CHARSET=utf8mb4
"""
EXCLUDED = ("d65", "b1", "b12", "tm", "tm6", "pt", "geo")


def _insert(mariadb: EmbeddedMariaDB, db: str, row_id: int) -> None:
    written = {k: v for k, v in types.INSERTS[row_id][0].items() if k not in EXCLUDED}
    types.insert(mariadb, db, written)


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


def test_arrow_reader_equals_the_classic_reader_for_every_type_it_takes(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    mariadb.execute(ARROW_DDL, database=mysql_db)
    for row_id in (1, 2, 3, 5):
        _insert(mariadb, mysql_db, row_id)
    arrow = _config(mariadb, mysql_db, "all_types", **{"scan.snapshot.reader": "arrow"})
    classic = _config(mariadb, mysql_db, "all_types", **{"scan.snapshot.reader": "classic"})
    assert reader_for(_config(mariadb, mysql_db, "all_types"), _captured(arrow)) == "arrow"

    expected = _read(classic)
    assert expected.num_rows == 4
    assert _read(arrow).equals(expected)
    # and the values are the ones written (the classic reader's own contract)
    names = [n for n in types.COLUMNS if n not in EXCLUDED]
    for row in expected.to_pylist():
        want = types.INSERTS[row["id"]][1]
        assert {n: row[n] for n in names} == {n: want[n] for n in names}

    # TIMESTAMP is rendered in the session zone: the reader must not depend on the server's
    mariadb.execute("SET GLOBAL time_zone = '+05:00'")
    try:
        assert _read(arrow).equals(expected)
    finally:
        mariadb.execute("SET GLOBAL time_zone = 'SYSTEM'")


def test_zero_dates_fall_back_to_the_classic_reader(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    mariadb.execute(ARROW_DDL, database=mysql_db)
    for row_id in (1, 4):  # row 4 holds zero dates, which connectorx cannot decode
        _insert(mariadb, mysql_db, row_id)
    classic = _read(_config(mariadb, mysql_db, "all_types", **{"scan.snapshot.reader": "classic"}))
    assert _read(_config(mariadb, mysql_db, "all_types")).equals(classic)  # auto: fallback
    with pytest.raises(ArrowReadError):
        _read(_config(mariadb, mysql_db, "all_types", **{"scan.snapshot.reader": "arrow"}))


def test_tables_the_arrow_reader_cannot_take_use_the_classic_reader(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, tm TIME, b BIT(3))", database=mysql_db)
    config = _config(mariadb, mysql_db, "t")
    assert reader_for(config, _captured(config)) == "classic"
    with pytest.raises(Exception, match="cannot use it: column 'tm'"):
        forced = _config(mariadb, mysql_db, "t", **{"scan.snapshot.reader": "arrow"})
        reader_for(forced, _captured(forced))


# -- changes inside the watermark window ------------------------------------------------


def _state(mariadb: EmbeddedMariaDB, db: str) -> dict[int, Row]:
    return {r[0]: tuple(r) for r in mariadb.execute("SELECT id, v, n FROM w", database=db)}


def _position(mariadb: EmbeddedMariaDB) -> BinlogPosition:
    file, pos = types.binlog_position(mariadb)
    return BinlogPosition(file, pos)


def _rows(batches: Iterator[Any]) -> dict[int, Row]:
    rows = [r for b in batches for r in b.canonical()]
    by_key = {r[0]: tuple(r) for r in rows}
    assert len(by_key) == len(rows), "duplicate keys"
    return by_key


@pytest.mark.parametrize(
    "chunks",
    [(Chunk(None, None),), (Chunk(None, 30), Chunk(30, 60)), (Chunk(None, 20), Chunk(40, 60))],
    ids=["whole", "contiguous", "gap"],
)
def test_changes_inside_the_watermark_window_normalise_to_any_target(
    mariadb: EmbeddedMariaDB, mysql_db: str, monkeypatch: pytest.MonkeyPatch, chunks: Any
) -> None:
    """The SELECT sees the table at T between the watermarks L and H; writes happen before
    L, between L and T, between T and H, after H. Normalised to targets before L, at L, at
    T, at H and after H, the partition equals the table at the target, for a whole-table
    partition and for partitions keys move into and out of."""
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

    config = _config(mariadb, db, "w", **{"scan.snapshot.reader": "arrow"})
    table = _captured(config)
    p0, s0 = write()
    pl, sl = write(
        "UPDATE w SET v = 'a' WHERE id = 1",
        "DELETE FROM w WHERE id = 2",
        "INSERT INTO w VALUES (100, 'new', 0)",
    )
    pt, st = write(
        "UPDATE w SET v = 'b' WHERE id = 3",
        "UPDATE w SET id = 104 WHERE id = 4",
        "DELETE FROM w WHERE id = 5",
        "INSERT INTO w VALUES (55, 'in', 1)",
        "DELETE FROM w WHERE id = 25",
        "UPDATE w SET id = 25 WHERE id = 45",
        "UPDATE w SET n = 9 WHERE id = 1",
    )
    source_conn = MySqlCdcSource(config)
    try:
        with source_conn.conn.cursor() as cur:
            queries = arrow_reader.partition_queries(cur, table, chunks)
    finally:
        source_conn.close()
    seen_at_t = arrow_reader._read_arrow(config, queries)
    ph, sh = write(
        "UPDATE w SET v = 'c' WHERE id = 3",
        "DELETE FROM w WHERE id = 55",
        "INSERT INTO w VALUES (5, 'back', 2)",
        "UPDATE w SET id = 2 WHERE id = 104",
        "UPDATE w SET id = 105 WHERE id = 46",
        "UPDATE w SET n = 7 WHERE id = 7",
    )
    pp, sp = write(
        "UPDATE w SET v = 'd' WHERE id = 8",
        "DELETE FROM w WHERE id = 9",
        "INSERT INTO w VALUES (59, 'late', 3)",
        "DELETE FROM w WHERE id = 11",
        "UPDATE w SET id = 11 WHERE id = 100",
    )
    assert len({p0, pl, pt, ph, pp}) == 5

    def in_partition(key: int) -> bool:
        return any((c.lo is None or key >= c.lo) and (c.hi is None or key < c.hi) for c in chunks)

    for target, state in ((p0, s0), (pl, sl), (pt, st), (ph, sh), (pp, sp)):
        marks = iter([pl, ph])
        monkeypatch.setattr(arrow_reader, "_consistent_position", lambda _conn, m=marks: next(m))
        monkeypatch.setattr(arrow_reader, "_read_arrow", lambda _config, _queries: seen_at_t)
        got = _rows(read_chunks_arrow(config, table, chunks, target, 6001, 7))
        want = {k: v for k, v in state.items() if in_partition(k)}
        assert got == want, f"target {target}"


def test_watermarks_bracket_the_select(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    """The real watermarks: L <= the batch position <= H when nothing is written, and the
    partition then passes through as Arrow columns (no Python rows)."""
    mariadb.execute("CREATE TABLE w (id BIGINT PRIMARY KEY, v VARCHAR(20))", database=mysql_db)
    mariadb.execute("INSERT INTO w VALUES (1, 'a'), (2, 'b')", database=mysql_db)
    config = _config(mariadb, mysql_db, "w", **{"scan.snapshot.reader": "arrow"})
    table = _captured(config)
    source = MySqlCdcSource(config)
    try:
        target = current_position(source.conn)
    finally:
        source.close()
    out = list(read_chunks_arrow(config, table, (Chunk(None, None),), target, 6002, 1000))
    assert [c.columns is not None for c in out] == [True]
    assert _rows(iter(out)) == {1: (1, "a"), 2: (2, "b")}


# -- the replay invariant with random concurrent writes, for both readers -----------------


@pytest.mark.parametrize("reader", ["arrow", "classic"])
def test_concurrent_writes_replay_to_the_source_with_either_reader(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,  # noqa: F811
    scratch: Path,
    reader: str,
) -> None:
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"])
    writer = RandomWriter(mariadb, orders, seed=11, key_space=7000)
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

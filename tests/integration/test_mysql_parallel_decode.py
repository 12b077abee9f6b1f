"""A large log range is decoded by several partitions in parallel: cut at transaction
boundaries, deterministic, and the changelog equals the one-partition changelog, through
the source and through Spark."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog.limit import split_log
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.snapshot.partitions import LogRead
from tests.support.changelog import ChangelogReplayer
from tests.support.decoder_tables import position
from tests.support.streams import collect_stream

ROWS = 40_000


def write_workload(mariadb: EmbeddedMariaDB, database: str) -> tuple[BinlogPosition, int]:
    """~3 x MIN_PIECE_BYTES of binlog in many transactions; returns the start and the
    number of rows left."""
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, n INT, pad VARCHAR(200)) DEFAULT CHARSET=utf8mb4",
        database=database,
    )
    start = position(mariadb)
    with mariadb.connect(database) as conn, conn.cursor() as cur:
        for lo in range(0, ROWS, 2000):  # one transaction each
            cur.execute(
                f"INSERT INTO t SELECT seq, seq, REPEAT('x', 150) FROM seq_{lo + 1}_to_{lo + 2000}"
            )
        for lo in range(0, ROWS, 4000):
            cur.execute(f"UPDATE t SET n = n + 1 WHERE id BETWEEN {lo + 1} AND {lo + 4000}")
        cur.execute("DELETE FROM t WHERE id % 10 = 0")
    return start, ROWS - ROWS // 10


def options(mariadb: EmbeddedMariaDB, database: str, start: BinlogPosition) -> dict[str, str]:
    low = 5000 + secrets.randbelow(1000) * 16
    return {
        **mariadb.source_options(),
        "database-name": database,
        "table-name": "t",
        "server-id": f"{low}-{low + 15}",
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.file": start.file,
        "scan.startup.specific-offset.pos": str(start.pos),
    }


def rows_of(batches: list[pa.RecordBatch]) -> list[dict[str, Any]]:
    return sorted(
        (r for b in batches for r in b.to_pylist()),
        key=lambda r: (r["_commit_version"], r["_change_type"]),
    )


def test_split_partitions_equal_one_partition(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    start, _ = write_workload(mariadb, mysql_db)
    end = position(mariadb)
    source = MySqlCdcSource(parse_config(options(mariadb, mysql_db, start)))
    try:
        first = source.initial_offset()
        last = source.latest_offset(first, None)
        specs = source.partitions(first, last)
        assert specs == source.partitions(first, last)  # a pure function of the offsets
        logs = [s for s in specs if isinstance(s, LogRead)]
        assert len(logs) >= 2, "the workload should be large enough to split"
        assert logs[0].start.key == start.key and logs[-1].end.key >= end.key
        for i in range(len(logs) - 1):
            assert logs[i].end == logs[i + 1].start
        assert len({source.config.server_id(s.reader) for s in logs}) == len(logs)
        # every cut is a transaction boundary: the next event starts a GTID group
        for cut in (s.start for s in logs[1:]):
            ((_, _, kind, *_),) = mariadb.execute(
                f"SHOW BINLOG EVENTS IN '{cut.file}' FROM {cut.pos} LIMIT 1"
            )
            assert kind == "Gtid"
            # the GTID state tracked along the walk equals the server's own
            ((server_gtid,),) = mariadb.execute(
                "SELECT BINLOG_GTID_POS(%s, %s)", (cut.file, cut.pos)
            )
            assert cut.gtid == server_gtid
        split = rows_of([b for s in logs for b in source.read(s)])
        whole = LogRead(logs[0].start, logs[-1].end, logs[0].tables, logs[0].progress, 7, False)
        assert split == rows_of(list(source.read(whole)))
        assert len(split) == ROWS + 2 * ROWS + ROWS // 10
        assert split_log(source.dialect.conn, start, end, max_pieces=1) == [start, end]
        assert len(split_log(source.dialect.conn, start, end, min_piece_bytes=1 << 40)) == 2
    finally:
        source.close()


def test_spark_parallel_stream_replays_to_the_table(
    mariadb: EmbeddedMariaDB, mysql_db: str, spark: Any, tmp_path: Path
) -> None:
    start, remaining = write_workload(mariadb, mysql_db)
    rows = collect_stream(spark, options(mariadb, mysql_db, start), tmp_path / "cp")
    replay = ChangelogReplayer(lambda r: r["id"], ["id", "n", "pad"])
    replay.apply_batch(rows)
    expected = {
        r[0]: tuple(r) for r in mariadb.execute("SELECT id, n, pad FROM t", database=mysql_db)
    }
    assert len(replay.state) == remaining
    assert replay.state == expected

"""Kill the driver (SIGKILL, JVM included) during the snapshot and during streaming, restart
from Spark's checkpoint, and the changelog still replays exactly to the source."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from sparkcdc.embedded import EmbeddedMariaDB
from tests.integration.test_mysql_source import RandomWriter, table_state
from tests.support.changelog import ChangelogReplayer

ROOT = Path(__file__).resolve().parents[2]


def start_driver(options: dict[str, str], checkpoint: Path, out: Path, mode: str) -> Any:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.cdc_driver",
            json.dumps(options),
            str(checkpoint),
            str(out),
            mode,
        ],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=open(out.parent / f"driver-{mode}-{time.monotonic_ns()}.log", "wb"),
    )


def batches(out: Path) -> list[Path]:
    return sorted(out.glob("batch_*.parquet"))


def kill_when(process: Any, out: Path, count: int, timeout: float = 300) -> None:
    """SIGKILL the driver's whole process group once ``count`` batch files exist."""
    deadline = time.monotonic() + timeout
    while len(batches(out)) < count:
        assert process.poll() is None, f"driver exited early with {process.returncode}"
        assert time.monotonic() < deadline, "driver made no progress"
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def test_sigkill_mid_snapshot_and_mid_stream_then_resume_exactly(
    mariadb: EmbeddedMariaDB, mysql_db: str, tmp_path: Path
) -> None:
    mariadb.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)", database=mysql_db
    )
    mariadb.execute(
        "CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT)", database=mysql_db
    )
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO orders VALUES (%s, %s, %s)", [(i * 2, f"o{i}", i % 7) for i in range(6000)]
        )
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "orders",
        "scan.incremental.snapshot.chunk.size": "150",
        "scan.incremental.snapshot.rows-per-partition": "300",
        "maxRowsPerTrigger": "450",
    }
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"
    out.mkdir()
    writer = RandomWriter(mariadb, mysql_db, seed=3, key_space=14000)
    writer.limit = 100_000
    writer.start()
    try:
        first = start_driver(options, checkpoint, out, "stream")
        kill_when(first, out, 3)  # mid-snapshot: 6000 rows need ~14 batches
        snapshot_batches = len(batches(out))
        second = start_driver(options, checkpoint, out, "stream")
        kill_when(second, out, 20)  # past the snapshot, while the binlog streams
        assert len(batches(out)) > snapshot_batches
    finally:
        writer.stop()
    final = start_driver(options, checkpoint, out, "available-now")
    assert final.wait(300) == 0

    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"])
    for path in batches(out):
        replayer.apply_batch(pq.read_table(path).to_pylist())
    assert writer.transactions > 100
    assert replayer.state == table_state(mariadb, mysql_db, "orders")

"""The source's retries happen in Spark tasks, out of the driver's sight: the pipeline's
metrics count them all the same (an accumulator the readers add to, spark/read_counters.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.prometheus import PipelineCollector
from sparkcdc.pipeline.run_state import load_run_state
from sparkcdc.pipeline.runner import prepare
from tests.support.mariadb_writes import table_state
from tests.support.pipelines import (
    committed_offsets,
    pipeline_file,
    postgres_sink_block,
    snapshot_done,
    wait_until,
)
from tests.support.tcp_proxy import CuttableProxy

ROWS = 300


@pytest.mark.timeout(300)
def test_a_log_read_cut_mid_batch_is_retried_once_and_counted_once(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The source is reached through a slow proxy. A run starts on ~1 MB of binlog written
    while none ran: once its first batch is planned (the offset file written), the only
    binlog dump that can be open is that batch's read in a Spark task, and the proxy cuts
    it once. The read retries, the batch is written once, and the metrics (their
    Prometheus form, the run state that ``status`` reads) say 1 source retry."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", database=mysql_db)
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, '')", [(i,) for i in range(ROWS)])
    proxy = CuttableProxy(mariadb.port, chunk=1024, pause=0.004)  # ~250 KB/s
    block = postgres_sink_block(postgres, pg_db, monkeypatch)
    pipeline = pipeline_file(
        scratch,
        mariadb,
        f"{mysql_db}.t",
        block,
        max_rows=100_000,  # the burst below is one batch
        extra_source="connect.max-retries: 3",
    )
    text = pipeline.read_text(encoding="utf-8")
    pipeline.write_text(text.replace(f"port: {mariadb.port}", f"port: {proxy.port}"))
    checkpoint = scratch / "checkpoint"
    first = prepare(load_pipeline(pipeline), spark=spark)
    first.start()
    try:
        wait_until(lambda: any(snapshot_done(o) for o in committed_offsets(checkpoint)), "snapshot")
    finally:
        first.stop()
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        for round_ in range(6):  # ~1 MB of row images: seconds through the proxy
            cur.execute("UPDATE t SET v = REPEAT(%s, 300)", (f"r{round_}",))
    planned = _batches(checkpoint, "offsets")
    run = prepare(load_pipeline(pipeline), spark=spark)
    run.start()  # its first batch holds the whole burst
    try:
        wait_until(lambda: _batches(checkpoint, "offsets") > planned, "the burst's batch")
        before = proxy.forwarded  # the planning's scans are done: what moves is the read
        wait_until(lambda: proxy.forwarded > before + 64 * 1024, "its binlog read", timeout=60)
        assert _batches(checkpoint, "commits") == planned, "the read ended before the cut"
        proxy.cut()
        cuts = proxy.cuts
        wait_until(lambda: _batches(checkpoint, "commits") > planned, "the batch's commit")
        metrics = run.metrics.snapshot()
        assert run.active
    finally:
        run.stop()
        proxy.close()
    assert cuts == 1
    assert metrics.source_retries == 1
    scraped = {s.name: s.value for m in PipelineCollector(run.metrics).collect() for s in m.samples}
    assert scraped["sparkcdc_source_retries_total"] == 1
    assert load_run_state(checkpoint).source_retries == 1  # what `sparkcdc status` shows
    with postgres.connect(pg_db) as target:
        rows = target.execute(f'SELECT * FROM "{mysql_db}"."t"').fetchall()
    assert {r[0]: tuple(r) for r in rows} == table_state(mariadb, mysql_db, "t")
    assert len(rows) == ROWS


def _batches(checkpoint: Path, kind: str) -> int:
    return len(list((checkpoint / kind).glob("[0-9]*")))

"""The fault suite: the network between the source and a running pipeline cut (every open
connection reset) and stalled (connections left open, silent) again and again, through a
TCP proxy in front of MariaDB, while random writes go on (several statements per
transaction, key moves, two tables). The driver's planning connection and the tasks'
chunk and binlog reads all go through the proxy.

Each fault is ridden through (reads time out after ``connect.timeout`` and are retried,
``connect.max-retries``), or the run stops with one of our messages and the next run
resumes from its checkpoint. Either way the target ends equal to the source, ``verify``
agreeing. The outcomes are printed."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.definition import load_pipeline
from tests.faults.test_kill_loop import target_rows
from tests.faults.test_restarts import Runs
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import (
    committed_batches,
    committed_offsets,
    pipeline_file,
    run_available_now,
    snapshot_done,
    wait_until,
)
from tests.support.tcp_proxy import CuttableProxy

__all__ = ["orders"]  # the fixture, re-used

#: Faults per run: a cut and a stall each round (``make faults``: 25 rounds).
ROUNDS = max(2, int(os.environ.get("SPARKCDC_FAULT_KILLS", "2")) // 2)


@pytest.mark.faults
@pytest.mark.timeout(600 + 60 * ROUNDS)
def test_network_cut_and_stalled_under_a_running_pipeline_loses_nothing(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    proxy = CuttableProxy(mariadb.port, chunk=65536, pause=0)
    path = pipeline_file(
        scratch,
        mariadb,
        f"{orders}.(orders|audit)",
        "type: delta\npath: lake",
        max_rows=300,
        extra_source="connect.timeout: 2s\nconnect.max-retries: 4",
    )
    path.write_text(path.read_text().replace(f"port: {mariadb.port}", f"port: {proxy.port}"))
    checkpoint = scratch / "checkpoint"
    writer = mariadb_writer(mariadb, orders, seed=71, key_space=9000)
    writer.limit, writer.pause = 10**9, 0.05
    rng = random.Random(71)
    outcomes: list[str] = []
    writer.start()
    runs = Runs(spark, path)
    try:
        for number in range(ROUNDS):
            for fault in (proxy.cut, proxy.freeze):
                # mid-snapshot at first (chunks are planned 300 rows a batch), then streaming
                time.sleep(rng.uniform(0.2, 2.0))
                fault()
                before = committed_batches(checkpoint)
                runs.outcome = "rode through"
                wait_until(runs.moved_on(checkpoint, before), f"batches after {fault.__name__}")
                outcomes.append(f"{fault.__name__} {number + 1}: {runs.outcome}")
        wait_until(lambda: any(map(snapshot_done, committed_offsets(checkpoint))), "snapshot")
    finally:
        writer.stop()
        runs.stop()
        proxy.close()
    path.write_text(path.read_text().replace(f"port: {proxy.port}", f"port: {mariadb.port}"))
    run_available_now(spark, path)
    checked = 0
    for table in ("orders", "audit"):
        expected = table_state(mariadb, orders, table)
        assert target_rows("delta", spark, scratch, None, orders, table) == expected, table
        checked += len(expected)
    verdicts = verify_pipeline(load_pipeline(path), spark)
    assert [v.status for v in verdicts] == ["equal", "equal"]
    rode = sum(o.endswith("rode through") for o in outcomes)
    stops = [o for o in outcomes if not o.endswith("rode through")]
    print(
        f"\nnetwork faults: {len(outcomes) // 2} cuts, {proxy.freezes} stalls; {rode} ridden "
        f"through, {len(stops)} stopped the run ({len(runs.runs)} runs); "
        f"{writer.transactions} source transactions, {checked} rows checked equal, verify equal"
        + "".join(f"\n  {stop}" for stop in stops)
    )
    for outcome in outcomes:  # a stop says why in our words, not Spark's wrapping
        assert outcome.endswith("rode through") or "Traceback" not in outcome, outcome

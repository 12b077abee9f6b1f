"""Operations on a real pipeline (MariaDB -> Delta): metrics under controlled conditions,
read from the Prometheus endpoint over HTTP and from Spark's query progress, and
``sparkcdc status --json`` before the first batch, while running and after a stop."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.batch_report import (
    COUNTED,
    OFFSETS,
    PLANNED,
    RECORDED,
    RELEASED,
    WRITTEN,
    BatchReport,
)
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.metrics import MetricsSnapshot
from sparkcdc.pipeline.prometheus import serve_metrics
from sparkcdc.pipeline.runner import prepare
from tests.integration.test_mysql_source import orders
from tests.support.pipelines import (
    at_or_after,
    committed_offsets,
    master_position,
    pipeline_file,
    snapshot_done,
    wait_until,
)
from tests.support.prometheus import scrape

__all__ = ["orders"]  # the fixture, re-used

ROOT = Path(__file__).resolve().parents[2]
DELTA_SINK = """
type: delta
path: lake
"""
ROWS = 2000  # the orders fixture's


def status(pipeline: Path, password: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", "status", str(pipeline), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert password not in done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout)


def caught_up(checkpoint: Path, mariadb: EmbeddedMariaDB) -> bool:
    file, pos = master_position(mariadb)
    offsets = committed_offsets(checkpoint) if (checkpoint / "commits").exists() else []
    return any(snapshot_done(o) and at_or_after(o, file, pos) for o in offsets)


def test_metrics_and_status_through_snapshot_pause_and_idle(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    pipeline = pipeline_file(scratch, mariadb, f"{orders}.orders", DELTA_SINK, max_rows=500)
    definition = load_pipeline(pipeline)
    checkpoint = definition.settings.checkpoint
    table = TableId(orders, "orders")
    password = mariadb.source_options()["password"]

    code, before = status(pipeline, password)
    assert code == 1 and "no committed batch" in before["error"]

    seen: list[tuple[BatchReport, MetricsSnapshot]] = []
    run = prepare(definition, spark=spark, on_batch=lambda r: seen.append((r, metrics.snapshot())))
    metrics = run.metrics
    port = serve_metrics(metrics, 0)
    run.start()
    try:
        wait_until(lambda: caught_up(checkpoint, mariadb), "the snapshot and the binlog")

        # snapshot progress is 1 exactly from the batch whose offset says the table is done
        snapshotting = 0
        for report, snapshot in seen:
            (orders_metrics,) = snapshot.tables
            done = report.table_states[table] == "streaming"
            assert (orders_metrics.snapshot_progress == 1.0) == done, (report, snapshot)
            assert orders_metrics.state == report.table_states[table]
            snapshotting += not done
        assert snapshotting >= 2, "the snapshot took one batch: nothing was shown in between"
        assert sum(r.snapshot_rows for r, _ in seen) == ROWS

        # Spark's own query progress carries the observed counts and the server's head
        progress = run.query.lastProgress
        observed = progress["observedMetrics"]["sparkcdc"].asDict()
        assert set(observed) >= {"rows", "inserts", "updates", "deletes"}, observed
        latest = progress["sources"][0]["latestOffset"]
        assert "log" in (json.loads(latest) if isinstance(latest, str) else latest), latest

        # an idle source: idle time grows while nothing happens
        first = scrape(port)[("sparkcdc_source_idle_seconds", frozenset())]
        time.sleep(2)
        samples = scrape(port)
        second = samples[("sparkcdc_source_idle_seconds", frozenset())]
        assert second >= first + 1.5
        # caught up: the log position is the server's head, nothing behind
        assert samples[("sparkcdc_log_bytes_behind", frozenset())] == 0
        ((position, head),) = [
            (dict(labels)["position"], dict(labels)["head"])
            for (name, labels), value in samples.items()
            if name == "sparkcdc_log_position_info" and value == 1
        ]
        file, pos = master_position(mariadb)
        assert position == head and position.startswith(f"{file}:{pos} "), position

        code, running = status(pipeline, password)
        assert code == 0, running
        (row,) = running["tables"]
        assert (row["state"], row["snapshot_rows"], row["snapshot_progress"]) == (
            "streaming",
            ROWS,
            1.0,
        )
        assert running["bytes_behind"] == 0 and running["seconds_behind"] == 0
        assert row["target"].endswith("orders")
    finally:
        run.stop()

    # paused, with writes waiting: status sees the bytes behind; the restarted pipeline's
    # first batch shows a fetch lag of at least the pause
    before_insert = time.time()
    mariadb.execute(
        "INSERT INTO orders VALUES (900001, 'a', 1), (900002, 'b', 2), (900003, 'c', 3)",
        database=orders,
    )
    after_insert = time.time()
    code, stopped = status(pipeline, password)
    assert code == 0 and stopped["bytes_behind"] > 0, stopped
    assert stopped["position"] == running["position"] != stopped["head"], stopped
    assert stopped["committed_batch"] == running["committed_batch"], stopped
    # the oldest change waiting is the insert (binlog times have whole seconds)
    assert int(before_insert) <= stopped["waiting_since"] <= after_insert, stopped
    assert stopped["seconds_behind"] == max(0.0, stopped["now"] - stopped["waiting_since"])
    time.sleep(3)

    resumed: list[BatchReport] = []
    again = prepare(definition, spark=spark, on_batch=resumed.append)
    port = serve_metrics(again.metrics, 0)
    again.start()
    try:
        wait_until(lambda: any(r.changes for r in resumed), "the paused inserts")
        report = next(r for r in resumed if r.changes)
        assert report.fetch_lag is not None and report.emit_lag is not None
        # binlog commit times have whole seconds: the newest is in [floor(before), after]
        assert report.fetch_lag >= report.fetched - after_insert >= 3
        assert report.fetch_lag <= report.fetched - int(before_insert)
        assert report.emit_lag >= report.fetch_lag
        # the runner's steps of the batch, each ended after the one before (benchmarks.soak
        # --breakdown subtracts them); the report is handed over once its state is recorded
        steps = [report.steps[s] for s in (OFFSETS, COUNTED, PLANNED, WRITTEN, RELEASED)]
        assert report.started <= steps[0] and steps == sorted(steps), report.steps
        assert steps[-1] <= report.written <= report.steps[RECORDED], report.steps
        samples = scrape(port)
        labels = frozenset({("table", str(table))})
        assert samples[("sparkcdc_changes_total", labels | {("kind", "insert")})] == 3
        assert samples[("sparkcdc_snapshot_rows_total", labels)] == ROWS  # across the restart
        assert samples[("sparkcdc_fetch_event_time_lag_seconds", frozenset())] >= 3
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
            assert password.encode() not in page.read()
    finally:
        again.stop()
    for path in checkpoint.rglob("*"):
        assert not path.is_file() or password.encode() not in path.read_bytes(), path

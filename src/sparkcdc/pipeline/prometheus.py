"""``sparkcdc run --metrics-port``: the pipeline's metrics for Prometheus to scrape.

A collector turns one :class:`MetricsSnapshot` into Prometheus families at each scrape
(so idle time and bytes behind are current), served by prometheus_client's own HTTP
server on a daemon thread. Names follow Prometheus conventions (seconds, ``_total``);
docs/operations.md maps each to its Flink CDC / Debezium name.

Every series exists from the first scrape, with NaN where the value is not known yet (no
batch with log changes yet: no lag): dashboards and ``absent()`` alerts break on a
series that is missing while a snapshot runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from sparkcdc.pipeline.metrics import PipelineMetrics

STATES = ("pending", "snapshotting", "streaming")


class PipelineCollector(Collector):
    def __init__(self, metrics: PipelineMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        m = self.metrics.snapshot()
        yield from _run_families(m)
        yield from _log_families(m)
        yield from _gauge(m, "tables", "Captured tables (Debezium TotalTableCount).", len(m.tables))
        yield from _table_families(m.pipeline, m.tables)


#: The value of a gauge that is not known yet (Prometheus's convention for "no value").
UNKNOWN = float("nan")


def _gauge(m: Any, name: str, doc: str, value: float | None) -> Iterator[Metric]:
    family = GaugeMetricFamily(f"sparkcdc_{name}", doc, labels=["pipeline"])
    family.add_metric([m.pipeline], UNKNOWN if value is None else value)
    yield family


def _counter(m: Any, name: str, doc: str, value: int) -> Metric:
    family = CounterMetricFamily(f"sparkcdc_{name}", doc, labels=["pipeline"])
    family.add_metric([m.pipeline], value)
    return family


def _run_families(m: Any) -> Iterator[Metric]:
    """The run's own measures: uptime, batches, retries, the last batch."""
    yield from _gauge(m, "up_seconds", "Seconds since this run started.", m.now - m.started)
    yield _counter(m, "batches", "Batches written by this run.", m.batches)
    yield _counter(
        m,
        "sink_retries",
        "Batches the sink tried again because its connection to the target was lost (this run).",
        m.sink_retries,
    )
    yield _counter(
        m,
        "source_retries",
        "Connections to the source that failed in Spark tasks and were tried again (this run).",
        m.source_retries,
    )
    yield from _gauge(m, "last_batch_id", "Id of the last batch written.", m.last_batch_id)
    yield from _gauge(
        m,
        "last_batch_timestamp_seconds",
        "When the last batch's sink write returned.",
        m.last_batch_written,
    )
    yield from _gauge(
        m,
        "last_batch_duration_seconds",
        "Wall time of the last batch: read, count, sink write.",
        m.last_batch_seconds,
    )


def _log_families(m: Any) -> Iterator[Metric]:
    """How far behind the source's log the run is, and the snapshot's progress."""
    yield from _gauge(
        m,
        "fetch_event_time_lag_seconds",
        "Fetch time minus commit time of the newest change of the last batch with "
        "log changes (Flink CDC currentFetchEventTimeLag).",
        m.fetch_lag,
    )
    yield from _gauge(
        m,
        "emit_event_time_lag_seconds",
        "Sink write time minus commit time of that change (Flink CDC "
        "currentEmitEventTimeLag, Debezium MilliSecondsBehindSource).",
        m.emit_lag,
    )
    yield from _gauge(
        m,
        "source_idle_seconds",
        "Seconds since the last batch with changes (Flink CDC sourceIdleTime).",
        m.idle_seconds,
    )
    yield from _gauge(
        m,
        "log_bytes_behind",
        "Bytes of the source's log between the last written position and its end.",
        None if m.head is None else m.head.bytes_behind,
    )
    info = InfoMetricFamily(
        "sparkcdc_log_position",
        "The last written position and the source log's end (empty: not known yet).",
        labels=["pipeline"],
    )
    info.add_metric(
        [m.pipeline],
        {
            "position": m.position or "",
            "head": "" if m.head is None else m.head.position,
        },
    )
    yield info
    yield from _gauge(
        m,
        "snapshot_remaining_tables",
        "Tables whose snapshot is not done (Debezium RemainingTableCount).",
        m.snapshot_remaining_tables,
    )


def _table_families(pipeline: str, tables: Any) -> Iterator[Metric]:
    labels = ["pipeline", "table"]
    rows = CounterMetricFamily(
        "sparkcdc_snapshot_rows",
        "Snapshot rows written, across restarts (Debezium RowsScanned).",
        labels=labels,
    )
    estimate = GaugeMetricFamily(
        "sparkcdc_snapshot_rows_estimated",
        "The source's row estimate for tables whose snapshot was not done at start.",
        labels=labels,
    )
    progress = GaugeMetricFamily(
        "sparkcdc_snapshot_progress_ratio",
        "Snapshot progress: 1 exactly when the table's snapshot is done.",
        labels=labels,
    )
    state = GaugeMetricFamily(
        "sparkcdc_table_state",
        "1 for the table's state: pending, snapshotting or streaming.",
        labels=[*labels, "state"],
    )
    changes = CounterMetricFamily(
        "sparkcdc_changes",
        "Log changes written, by kind, across restarts.",
        labels=[*labels, "kind"],
    )
    schema = CounterMetricFamily(
        "sparkcdc_schema_changes",
        "Changes of the table's columns applied to its target, across restarts.",
        labels=labels,
    )
    for t in tables:
        name = [pipeline, str(t.table)]
        schema.add_metric(name, t.schema_changes)
        rows.add_metric(name, t.totals.snapshot_rows)
        estimate.add_metric(name, UNKNOWN if t.estimated_rows is None else t.estimated_rows)
        progress.add_metric(name, t.snapshot_progress)
        for s in STATES:
            state.add_metric([*name, s], 1.0 if t.state == s else 0.0)
        for kind, count in (
            ("insert", t.totals.inserts),
            ("update", t.totals.updates),
            ("delete", t.totals.deletes),
        ):
            changes.add_metric([*name, kind], count)
    yield from (rows, estimate, progress, state, changes, schema)


def serve_metrics(metrics: PipelineMetrics, port: int, host: str = "127.0.0.1") -> int:
    """Serve ``/metrics`` on ``host:port`` (0: a free port) and return the port."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(PipelineCollector(metrics))
    server, _thread = start_http_server(port, addr=host, registry=registry)
    return int(server.server_address[1])

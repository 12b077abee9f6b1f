"""The pipeline's metrics, totals and their outputs, without services: the values under
controlled clocks and batches, the Prometheus endpoint over HTTP, the console lines."""

from __future__ import annotations

import io
import json
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from sparkcdc.cli.live import LiveConsole, batch_line
from sparkcdc.core.folders import UnwritableFolderError, ensure_writable
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.batch_report import BatchReport, TableCounts, table_states
from sparkcdc.pipeline.metrics import LogHead, PipelineMetrics
from sparkcdc.pipeline.prometheus import serve_metrics
from sparkcdc.pipeline.run_state import RunState, load_run_state, save_run_state
from sparkcdc.sinks.registry import make_sink

ORDERS, ITEMS = TableId("shop", "orders"), TableId("shop", "items")


def offset(**tables: dict[str, object]) -> str:
    return json.dumps(
        {
            "log": {"file": "binlog.000001", "pos": 4},
            "tables": {f"shop.{name}": progress for name, progress in tables.items()},
        }
    )


def report(
    batch: int,
    at: float,
    counts: dict[TableId, TableCounts],
    source_offset: str,
    newest: float | None = None,
) -> BatchReport:
    return BatchReport(
        batch,
        {t: c.changelog_rows for t, c in counts.items()},
        source_offset,
        counts=counts,
        newest_commit=newest,
        started=at,
        fetched=at + 1,
        written=at + 2,
    )


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_table_states_come_from_the_offset() -> None:
    states = table_states(offset(orders={"cursor": {"int": "7"}}, items={"done": True}))
    assert states == {ORDERS: "snapshotting", ITEMS: "streaming"}
    assert table_states(offset(orders={"started": False})) == {ORDERS: "pending"}
    assert table_states(None) == {}


def test_snapshot_progress_stays_below_one_until_the_offset_says_done() -> None:
    clock = Clock()
    metrics = PipelineMetrics("p", [ORDERS], RunState(), {ORDERS: 100}, clock=clock)
    assert metrics.snapshot().tables[0].snapshot_progress == 0.0
    metrics.record(
        report(
            0,
            1000,
            {ORDERS: TableCounts(snapshot_rows=60)},
            offset(orders={"cursor": {"int": "60"}}),
        )
    )
    assert metrics.snapshot().tables[0].snapshot_progress == 0.6
    # the estimate was low: more rows than it said, still not done
    metrics.record(
        report(
            1,
            1010,
            {ORDERS: TableCounts(snapshot_rows=60)},
            offset(orders={"cursor": {"int": "120"}}),
        )
    )
    table = metrics.snapshot().tables[0]
    assert (table.state, table.snapshot_progress) == ("snapshotting", 0.99)
    metrics.record(
        report(2, 1020, {ORDERS: TableCounts(snapshot_rows=5)}, offset(orders={"done": True}))
    )
    table = metrics.snapshot().tables[0]
    assert (table.state, table.snapshot_progress, table.totals.snapshot_rows) == (
        "streaming",
        1.0,
        125,
    )
    assert metrics.snapshot().snapshot_remaining_tables == 0


def test_lags_and_idle_time() -> None:
    clock = Clock()
    metrics = PipelineMetrics("p", [ORDERS], RunState(), {}, clock=clock)
    clock.now = 1030
    assert metrics.snapshot().idle_seconds == 30  # since the run started
    # changes committed at 1000, batch fetched at 1041 and written at 1042
    metrics.record(
        report(
            0, 1040, {ORDERS: TableCounts(inserts=3)}, offset(orders={"done": True}), newest=1000.0
        )
    )
    clock.now = 1050
    snapshot = metrics.snapshot()
    assert (snapshot.fetch_lag, snapshot.emit_lag, snapshot.idle_seconds) == (41, 42, 9)
    # an empty batch keeps the lags of the last batch with changes; idle keeps growing
    metrics.record(report(1, 1060, {ORDERS: TableCounts()}, offset(orders={"done": True})))
    clock.now = 1070
    snapshot = metrics.snapshot()
    assert (snapshot.fetch_lag, snapshot.emit_lag, snapshot.idle_seconds) == (41, 42, 29)


def test_the_log_head_is_asked_after_each_batch_and_at_most_every_interval_between() -> None:
    clock, asked = Clock(), []

    def head(offset: str) -> LogHead:
        asked.append(clock.now)
        return LogHead("binlog.000001:99", 95)

    metrics = PipelineMetrics("p", [ORDERS], RunState(), {}, log_head=head, clock=clock)
    metrics.snapshot()
    assert asked == []  # no position yet
    metrics.record(report(0, 1000, {ORDERS: TableCounts()}, offset(orders={"done": True})))
    assert asked == [1000]
    clock.now = 1003
    assert metrics.snapshot().head == LogHead("binlog.000001:99", 95)
    clock.now = 1006
    metrics.snapshot()
    assert asked == [1000, 1006]


def test_a_replayed_batch_is_not_counted_twice_and_totals_survive_a_restart(tmp_path: Path) -> None:
    state = RunState()
    first = report(
        4, 1000, {ORDERS: TableCounts(inserts=2, updates=1)}, offset(orders={"done": True})
    )
    assert state.add(first)
    assert not state.add(first)
    save_run_state(tmp_path, state)
    again = load_run_state(tmp_path)
    assert again.totals == {ORDERS: TableCounts(inserts=2, updates=1)}
    assert again.batch_id == 4
    (tmp_path / "sparkcdc" / "state.json").write_text("{not json")
    assert load_run_state(tmp_path) == RunState()


def test_retries_are_totalled_across_restarts_as_batches_are_written(tmp_path: Path) -> None:
    """Spark tasks add the source's retries as they end (a live count of this run); each
    written batch takes what was added since into the run state, which a restart goes on
    from; the sink's retries too."""
    taken = [0]
    table = {ORDERS: TableCounts(inserts=1)}
    done = offset(orders={"done": True})
    first = PipelineMetrics("p", [ORDERS], RunState(), {}, source_retries=lambda: taken[0])
    taken[0] = 2
    first.record(report(0, 1000, table, done))
    first.sink_retried()
    taken[0] = 3
    first.record(report(1, 1010, table, done))
    first.record(report(1, 1010, table, done))  # a replay adds no batch, no retries
    assert (first.state.source_retries, first.state.sink_retries) == (3, 1)
    save_run_state(tmp_path, first.state)

    taken[0] = 0  # a new run's count starts again
    again = PipelineMetrics(
        "p", [ORDERS], load_run_state(tmp_path), {}, source_retries=lambda: taken[0]
    )
    taken[0] = 1
    again.record(report(2, 1020, table, done))
    assert (again.state.source_retries, again.state.sink_retries) == (4, 1)
    assert again.snapshot().source_retries == 1  # the Prometheus counter: this run's


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5), st.integers(0, 5)), max_size=40))
def test_totals_are_the_sum_over_distinct_batches_whatever_replays(
    batches: list[tuple[int, int, int]],
) -> None:
    """Spark replays a batch with the same id and content; ids only grow otherwise."""
    content: dict[int, TableCounts] = {}
    state, seen = RunState(), -1
    for batch_id, inserts, deletes in sorted(batches, key=lambda b: b[0]):
        counts = content.setdefault(batch_id, TableCounts(inserts=inserts, deletes=deletes))
        state.add(report(batch_id, 0, {ORDERS: counts}, offset(orders={"done": True})))
        seen = max(seen, batch_id)
    expected = TableCounts()
    for counts in content.values():
        expected = expected + counts
    assert state.totals.get(ORDERS, TableCounts()) == expected
    assert state.batch_id == seen


def test_the_prometheus_endpoint_serves_the_metrics_over_http() -> None:
    clock = Clock()
    metrics = PipelineMetrics(
        "shop-pipe",
        [ORDERS, ITEMS],
        RunState(),
        {ORDERS: 10, ITEMS: 4},
        describe_position=lambda o: "binlog.000001:4",
        log_head=lambda o: LogHead("binlog.000001:104", 100),
        clock=clock,
        source_retries=lambda: 2,  # read live: Spark's tasks add to it as they end
    )
    metrics.record(
        report(
            0,
            1000,
            {
                ORDERS: TableCounts(snapshot_rows=4, inserts=1, updates=2, deletes=3),
                ITEMS: TableCounts(snapshot_rows=4),
            },
            offset(orders={"cursor": {"int": "9"}}, items={"done": True}),
            newest=995.0,
        )
    )
    clock.now = 1012
    metrics.sink_retried()
    port = serve_metrics(metrics, 0)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples = {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }

    def value(name: str, **labels: str) -> float:
        return samples[(f"sparkcdc_{name}", frozenset({"pipeline": "shop-pipe", **labels}.items()))]

    assert value("fetch_event_time_lag_seconds") == 6
    assert value("emit_event_time_lag_seconds") == 7
    assert value("source_idle_seconds") == 11
    assert value("log_bytes_behind") == 100
    assert value("batches_total") == 1
    assert value("sink_retries_total") == 1
    assert value("source_retries_total") == 2
    assert value("snapshot_remaining_tables") == 1
    orders, items = {"table": "shop.orders"}, {"table": "shop.items"}
    assert value("snapshot_rows_total", **orders) == 4
    assert value("snapshot_progress_ratio", **orders) == 0.4
    assert value("snapshot_progress_ratio", **items) == 1.0
    assert value("table_state", **orders, state="snapshotting") == 1
    assert value("table_state", **orders, state="streaming") == 0
    assert value("changes_total", **orders, kind="update") == 2
    position = {"position": "binlog.000001:4", "head": "binlog.000001:104"}
    assert value("log_position_info", **position) == 1


def test_console_lines_in_a_pipe_say_the_batch_and_the_snapshot_progress() -> None:
    clock = Clock()
    out = io.StringIO()
    console = Console(file=out, width=300)
    metrics = PipelineMetrics(
        "p", [ORDERS, ITEMS], RunState(), {ORDERS: 200, ITEMS: 10}, clock=clock
    )
    live = LiveConsole(console, metrics)
    assert not live.live  # a StringIO is not a terminal
    live.start()
    first = report(
        0,
        1000,
        {ORDERS: TableCounts(snapshot_rows=50), ITEMS: TableCounts(snapshot_rows=10)},
        offset(orders={"cursor": {"int": "50"}}, items={"done": True}),
    )
    metrics.record(first)
    live.on_batch(first)
    second = report(
        1,
        1010,
        {ORDERS: TableCounts(snapshot_rows=150, inserts=1, updates=1_200)},
        offset(orders={"done": True}, items={"done": True}),
        newest=1009.5,
    )
    metrics.record(second)
    live.on_batch(second)
    live.stop()
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "batch 0: 60 snapshot rows in 2.00 s; snapshot 29% (shop.orders 25%, shop.items done)"
    )
    assert lines[1] == (
        "batch 1: 150 snapshot rows, 1,201 changes (+1 ~1,200 -0) in 2.00 s, emit lag 2.5 s"
    )
    assert lines[2] == "snapshot done: every table is streaming"
    assert (
        lines[3].startswith("2 batches in ") and "210 snapshot rows and 1,201 changes" in lines[3]
    )


def test_batch_line_escapes_rich_markup_in_names() -> None:
    metrics = PipelineMetrics("p", [TableId("[b]", "t")], RunState(), {})
    line = batch_line(report(0, 0, {}, offset()), metrics.snapshot(), with_snapshot=True)
    assert line.startswith("batch 0: 0 changes")


def test_an_unwritable_checkpoint_or_delta_path_is_refused_up_front(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(UnwritableFolderError, match=r"pipeline.checkpoint: cannot write to"):
        ensure_writable(blocker / "checkpoint", "pipeline.checkpoint")
    sink = make_sink("delta", {"path": str(blocker / "lake")})
    with pytest.raises(UnwritableFolderError, match=r"sink.path: cannot write to .*a-file"):
        sink.open(None, [])  # before Spark is asked anything
    ensure_writable(tmp_path / "fresh" / "checkpoint", "pipeline.checkpoint")  # created
    assert (tmp_path / "fresh" / "checkpoint").is_dir()
    assert list((tmp_path / "fresh" / "checkpoint").iterdir()) == []  # no test file left


#: Every series the endpoint serves (its names as scraped), per pipeline or per table.
SERIES = (
    "up_seconds",
    "batches_total",
    "sink_retries_total",
    "source_retries_total",
    "last_batch_id",
    "last_batch_timestamp_seconds",
    "last_batch_duration_seconds",
    "fetch_event_time_lag_seconds",
    "emit_event_time_lag_seconds",
    "source_idle_seconds",
    "log_bytes_behind",
    "log_position_info",
    "snapshot_remaining_tables",
    "tables",
)
TABLE_SERIES = (
    "snapshot_rows_total",
    "snapshot_rows_estimated",
    "snapshot_progress_ratio",
    "table_state",
    "changes_total",
    "schema_changes_total",
)


def test_every_series_exists_from_the_first_scrape() -> None:
    """Before any batch (a snapshot's first minutes, no log change yet), each series is
    there, NaN where its value is not known: dashboards and absent() alerts need them."""
    metrics = PipelineMetrics("new-pipe", [ORDERS], RunState(), {ORDERS: None}, clock=Clock())
    port = serve_metrics(metrics, 0)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    missing = [s for s in (*SERIES, *TABLE_SERIES) if f"sparkcdc_{s}" not in samples]
    assert not missing
    for name in TABLE_SERIES:
        assert all(labels["table"] == "shop.orders" for labels, _ in samples[f"sparkcdc_{name}"])
    lag = samples["sparkcdc_fetch_event_time_lag_seconds"][0][1]
    assert lag != lag  # NaN: not known yet, and not a made-up 0
    assert samples["sparkcdc_batches_total"][0][1] == 0

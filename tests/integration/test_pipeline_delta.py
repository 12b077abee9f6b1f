"""MariaDB -> Delta pipelines end to end: concurrent writes during the snapshot, verify,
replayed batches, SIGKILL of ``sparkcdc run`` during the snapshot, and clean stops
(SIGINT, SIGTERM) while streaming."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.main import main
from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.batch_report import BatchReport
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import PipelineRun, prepare
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.write_plan import WritePlan, plan_of
from sparkcdc.verify.run import verify_tables
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import (
    at_or_after,
    committed_offsets,
    master_position,
    pipeline_file,
    postgres_sink_block,
    run_until_caught_up,
    run_while_writing,
    snapshot_done,
    wait_until,
)
from tests.support.prometheus import scrape
from tests.support.runs import kill, start_run

__all__ = ["orders"]  # the fixture, re-used

ROOT = Path(__file__).resolve().parents[2]
DELTA_SINK = """
type: delta
path: lake
"""


def delta_rows(spark: Any, path: Path) -> dict[Any, tuple[Any, ...]]:
    rows = spark.read.format("delta").load(str(path)).collect()
    keyed = {r[0]: tuple(r) for r in rows}
    assert len(keyed) == len(rows), "duplicate keys in the Delta table"
    return keyed


def test_concurrent_writes_during_snapshot_then_verify_equal(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    definition = load_pipeline(
        pipeline_file(scratch, mariadb, f"{orders}.(orders|audit)", DELTA_SINK, max_rows=1000)
    )
    run: PipelineRun = prepare(definition, spark=spark)
    writer = mariadb_writer(mariadb, orders, seed=11, key_space=7000)
    writer.limit = 1500  # spread over the snapshot; a longer backlog only adds catch-up time
    run_while_writing(run, mariadb, writer, lambda: None)
    checkpoint = definition.settings.checkpoint
    assert len(committed_offsets(checkpoint)) > 3, "expected several micro-batches"

    lake = scratch / "lake" / orders
    assert delta_rows(spark, lake / "orders") == table_state(mariadb, orders, "orders")
    assert delta_rows(spark, lake / "audit") == table_state(mariadb, orders, "audit")
    verdicts = verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    assert [(str(v.table), v.status) for v in verdicts] == [
        (f"{orders}.audit", "equal"),
        (f"{orders}.orders", "equal"),
    ]
    for name in ("orders", "audit"):  # each commit records its own table's progress only
        history = spark.sql(f"DESCRIBE HISTORY delta.`{lake / name}`").collect()
        metadata = [json.loads(h["userMetadata"]) for h in history if h["userMetadata"]]
        recorded = [json.loads(m["source_offset"]) for m in metadata if m["source_offset"]]
        assert recorded and all(set(o["tables"]) == {f"{orders}.{name}"} for o in recorded)

    # the source moves on: verify still compares at the target's position, saying how far
    # each side's read is (a partition of the source is a group of its chunks)
    mariadb.execute("UPDATE orders SET qty = qty + 1", database=orders)
    said: list[str] = []
    assert all(
        v.status == "equal"
        for v in verify_tables(
            spark, definition, run.sink, run.targets, run.probe.handle, progress=said.append
        )
    )
    for name in ("audit", "orders"):
        for side in ("source", "target"):
            read = [
                re.fullmatch(
                    rf"verify: {orders}\.{name}: {side}: (\d+) of (\d+) partitions.* read", s
                )
                for s in said
            ]
            counts = [(int(m[1]), int(m[2])) for m in read if m]
            assert counts and counts[-1][0] == counts[-1][1] >= 1, said

    # somebody else changes the target: verify names the keys
    some = sorted(table_state(mariadb, orders, "orders"))[:2]
    spark.sql(f"DELETE FROM delta.`{lake / 'orders'}` WHERE id = {some[0]}")
    spark.sql(f"UPDATE delta.`{lake / 'orders'}` SET qty = -1 WHERE id = {some[1]}")
    verdict = {
        str(v.table): v
        for v in verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    }
    bad = verdict[f"{orders}.orders"]
    assert bad.status == "different" and bad.comparison is not None
    assert bad.comparison.differing_keys == 2
    assert sorted(bad.comparison.samples) == [
        ((some[0],), "missing in target"),
        ((some[1],), "values differ"),
    ]


def test_a_replayed_batch_changes_nothing(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    definition = load_pipeline(pipeline_file(scratch, mariadb, f"{orders}.orders", DELTA_SINK))
    run = prepare(definition, spark=spark)
    table = run.tables[0]
    changes = spark.createDataFrame(
        [(1, "a", 1, "insert", 10, None), (2, "b", 2, "insert", 11, None)],
        "id long, name string, qty int, _change_type string, _commit_version long,"
        " _commit_timestamp timestamp",
    )
    batch = plan_of("p:1", 0, {table.source: changes}, '{"log": {}}')
    run.sink.write(batch)
    replay = spark.createDataFrame([(1, "a", 1, "delete", 12, None)], changes.schema)
    run.sink.write(plan_of("p:1", 0, {table.source: replay}, None))  # same batch id
    path = scratch / "lake" / orders / "orders"
    assert sorted(delta_rows(spark, path)) == [1, 2]
    run.sink.write(plan_of("p:1", 1, {table.source: replay}, None))  # the next one
    assert sorted(delta_rows(spark, path)) == [2]


def test_a_history_target_appends_without_transaction_ids_and_skips_replays(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """A history target (``changelog-mode: append``) of this pipeline alone: its appends
    carry no Delta transaction id (checking one computes the table's state), and a
    replayed batch is told from the pipeline's own commits, by the sink that wrote it and
    by a new one (a restart). A history cleaned up past the pipeline's commits cannot
    tell: the batch fails, saying what to do, and nothing is appended twice."""
    definition = load_pipeline(
        pipeline_file(scratch, mariadb, f"{orders}.orders", DELTA_SINK + "changelog-mode: append\n")
    )
    run = prepare(definition, spark=spark)
    assert isinstance(run.sink, DeltaSink)
    source, pipeline = run.tables[0].source, run.sink.pipeline_id
    assert pipeline is not None  # the checkpoint's query id, known before the first batch
    schema = (
        "id long, name string, qty int, _change_type string, _commit_version long,"
        " _commit_timestamp timestamp"
    )
    first = spark.createDataFrame([(1, "a", 1, "insert", 10, None)], schema)
    second = spark.createDataFrame(
        [(1, "a", 1, "update_preimage", 11, None), (1, "b", 1, "update_postimage", 11, None)],
        schema,
    )
    path = scratch / "lake" / orders / "orders"

    def changes() -> list[tuple[Any, ...]]:
        rows = spark.read.format("delta").load(str(path)).collect()
        return sorted((r["_commit_version"], r["_change_type"]) for r in rows)

    once = [(10, "insert"), (11, "update_postimage"), (11, "update_preimage")]
    run.sink.write(plan_of(pipeline, 0, {source: first}, None))
    run.sink.write(plan_of(pipeline, 0, {source: first}, None))  # a replay
    run.sink.write(plan_of(pipeline, 1, {source: second}, None))
    restarted = prepare(definition, spark=spark)  # knows only the target's history
    restarted.sink.write(plan_of(pipeline, 1, {source: second}, None))
    assert changes() == once
    commits = sorted((path / "_delta_log").glob("*.json"))
    assert not any('"txn"' in c.read_text() for c in commits), "a transaction id was written"

    # others' commits until Delta checkpoints, then the log before it cleaned up
    for n in range(12):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('other.writer' = '{n}')")
    for commit in commits:
        commit.unlink()
        commit.with_suffix(".crc").unlink(missing_ok=True)
    cleaned = prepare(definition, spark=spark)
    with pytest.raises(Exception, match="cannot tell whether batch 1's changes") as failed:
        cleaned.sink.write(plan_of(pipeline, 1, {source: second}, None))
    assert "UNSET TBLPROPERTIES ('sparkcdc.appends-for')" in str(failed.value)
    assert changes() == once


@pytest.mark.timeout(900)
def test_sigkill_during_snapshot_then_clean_stops_resume_exactly_once(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """SIGKILL mid-snapshot, then Ctrl-C while the log streams under writes, then SIGTERM
    once caught up: each run resumes where the last left off, and the target equals the
    source. (Kills at random moments while streaming: tests/faults/test_kill_loop.py.)"""
    # every run writes Spark's event log (what its UI and history server show)
    events = scratch / "events"
    events.mkdir()
    event_log = (
        "  spark-conf:\n    spark.eventLog.enabled: 'true'\n"
        f"    spark.eventLog.dir: {events}\n"
        "    spark.eventLog.compress: 'false'\n"  # searched as text below
    )
    pipeline = pipeline_file(
        scratch, mariadb, f"{orders}.orders", DELTA_SINK, max_rows=600, blocks=event_log
    )
    checkpoint = scratch / "checkpoint"
    lake = scratch / "lake" / orders / "orders"

    def batches() -> int:
        return len(committed_offsets(checkpoint)) if (checkpoint / "commits").exists() else 0

    first = start_run(pipeline)
    wait_until(lambda: batches() >= 2 or first.poll() is not None, "two batches")
    assert first.poll() is None, "sparkcdc run exited early"
    assert not snapshot_done(committed_offsets(checkpoint)[-1]), "the snapshot was already over"
    kill(first)  # mid-snapshot

    writer = mariadb_writer(mariadb, orders, seed=5, key_space=7000)
    writer.limit = 1000
    writer.start()
    runs_before = set(scratch.glob("run-*.log"))
    second = start_run(pipeline)
    done_at = 0

    def streaming() -> bool:
        nonlocal done_at
        offsets = committed_offsets(checkpoint) if (checkpoint / "commits").exists() else []
        done = [i for i, o in enumerate(offsets) if snapshot_done(o)]
        if done and not done_at:
            done_at = done[0]
        return bool(done) and len(offsets) >= done_at + 2

    wait_until(lambda: streaming() or second.poll() is not None, "streaming batches")
    # Ctrl-C (to the process group, as a terminal sends it) while the writes stream in,
    # then SIGTERM (what schedulers send) once the last write is in the target: each
    # stops cleanly (exit 0, one line, no traceback)
    os.killpg(second.pid, signal.SIGINT)
    assert second.wait(120) == 0, "sparkcdc run did not stop cleanly on SIGINT"
    writer.stop()
    file, pos = master_position(mariadb)
    # the third run as operators run it: Prometheus endpoint on, Spark's log in a file
    spark_log = scratch / "logs" / "third-run.log"
    third = start_run(pipeline, "--metrics-port", "0", "--log-file", str(spark_log))
    third_log = max(scratch.glob("run-*.log"))

    def caught_up() -> bool:
        if third.poll() is not None:
            return True
        # the stream runs (the second run may have taken every write in already)
        return "Ctrl-C stops" in " ".join(third_log.read_text().split()) and any(
            at_or_after(o, file, pos) for o in committed_offsets(checkpoint)
        )

    wait_until(caught_up, "the pipeline to catch up")
    (port,) = re.findall(r"metrics: http://127\.0\.0\.1:(\d+)/metrics", third_log.read_text())
    table = frozenset({("table", f"{orders}.orders")})

    def metrics_caught_up() -> bool:
        return scrape(int(port)).get(("sparkcdc_log_bytes_behind", frozenset())) == 0

    wait_until(metrics_caught_up, "the metrics to reach the server's head")
    samples = scrape(int(port))
    # every snapshot batch counted once across the SIGKILL and the two restarts: as the
    # runs printed them, a batch replayed after a restart counted once (the writes grow
    # the table while it is copied, so the total is not known beforehand)
    printed: dict[int, int] = {}
    for log in sorted(scratch.glob("run-*.log")):
        for batch, rows in re.findall(r"batch (\d+): ([\d,]+) snapshot rows", log.read_text()):
            printed[int(batch)] = int(rows.replace(",", ""))
    assert samples[("sparkcdc_snapshot_rows_total", table)] == sum(printed.values()) >= 1000
    assert samples[("sparkcdc_source_idle_seconds", frozenset())] >= 0
    os.killpg(third.pid, signal.SIGTERM)
    assert third.wait(120) == 0, "sparkcdc run did not stop cleanly on SIGTERM"
    logs = sorted(set(scratch.glob("run-*.log")) - runs_before)
    assert len(logs) == 2
    for log in logs:
        output = log.read_text()
        assert "pipeline stopped; run it again" in output
        assert "Traceback" not in output and "Exception" not in output, output
        assert " WARN " not in output, output  # Spark's log is in its own file
        assert "batches in" in output  # the summary

    # Spark's log: the default beside the checkpoint, or --log-file; the clean stops left
    # no JVM errors there (a batch cut by the stop used to print a StackOverflowError, and
    # a stop in the planning of a batch had Hadoop log an InterruptedException: the stop
    # now waits for the paused query to be idle)
    spark_logs = [scratch / "checkpoint.log", spark_log]
    for log in spark_logs:
        text = log.read_text()
        assert " WARN " in text, log  # Spark's own lines went here
        for noise in ("StackOverflowError", " ERROR ", "Traceback", "InterruptedException"):
            assert noise not in text, (log, text)

    # the password is in the pipeline file only: not in any log, the checkpoint, nor
    # Spark's event logs (what its UI and history server show of every query)
    password = mariadb.source_options()["password"]
    state = [p for p in checkpoint.rglob("*") if p.is_file()]
    assert state
    event_logs = [p for p in events.rglob("events_*") if p.is_file()]
    assert len(event_logs) >= 3, event_logs  # one per run
    # they hold the batches' queries and plans (the target's path names the database)
    assert any(
        b"SparkListenerSQLExecutionStart" in p.read_bytes() and orders.encode() in p.read_bytes()
        for p in event_logs
    )
    for path in [*spark_logs, *scratch.glob("run-*.log"), *state, *event_logs]:
        assert password.encode() not in path.read_bytes(), path

    assert delta_rows(spark, lake) == table_state(mariadb, orders, "orders")
    definition = load_pipeline(pipeline)
    run = prepare(definition, spark=spark)
    assert [
        v.status for v in verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    ] == ["equal"]


def test_sigterm_while_the_pipeline_starts_stops_it_cleanly(
    mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """A scheduler may send SIGTERM while the JVM starts (which must ignore it, see
    ``sigterm_shield``) or the source is probed: the run stops, exit 0, no traceback."""
    pipeline = pipeline_file(scratch, mariadb, f"{orders}.orders", DELTA_SINK)
    run = start_run(pipeline)
    log = max(scratch.glob("run-*.log"))

    def jvm_started() -> bool:
        found = subprocess.run(
            ["pgrep", "-g", str(run.pid), "java"], capture_output=True, check=False
        )
        return found.returncode == 0 or run.poll() is not None

    wait_until(jvm_started, "the JVM", timeout=60)
    os.killpg(run.pid, signal.SIGTERM)
    assert run.wait(120) == 0, log.read_text()
    output = log.read_text()
    assert "Traceback" not in output and "Exception" not in output, output
    assert "pipeline stopped" in output, output


def test_append_mode_keeps_every_change_and_verifies_its_replay(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """A history target keeps every change; ``verify`` replays it (per key the last
    change) against the source, and reports a change held twice even where the replay
    is equal."""
    sink = DELTA_SINK + "changelog-mode: append\n"
    pipeline = pipeline_file(
        scratch, mariadb, f"{orders}.orders", sink, trigger="available-now", max_rows=100_000
    )
    definition = load_pipeline(pipeline)
    first = prepare(definition, spark=spark)
    first.start()
    first.wait()
    mariadb.execute("UPDATE orders SET qty = 77 WHERE id = 3", database=orders)
    mariadb.execute("DELETE FROM orders WHERE id = 6", database=orders)
    second = prepare(definition, spark=spark)
    second.start()
    second.wait()
    history = spark.read.format("delta").load(str(scratch / "lake" / orders / "orders"))
    assert history.where("_change_type = 'insert'").count() == 2000
    changes = [
        (r["id"], r["qty"], r["_change_type"])
        for r in history.where("_change_type != 'insert'").collect()
    ]
    assert sorted(changes) == [
        (3, 1, "update_preimage"),
        (3, 77, "update_postimage"),
        (6, 2, "delete"),
    ]
    verdicts = verify_tables(spark, definition, second.sink, second.targets, second.probe.handle)
    assert [v.status for v in verdicts] == ["equal"]

    # the last batch's changes appended again, and a later change of key 3 the source lacks
    later = history.where("_change_type != 'insert'").collect()
    moved = [r.asDict() for r in later if r["_change_type"] == "update_postimage"]
    for row in moved:
        row.update(qty=78, _commit_version=row["_commit_version"] + 1)
    extra = spark.createDataFrame(later + [tuple(r.values()) for r in moved], history.schema)
    extra.write.format("delta").mode("append").save(str(scratch / "lake" / orders / "orders"))
    (verdict,) = verify_tables(spark, definition, second.sink, second.targets, second.probe.handle)
    assert verdict.status == "different"
    assert verdict.comparison is not None
    assert verdict.comparison.repeated_changes == 3
    assert (verdict.comparison.differing_keys, verdict.comparison.samples) == (
        1,
        [((3,), "values differ")],
    )


def test_the_demo_runs_end_to_end(scratch: Path) -> None:
    """The README's main job, small: snapshot, live update/delete, verify equal."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkcdc.cli.main",
            "demo",
            "--rows",
            "2000",
            "--workdir",
            str(scratch / "demo"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for expected in ("Snapshot complete", "update_preimage", "update_postimage", "delete"):
        assert expected in out, out
    assert "snapshot done: every table is streaming" in out
    assert "sparkcdc status" in out and "last committed batch" in out
    assert out.count(" equal ") == 2, out
    # status and verify print whole values in a pipe, as the commands do
    assert str(scratch / "demo" / "lakehouse" / "demo" / "demo_orders") in out, out
    # a healthy run is a story, not a log dump: Spark's and the JVM's lines go to the log
    noise = re.compile(r"\b(WARN|WARNING|ERROR)\b|Exception|Traceback|log4j")
    noisy = [line for line in (out + done.stderr).splitlines() if noise.search(line)]
    assert not noisy, noisy
    assert "WARN" in (scratch / "demo" / "spark.log").read_text()
    assert (scratch / "demo" / "lakehouse" / "demo" / "demo_orders" / "_delta_log").is_dir()


@pytest.mark.parametrize(
    "sink",
    [
        "type: delta\npath: lake\ntable-name: everything",
        "type: jdbc\nurl: postgresql://127.0.0.1:5432/t\nusername: u\ntable-name: Everything",
        "type: kafka\nproperties.bootstrap.servers: 127.0.0.1:9\nvalue.format: upsert\ntopic: all",
    ],
)
def test_two_tables_into_one_target_are_refused_before_anything_is_written(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,
    scratch: Path,
    sink: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = pipeline_file(scratch, mariadb, f"{orders}.(orders|audit)", sink)
    definition = load_pipeline(path)
    with pytest.raises(OptionError, match=r"writes .*audit, .*orders into one target") as refused:
        prepare(definition, spark=spark)
    assert "{database} and {table}" in str(refused.value)
    assert not (scratch / "lake").exists()
    # validate refuses it too, before a run is tried
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert "file ok:" in out and "into one target" in err and "{database} and {table}" in err
    assert main(["validate", str(path), "--offline"]) == 0


def operations(spark: Any, path: Path) -> list[str]:
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()
    return [r["operation"] for r in history]


def test_snapshot_rows_are_appended_only_into_a_target_of_this_pipeline_alone(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    def capture_into(folder: Path) -> Path:
        definition = load_pipeline(pipeline_file(folder, mariadb, f"{orders}.orders", DELTA_SINK))
        run = prepare(definition, spark=spark)
        run_until_caught_up(
            run,
            mariadb,
            lambda: mariadb.execute(
                "UPDATE orders SET qty = qty + 1 WHERE id = 3", database=orders
            ),
        )
        return folder / "lake" / orders / "orders"

    # a target of this pipeline alone: snapshot batches are appends, the log's a MERGE
    path = capture_into(scratch)
    done = operations(spark, path)
    assert done.count("WRITE") >= 4 and "MERGE" in done, done
    assert delta_rows(spark, path) == table_state(mariadb, orders, "orders")

    # a target holding rows from elsewhere (another checkpoint): snapshot rows are merged,
    # so a key already there is updated, not duplicated
    other = scratch / "other"
    stale = spark.createDataFrame(
        [(0, "stale", 1), (10**9, "not in source", 1)], "id long, name string, qty int"
    )
    stale.write.format("delta").save(str(other / "lake" / orders / "orders"))
    target = capture_into(other)
    assert "WRITE" not in operations(spark, target)[1:]  # only the stale rows' own write
    expected = {**table_state(mariadb, orders, "orders"), 10**9: (10**9, "not in source", 1)}
    assert delta_rows(spark, target) == expected


def test_a_batch_of_inserts_alone_is_an_append_until_the_target_keeps_a_truncate(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """A batch whose changes of a table are all inserts has keys the target cannot hold
    yet: appended, as snapshot rows are. A TRUNCATE the target keeps (``lenient``, the
    default) leaves it rows the table no longer has, so an insert of such a key is
    merged from then on, not appended twice."""
    definition = load_pipeline(pipeline_file(scratch, mariadb, f"{orders}.orders", DELTA_SINK))
    path = scratch / "lake" / orders / "orders"

    def insert() -> None:
        mariadb.execute(
            "INSERT INTO orders (id, name, qty) VALUES (100001, 'new', 1), (100002, 'new', 2)",
            database=orders,
        )

    run_until_caught_up(prepare(definition, spark=spark), mariadb, insert)
    done = operations(spark, path)
    assert "MERGE" not in done and done.count("WRITE") >= 5, done  # snapshot + inserts
    assert delta_rows(spark, path) == table_state(mariadb, orders, "orders")
    checked = prepare(definition, spark=spark)
    verdicts = verify_tables(spark, definition, checked.sink, checked.targets, checked.probe.handle)
    assert [v.status for v in verdicts] == ["equal"]

    kept = spark.read.format("delta").load(str(path)).count()

    def truncate_and_insert_a_kept_key() -> None:
        mariadb.execute("TRUNCATE TABLE orders", database=orders)
        mariadb.execute(
            "INSERT INTO orders (id, name, qty) VALUES (3, 'again', 9)", database=orders
        )

    run_until_caught_up(prepare(definition, spark=spark), mariadb, truncate_and_insert_a_kept_key)
    assert "MERGE" in operations(spark, path)[len(done) :]
    target = spark.read.format("delta").load(str(path))
    assert target.count() == kept  # id 3 replaced, not added
    assert [tuple(r) for r in target.where("id = 3").collect()] == [(3, "again", 9)]


@pytest.mark.parametrize(
    ("sink", "tables"),
    [("delta", "orders"), ("delta", "(orders|audit)"), ("jdbc-postgres", "orders")],
)
def test_snapshot_batches_written_in_one_pass_count_their_rows_and_replay_once(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,
    scratch: Path,
    caplog: pytest.LogCaptureFixture,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    sink: str,
    tables: str,
) -> None:
    """Batches of one table's snapshot rows go from the source to the target in one
    write, uncached, counted on the way (pipeline/one_pass.py): by an observation of
    Delta's append, or from the plan of the CSV blocks PostgreSQL's ``COPY`` took. A
    replay of such a batch (a crash after the write, before Spark's commit) is skipped
    by the target, so nothing counts its rows: they are counted by reading them again.
    With two tables (the envelope), batches with rows of both keep the cache."""
    envelope = tables != "orders"
    if envelope:
        mariadb.execute("INSERT INTO audit (note) VALUES ('x'), ('y')", database=orders)
    if sink == "delta":
        block, postgres = DELTA_SINK, None
    else:
        postgres = request.getfixturevalue("postgres")
        block = postgres_sink_block(postgres, request.getfixturevalue("pg_db"), monkeypatch)
    pipeline = pipeline_file(
        scratch, mariadb, f"{orders}.{tables}", block, trigger="available-now", max_rows=500
    )
    checkpoint = scratch / "checkpoint"
    path = scratch / "lake" / orders / "orders"

    def target() -> dict[Any, tuple[Any, ...]]:
        if postgres is None:
            return delta_rows(spark, path)
        with postgres.connect(request.getfixturevalue("pg_db")) as conn:
            found = conn.execute(f'SELECT id, name, qty FROM "{orders}"."orders"').fetchall()
        return {r[0]: tuple(r) for r in found}

    def writes() -> int:
        """Delta: the table's versions; PostgreSQL: the batch id its offsets row holds."""
        if postgres is None:
            return len(operations(spark, path))
        with postgres.connect(request.getfixturevalue("pg_db")) as conn:
            (stored,) = conn.execute("SELECT batch_id FROM sparkcdc_offsets").fetchone()
        return int(stored)

    def run_once() -> tuple[list[BatchReport], list[frozenset[TableId]]]:
        reports: list[BatchReport] = []
        uncounted: list[frozenset[TableId]] = []
        run = prepare(load_pipeline(pipeline), spark=spark, on_batch=reports.append)
        write = run.sink.write

        def spied(batch: WritePlan) -> None:
            uncounted.append(frozenset(t for t, w in batch.targets.items() if w.read_once))
            write(batch)

        run.sink.write = spied  # type: ignore[method-assign]
        run.start()
        try:
            run.wait()
        finally:
            run.stop()
        return reports, uncounted

    caplog.set_level(logging.DEBUG, logger="sparkcdc.pipeline.one_pass")

    def recounts() -> int:
        return sum("counting it again" in r.getMessage() for r in caplog.records)

    first, uncounted = run_once()
    assert recounts() == 0  # every write counted its rows
    table, audit = TableId(orders, "orders"), TableId(orders, "audit")
    snapshot = [r for r in first if r.counts.get(table) and r.counts[table].snapshot_rows]
    assert len(snapshot) >= 4 and sum(r.counts[table].snapshot_rows for r in snapshot) == 2000
    assert sum(r.snapshot_rows for r in first) == 2000 + 2 * envelope
    # every batch of orders' rows alone was one write, uncached, the first too (an
    # initial snapshot starts with nothing emitted, so its log range holds no change)
    alone = [r for r in snapshot if r.snapshot_rows == r.counts[table].snapshot_rows]
    assert len(alone) >= len(snapshot) - 1
    assert [uncounted[r.batch_id] for r in alone] == [frozenset({table})] * len(alone)
    mixed = [r for r in snapshot if r not in alone]  # with audit's rows: cached
    assert all(r.counts[audit].snapshot_rows and not uncounted[r.batch_id] for r in mixed)
    if postgres is None:
        # created as this pipeline's own target: no commit of its own marks it so
        assert operations(spark, path) == ["CREATE TABLE"] + ["WRITE"] * len(snapshot)
    assert target() == table_state(mariadb, orders, "orders")
    if envelope:
        audit_rows = delta_rows(spark, scratch / "lake" / orders / "audit")
        assert audit_rows == table_state(mariadb, orders, "audit")

    # Spark's commit of the last snapshot batch is lost: the next run replays it, and
    # the target skips it (Delta: same app id and version; PostgreSQL: its offsets row)
    last = snapshot[-1]
    for batch in range(last.batch_id, max(r.batch_id for r in first) + 1):
        logs = ["commits", "offsets"] if batch > last.batch_id else ["commits"]
        for name in logs:  # each file and its checksum (Hadoop's .crc)
            (checkpoint / name / str(batch)).unlink()
            (checkpoint / name / f".{batch}.crc").unlink(missing_ok=True)
    versions = writes()
    replayed, uncounted = run_once()
    assert replayed[0].batch_id == last.batch_id and uncounted[0] == frozenset({table})
    assert replayed[0].counts[table].snapshot_rows == last.counts[table].snapshot_rows
    assert recounts() == 1
    assert writes() == versions
    assert target() == table_state(mariadb, orders, "orders")


def test_a_comma_separated_tables_list_captures_exactly_its_tables(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """Flink CDC's ``tables: db.a, db.b``: both listed tables, not the cross product of
    namespaces and names, and not the unlisted table of the same database."""
    mariadb.execute("CREATE TABLE items (id INT PRIMARY KEY, v INT)", database=orders)
    mariadb.execute("INSERT INTO items VALUES (1, 1)", database=orders)
    mariadb.execute("INSERT INTO audit (note) VALUES ('x'), ('y')", database=orders)
    mariadb.execute(f"CREATE DATABASE {orders}_other")
    mariadb.execute(f"CREATE TABLE {orders}_other.audit (id INT PRIMARY KEY)")
    tables = f"{orders}.orders, {orders}.audit"
    definition = load_pipeline(
        pipeline_file(scratch, mariadb, tables, DELTA_SINK, trigger="available-now")
    )
    run = prepare(definition, spark=spark)
    assert sorted(t.source.table for t in run.tables) == ["audit", "orders"]
    assert {t.source.database for t in run.tables} == {orders}
    run.start()
    run.wait()
    verdicts = verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    assert [v.status for v in verdicts] == ["equal", "equal"]
    assert len(delta_rows(spark, scratch / "lake" / orders / "audit")) == 2


def test_traffic_of_tables_not_captured_moves_the_committed_position(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """No heartbeat needed: while only other tables change, batches with no rows still
    commit the log's new end, so a restart never re-reads that stretch."""
    pipeline = pipeline_file(scratch, mariadb, f"{orders}.orders", DELTA_SINK)
    run = prepare(load_pipeline(pipeline), spark=spark)

    def audit_rows() -> None:
        with mariadb.connect(orders) as conn, conn.cursor() as cur:
            cur.executemany("INSERT INTO audit (note) VALUES (%s)", [("x",)] * 2000)

    run_until_caught_up(run, mariadb, audit_rows)  # its end: past the audit rows
    assert all(c.changes == 0 for r in run.batches for c in r.counts.values())

"""The fault suite: the source database restarted under a running pipeline, mid-snapshot
and mid-stream, while random writes go on. The pipeline rides through an outage shorter
than its connection retries (``connect.max-retries``: 0.5 + 1 + 2 s by default), and
stops on a longer one with the message to act on (the server unreachable); run again, it
resumes from its checkpoint. A PostgreSQL holding both the source and the JDBC target
restarted mid-stream: the slot outlives it, planning reconnects, the sink tries the batch
again (``sink.max-retries``), and the run goes on. Either way
the target ends equal to the source, ``verify`` agreeing. A Kafka target's broker
restarted mid-stream: the topics read back equal the tables. The outcomes are printed."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.embedded.process import port_open
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.failure import failure_text
from sparkcdc.pipeline.runner import PipelineRun, prepare
from tests.faults.test_kill_loop import upsert_topic_rows
from tests.integration.test_mysql_source import orders
from tests.integration.test_pipeline_postgres import (
    SCHEMA,
    pipeline,
    slot_of,
    source_database,
    source_rows,
)
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import (
    committed_batches,
    committed_offsets,
    pipeline_file,
    postgres_sink_block,
    run_available_now,
    snapshot_done,
    wait_until,
)
from tests.support.postgres_writes import POSTGRES_WRITES
from tests.support.random_writer import RandomWriter

__all__ = ["orders"]  # the fixture, re-used


class Runs:
    """In-process runs of one pipeline: a run that stopped is started again (a resume from
    its checkpoint), and why it stopped is kept in ``outcome``."""

    def __init__(self, spark: Any, path: Path) -> None:
        self.spark, self.path = spark, path
        self.outcome = "rode through"
        self.runs = [self._start()]

    def _start(self) -> PipelineRun:
        run = prepare(load_pipeline(self.path), spark=self.spark)
        run.start()
        return run

    def moved_on(self, checkpoint: Path, before: int) -> Callable[[], bool]:
        """A check for ``wait_until``: three batches committed after ``before``."""

        def check() -> bool:
            if not self.runs[-1].active:
                self.outcome = f"stopped ({failure_text(str(self.runs[-1].query.exception()))})"
                self.runs[-1].stop()
                self.runs.append(self._start())
                return False
            return committed_batches(checkpoint) > before + 3

        return check

    def restart(self) -> None:
        """Stop the run and start the pipeline (its file read again) anew."""
        self.runs[-1].stop()
        self.runs.append(self._start())

    def stop(self) -> None:
        self.runs[-1].stop()


def create_orders(server: EmbeddedMariaDB, db: str) -> None:
    server.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)", database=db
    )
    server.execute("CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT)", database=db)
    server.execute(
        "INSERT INTO orders SELECT seq * 3, CONCAT('name', seq), seq % 50 FROM seq_0_to_1499",
        database=db,
    )


@pytest.mark.faults
@pytest.mark.timeout(900)
def test_mariadb_restarted_mid_snapshot_and_mid_stream(
    spark: Any,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with EmbeddedMariaDB() as server:
        db = server.create_database("shop")
        create_orders(server, db)
        block = postgres_sink_block(postgres, pg_db, monkeypatch)  # quick batches
        pipeline = pipeline_file(scratch, server, f"{db}.(orders|audit)", block, max_rows=200)
        checkpoint = scratch / "checkpoint"
        runs: list[PipelineRun] = []
        outcomes: list[str] = []

        def start() -> None:
            run = prepare(load_pipeline(pipeline), spark=spark)
            run.start()
            runs.append(run)

        def survived(what: str, reached: Any) -> None:
            """Wait for ``reached`` (a committed offset); a run that stopped meanwhile is
            started again (a resume from its checkpoint), saying why it stopped."""

            def check() -> bool:
                if not runs[-1].active:
                    error = failure_text(str(runs[-1].query.exception()))
                    outcomes.append(f"{what}: stopped ({error})")
                    runs[-1].stop()
                    start()
                    return False
                return any(reached(o) for o in committed_offsets(checkpoint))

            wait_until(check, what, timeout=300)
            if not outcomes or not outcomes[-1].startswith(what):
                outcomes.append(f"{what}: rode through")

        writers = []

        def writing(seed: int) -> None:
            writer = mariadb_writer(server, db, seed=seed, key_space=9000)
            writer.limit, writer.pause = 10**9, 0.05
            writer.start()
            writers.append(writer)

        start()
        writing(1)
        try:
            wait_until(lambda: committed_batches(checkpoint) >= 2, "a snapshot batch")
            assert not snapshot_done(committed_offsets(checkpoint)[-1])
            writers[-1].stop()
            # down longer than the retries last (0.5 + 1 + 2 s): the run stops, saying why
            server.restart(down_seconds=10)  # mid-snapshot
            writing(2)
            survived("restart mid-snapshot", snapshot_done)
            assert outcomes[0].startswith("restart mid-snapshot: stopped"), outcomes
            # one of our messages: planning could not connect, a read spent its retries,
            # or a chunk lost its connection mid-rows
            assert re.search(r"connect\.max-retries|once the server is back", outcomes[0])
            writers[-1].stop()
            # a short restart: the retries may ride through it, or the run stops
            server.restart(down_seconds=0)  # mid-stream
            writing(3)
            time.sleep(2)
            now = committed_batches(checkpoint)
            survived("restart mid-stream", lambda o: committed_batches(checkpoint) > now + 1)
        finally:
            for writer in writers:
                writer.stop()
            runs[-1].stop()
        run_available_now(spark, pipeline)
        for table in ("orders", "audit"):
            with postgres.connect(pg_db) as conn:
                rows = conn.execute(f'SELECT * FROM "{db}"."{table}"').fetchall()
            assert {r[0]: tuple(r) for r in rows} == table_state(server, db, table), table
        verdicts = verify_pipeline(load_pipeline(pipeline), spark)
        assert [v.status for v in verdicts] == ["equal", "equal"]
        print("\nsource restarts: " + "; ".join(outcomes))


@pytest.mark.faults
@pytest.mark.timeout(600)
def test_postgres_source_and_target_restarted_mid_stream(
    spark: Any, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One PostgreSQL holds the source database and the JDBC target's, and is restarted
    (``pg_ctl restart``'s fast shutdown) while the pipeline streams random writes: the
    slot outlives the restart, planning reopens its connection, the WAL reads retry, and
    the sink tries the batch whose connection was lost again (``sink.max-retries``, after
    1, 2, 4 s) and writes it once. The run rides through (a stop would have to say why in
    our words, and the next run resume). Then the server is down for 15 s, longer than
    every retry lasts: the run stops, saying why in one line, and the next run resumes.
    Target == source, verify equal."""
    with EmbeddedPostgres() as server:
        database = server.create_database("shop_src")
        lake = server.create_database("lake")
        source_database(server, database)
        sink = postgres_sink_block(server, lake, monkeypatch)
        path = pipeline(scratch, server, database, slot_of(database), sink)
        checkpoint = scratch / "checkpoint"
        writers: list[RandomWriter] = []

        def writing(seed: int) -> None:
            writer = RandomWriter(
                lambda: server.connect(database, options=f"-c search_path={SCHEMA}"),
                POSTGRES_WRITES,
                seed=seed,
                key_space=7000,
            )
            writer.limit, writer.pause = 10**9, 0.05
            writer.start()
            writers.append(writer)

        runs = Runs(spark, path)
        try:
            wait_until(lambda: any(map(snapshot_done, committed_offsets(checkpoint))), "snapshot")
            writing(31)
            time.sleep(1)
            writers[-1].stop()  # its connection would be cut: the writes go on after
            before = committed_batches(checkpoint)
            server.restart(down_seconds=2)
            writing(32)
            wait_until(runs.moved_on(checkpoint, before), "batches after the restart", 300)
            short, runs.outcome = runs.outcome, "rode through"
            writers[-1].stop()
            # down longer than every retry lasts: the run stops, saying why; run again, it
            # resumes from its checkpoint
            before = committed_batches(checkpoint)
            server.restart(down_seconds=15)
            writing(33)
            wait_until(runs.moved_on(checkpoint, before), "batches after the outage", 300)
        finally:
            for writer in writers:
                writer.stop()
            runs.stop()
        run_available_now(spark, path)
        with server.connect(lake) as conn:
            rows = conn.execute(f'SELECT id, name, qty FROM "{SCHEMA}".orders').fetchall()
        expected = source_rows(server, database, f"SELECT id, name, qty FROM {SCHEMA}.orders")
        assert {r[0]: tuple(r) for r in rows} == expected
        verdicts = verify_pipeline(load_pipeline(path), spark)
        assert [v.status for v in verdicts] == ["equal", "equal"]
        retries = runs.runs[0].metrics.snapshot().sink_retries
        print(
            f"\nPostgreSQL source and target restarted mid-stream: {short}, {retries} retries;"
            f" down 15 s: {runs.outcome}"
        )
        assert short == "rode through" and retries >= 1
        assert runs.outcome.startswith("stopped (") and "Traceback" not in runs.outcome


@pytest.mark.faults
@pytest.mark.timeout(600)
def test_kafka_broker_restarted_mid_stream(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, topic: str, scratch: Path
) -> None:
    """The Kafka target's broker shut down for 10 s while the pipeline streams random
    writes, then started again on the same ports with its data: the batch's producer
    waits for it (``delivery.timeout.ms``, 2 min by default) and the run rides through;
    a run that stops instead must say why, and the next one resumes. Then the producer's
    timeouts are made shorter than an outage of 25 s: runs stop with Kafka's error (and
    runs started during the outage stop again), and the first run after the broker is
    back resumes. At-least-once: the upsert topics read back (the last message per key)
    equal the tables."""
    with EmbeddedKafka() as broker:
        block = (
            f"type: kafka\nproperties.bootstrap.servers: {broker.bootstrap_servers}\n"
            f'value.format: upsert\ntopic-pattern: "{topic}.{{table}}"'
        )
        path = pipeline_file(scratch, mariadb, f"{orders}.(orders|audit)", block, max_rows=500)
        checkpoint = scratch / "checkpoint"
        writer = mariadb_writer(mariadb, orders, seed=41, key_space=9000)
        writer.limit, writer.pause = 10**9, 0.05
        runs = Runs(spark, path)
        try:
            wait_until(lambda: any(map(snapshot_done, committed_offsets(checkpoint))), "snapshot")
            writer.start()
            time.sleep(1)
            before = committed_batches(checkpoint)
            broker.restart(down_seconds=10)
            wait_until(runs.moved_on(checkpoint, before), "batches after the restart", 300)
            short_outage = runs.outcome
            timeouts = "".join(
                f"\n  properties.{name}: {ms}"
                for name, ms in (
                    ("delivery.timeout.ms", 6000),
                    ("request.timeout.ms", 3000),
                    ("max.block.ms", 6000),
                )
            )
            path.write_text(
                path.read_text().replace("value.format: upsert", "value.format: upsert" + timeouts)
            )
            runs.restart()
            outage = threading.Thread(target=broker.restart, kwargs={"down_seconds": 25})
            outage.start()  # the check below restarts runs that stop, during the outage too
            wait_until(lambda: not port_open(broker.port), "the broker to go down", 60)
            before = committed_batches(checkpoint)
            wait_until(runs.moved_on(checkpoint, before), "batches after the long outage", 300)
            outage.join()
        finally:
            writer.stop()
            runs.stop()
        run_available_now(spark, path)
        checked = 0
        for table in ("orders", "audit"):
            source = table_state(mariadb, orders, table)
            assert upsert_topic_rows(spark, (broker, topic), table) == source, table
            checked += len(source)
        print(
            f"\nKafka broker restarted mid-stream (down 10 s): {short_outage}; down 25 s, "
            f"longer than the producer's timeouts: {runs.outcome}; {writer.transactions} "
            f"source transactions, {checked} rows checked equal"
        )
        assert short_outage == "rode through" or "kafka" in short_outage.lower(), short_outage
        assert runs.outcome.startswith("stopped") and "kafka" in runs.outcome.lower()

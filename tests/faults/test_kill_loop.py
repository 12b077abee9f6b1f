"""The fault suite: ``sparkcdc run`` killed (SIGKILL) at random moments, again and again,
while random writes (several statements per transaction, key moves, two tables) go on and
``sparkcdc snapshot`` asks for re-reads of a table (signals, taken by runs that are then
killed); then ``--available-now`` and the targets must equal the source, with ``verify``
agreeing, and every signal consumed.

Sinks: Delta (Spark's writer, and delta-rs: `writer: native`, upsert and history),
PostgreSQL (JDBC) and a Kafka upsert topic (at-least-once, read back as a
table); the long form adds a MariaDB (JDBC) target and a Delta history target (replayed
into a table, and no change in it twice). Short form in CI (``SPARKCDC_FAULT_KILLS``,
default 2 kills per sink); the long form runs by hand: ``make faults`` (50 kills per
sink). Each run prints its figures.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.cli.main import main
from sparkcdc.core.crash_points import CRASH_AT, SCHEMA_ALTERED, SCHEMA_APPLIED
from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.spark.kafka.source import read_kafka
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import (
    committed_batches,
    committed_offsets,
    mariadb_sink_block,
    pipeline_file,
    postgres_sink_block,
    run_available_now,
    sink_block,
    snapshot_done,
    wait_until,
)
from tests.support.runs import kill, start_run

__all__ = ["orders"]  # the fixture, re-used

KILLS = int(os.environ.get("SPARKCDC_FAULT_KILLS", "2"))
#: The kill loop's targets. A MariaDB target (its snapshot rows bulk-loaded with LOAD DATA
#: LOCAL, the rest upserted, as into PostgreSQL) and a Delta history target (every change
#: appended, a replay told from the pipeline's own commits) run in the long form only: the
#: short form's time goes to the other three, and to Delta both ways through the native
#: writer (delta-rs, ``writer: native``): its upserts from MySQL 8.0 in the short form
#: (test_kill_loop_mysql.py: each source and each target is killed once, not each pair).
KILL_LOOP_SINKS = [
    "delta",
    "jdbc-postgres",
    "kafka-upsert",
    "delta-history-native",
] + (["delta-native", "jdbc-mariadb", "delta-history"] if KILLS > 2 else [])
#: The schema-change kills' targets: Delta in the short form (a schema change reaches the
#: other targets through the same applier, tested without kills in the pipelines' suites);
#: PostgreSQL and the native writer in the long form too.
SCHEMA_KILL_SINKS = ["delta"] + (["jdbc-postgres", "delta-native"] if KILLS > 2 else [])


def batches(checkpoint: Path) -> int:
    return committed_batches(checkpoint) if (checkpoint / "commits").exists() else 0


def reached(checkpoint: Path, wanted: int, run: subprocess.Popen[bytes]) -> Callable[[], bool]:
    return lambda: batches(checkpoint) >= wanted or run.poll() is not None


def snapshot_committed(checkpoint: Path, run: subprocess.Popen[bytes]) -> Callable[[], bool]:
    def check() -> bool:
        if run.poll() is not None:
            return True
        return batches(checkpoint) > 0 and any(
            snapshot_done(o) for o in committed_offsets(checkpoint)
        )

    return check


def target_rows(
    sink: str, spark: Any, scratch: Path, pg: Any, db: str, table: str
) -> dict[Any, tuple[Any, ...]]:
    if sink in ("delta", "delta-native"):
        found = spark.read.format("delta").load(str(scratch / "lake" / db / table)).collect()
    elif sink == "kafka-upsert":
        return upsert_topic_rows(spark, pg, table)
    elif sink in ("delta-history", "delta-history-native"):
        return history_rows(spark, scratch / "lake" / db / table)
    elif sink == "jdbc-mariadb":
        mariadb, target_db = pg
        found = mariadb.execute(f"SELECT * FROM `{table}`", database=target_db)
    else:
        postgres, pg_db = pg
        with postgres.connect(pg_db) as conn:
            found = conn.execute(f'SELECT * FROM "{db}"."{table}"').fetchall()
    keyed = {r[0]: tuple(r) for r in found}
    assert len(keyed) == len(found), f"duplicate keys in the target of {table}"
    return keyed


def history_rows(spark: Any, path: Path) -> dict[Any, tuple[Any, ...]]:
    """A history target (``changelog-mode: append``) replayed into a table: per key its
    last change by ``_commit_version`` (an update's post-image after its pre-image, which
    share one), gone for a delete. Every change is in it once: a batch appended twice
    would repeat its rows whole (versions are unique per row image, a snapshot row's
    key once per version)."""
    changes = spark.read.format("delta").load(str(path)).collect()
    seen = [(r[0], r["_commit_version"], r["_change_type"]) for r in changes]
    assert len(set(seen)) == len(seen), f"changes appended twice into {path.name}"
    gone = {"delete", "update_preimage"}
    last = sorted(changes, key=lambda r: (r["_commit_version"], r["_change_type"] not in gone))
    rows: dict[Any, tuple[Any, ...]] = {}
    for change in last:
        if change["_change_type"] in gone:
            rows.pop(change[0], None)
        else:
            rows[change[0]] = tuple(change)[:-3]  # without the change columns
    return rows


def upsert_topic_rows(spark: Any, kafka: Any, table: str) -> dict[Any, tuple[Any, ...]]:
    """An upsert topic read back as a table: per key (one key is always in one partition)
    the message with the highest offset, its row JSON's values, or gone for a tombstone.
    Messages a killed batch produced twice are harmless here: the replay comes later."""
    broker, prefix = kafka
    raw = read_kafka(spark, broker.bootstrap_servers, f"{prefix}.{table}", streaming=False)
    rows: dict[Any, tuple[Any, ...]] = {}
    for message in raw.orderBy("partition", "offset").collect():
        (key,) = json.loads(message["key"]).values()
        if message["value"] is None:
            rows.pop(key, None)
        else:
            rows[key] = tuple(json.loads(message["value"]).values())
    return rows


@pytest.mark.faults
@pytest.mark.timeout(600 + 120 * KILLS)
@pytest.mark.parametrize("sink", KILL_LOOP_SINKS)
def test_sigkill_again_and_again_loses_and_repeats_nothing(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    kafka: EmbeddedKafka,
    topic: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(KILLS * 7919 + len(sink))
    if sink == "delta":
        block = "type: delta\npath: lake"
    elif sink == "delta-history":
        block = "type: delta\npath: lake\nchangelog-mode: append"
    elif sink == "delta-native":
        block = "type: delta\npath: lake\nwriter: native"
    elif sink == "delta-history-native":
        block = "type: delta\npath: lake\nchangelog-mode: append\nwriter: native"
    elif sink == "kafka-upsert":  # at-least-once: an upsert topic still reads back exactly
        block = (
            f"type: kafka\nproperties.bootstrap.servers: {kafka.bootstrap_servers}\n"
            f'value.format: upsert\ntopic-pattern: "{topic}.{{table}}"'
        )
    elif sink == "jdbc-mariadb":  # a database of its own: not the source's tables
        target_db = mariadb.create_database(f"target_{orders}"[:64])
        block = mariadb_sink_block(mariadb, target_db, monkeypatch)
    else:
        block = postgres_sink_block(postgres, pg_db, monkeypatch)
    pipeline = pipeline_file(scratch, mariadb, f"{orders}.(orders|audit)", block, max_rows=1000)
    checkpoint = scratch / "checkpoint"
    writer = mariadb_writer(mariadb, orders, seed=KILLS, key_space=9000)
    writer.limit = 10**9
    writer.pause = 0.05  # ~20 transactions/s: the final catch-up stays short, kills many
    writer.start()
    started = time.monotonic()
    survived = signals = 0
    try:
        for round_ in range(KILLS):
            before = batches(checkpoint)
            # a re-read that a killed run may be reading (always in the second round)
            if round_ == 1 or (round_ and rng.random() < 0.7):
                assert main(["snapshot", str(pipeline), "--table", f"{orders}.orders"]) == 0
                signals += 1
            run = start_run(pipeline)
            # at a random moment: before the first new batch, or during one of the next few
            wait_until(reached(checkpoint, before + rng.randint(0, 2), run), "batches")
            time.sleep(rng.uniform(0.0, 1.5))
            assert run.poll() is None, "sparkcdc run exited early (see run-*.log)"
            kill(run)
            survived += 1
    finally:
        writer.stop()
    run_available_now(spark, pipeline)
    final = committed_offsets(checkpoint)[-1]
    if signals:
        size = load_pipeline(pipeline).signal_file.stat().st_size
        assert final["signals"]["file"] == size, "a signal was not consumed"
    assert not any("again" in t for t in final["tables"].values()), "a re-read did not end"

    if sink == "kafka-upsert":
        pg: tuple[Any, str] = (kafka, topic)
    elif sink == "jdbc-mariadb":
        pg = (mariadb, target_db)
    else:
        pg = (postgres, pg_db)
    checked = 0
    for table in ("orders", "audit"):
        source = table_state(mariadb, orders, table)
        assert target_rows(sink, spark, scratch, pg, orders, table) == source, table
        checked += len(source)
    if sink != "kafka-upsert":  # a history target is verified as its replay
        verdicts = verify_pipeline(load_pipeline(pipeline), spark)
        assert [v.status for v in verdicts] == ["equal", "equal"]
    if sink.endswith("-native"):  # the rows came through delta-rs, not Spark's writer
        lake = scratch / "lake" / orders / "orders"
        engines = spark.sql(f"DESCRIBE HISTORY delta.`{lake}`").select("engineInfo").collect()
        assert any(e.startswith("delta-rs") for (e,) in engines), engines
    print(
        f"\nfault suite [{sink}]: {survived} SIGKILLs survived, {signals} re-reads signalled, "
        f"{batches(checkpoint)} batches committed, {writer.transactions} source transactions, "
        f"{checked} rows checked equal, "
        f"{time.monotonic() - started:.0f} s"
    )


def evolve_pipeline(scratch: Path, mariadb: EmbeddedMariaDB, db: str, block: str) -> Path:
    """The schema-change tests' pipeline: ``orders`` and ``audit`` under ``evolve``."""
    return pipeline_file(
        scratch,
        mariadb,
        f"{db}.(orders|audit)",
        block,
        max_rows=1000,
        blocks="  schema.change.behavior: evolve\n",
    )


@pytest.mark.faults
@pytest.mark.timeout(600 + 120 * KILLS)
@pytest.mark.parametrize("sink", [s for s in SCHEMA_KILL_SINKS if s != "delta-native"])
def test_sigkill_around_schema_changes_applies_each_once(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each round adds a column to ``orders`` and fills it for some rows, renames the
    previous round's column and drops the one before, while random writes go on, then
    kills ``sparkcdc run`` at a random moment around the changes' batches (before them,
    between the sink's ALTER and the batch's commit, or after). Under ``evolve`` the
    target must end equal to the source, every column in the source's order: a rename
    applied twice, or taken as a drop and an add, would lose the renamed column's values."""
    rng = random.Random(KILLS * 104729 + len(sink))
    pipeline = evolve_pipeline(
        scratch, mariadb, orders, sink_block(sink, postgres, pg_db, monkeypatch)
    )
    checkpoint = scratch / "checkpoint"
    writer = mariadb_writer(mariadb, orders, seed=KILLS + 1, key_space=9000)
    writer.limit = 10**9
    writer.pause = 0.05
    writer.start()
    started = time.monotonic()
    try:
        for round_ in range(KILLS):
            run = start_run(pipeline)
            # the changes land in the stream (changes during a snapshot: test_mysql_schema_changes)
            wait_until(snapshot_committed(checkpoint, run), "the snapshot")
            assert run.poll() is None, "sparkcdc run exited early (see run-*.log)"
            column = f"extra_{round_}"
            mariadb.execute(f"ALTER TABLE orders ADD COLUMN {column} INT", database=orders)
            if round_ >= 1:
                previous = round_ - 1
                mariadb.execute(
                    f"ALTER TABLE orders RENAME COLUMN extra_{previous} TO moved_{previous}",
                    database=orders,
                )
            if round_ >= 2:
                mariadb.execute(
                    f"ALTER TABLE orders DROP COLUMN moved_{round_ - 2}", database=orders
                )
            mariadb.execute(
                f"UPDATE orders SET {column} = id % 97 WHERE id % 5 = {round_ % 5}",
                database=orders,
            )
            time.sleep(rng.uniform(0.0, 2.0))
            assert run.poll() is None, "sparkcdc run exited early (see run-*.log)"
            kill(run)
    finally:
        writer.stop()
    run_available_now(spark, pipeline)
    checked = 0
    for table in ("orders", "audit"):
        source = table_state(mariadb, orders, table)
        assert target_rows(sink, spark, scratch, (postgres, pg_db), orders, table) == source
        checked += len(source)
    print(
        f"\nfault suite, schema changes [{sink}]: {KILLS} columns added, "
        f"{max(0, KILLS - 1)} renamed, {max(0, KILLS - 2)} dropped, {KILLS} SIGKILLs, "
        f"{batches(checkpoint)} batches, {checked} rows checked equal, "
        f"{time.monotonic() - started:.0f} s"
    )


@pytest.mark.faults
@pytest.mark.timeout(900)
@pytest.mark.parametrize("sink", SCHEMA_KILL_SINKS)
def test_sigkill_right_after_a_schema_change_reached_the_target_applies_it_once(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    orders: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kills aimed where random ones seldom land (``SPARKCDC_CRASH_AT``,
    core/crash_points.py): after the sink applied a schema change to the target,
    before the batch carrying it is committed. One run dies at an ALTER adding two
    columns (then filled), once the run state recorded it; the next dies at an ALTER
    renaming the first and dropping the second, before the run state recorded it (the
    change written ahead is what the restart has). Each time the target already shows the
    change and the checkpoint does not, and a restart replays the batch, seeing the change
    again. Under ``evolve`` the target must end equal to the source, the renamed column
    with its values (a rename applied twice, or taken as a drop and an add, would lose
    them; a restart that took the target for the one before the change would add the
    renamed and dropped columns back)."""
    pipeline = evolve_pipeline(
        scratch, mariadb, orders, sink_block(sink, postgres, pg_db, monkeypatch)
    )
    checkpoint = scratch / "checkpoint"

    def target_columns() -> list[str]:
        if sink in ("delta", "delta-native"):
            lake = scratch / "lake" / orders / "orders"
            return list(spark.read.format("delta").load(str(lake)).columns)
        rows = postgres.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = 'orders' ORDER BY ordinal_position",
            (orders,),
            dbname=pg_db,
        )
        return [r[0] for r in rows]

    changes = [
        (
            "ALTER TABLE orders ADD COLUMN extra INT, ADD COLUMN spare INT",
            "UPDATE orders SET extra = id % 97, spare = 1 WHERE id % 3 = 0",
            SCHEMA_APPLIED,
        ),
        (
            "ALTER TABLE orders RENAME COLUMN extra TO moved, DROP COLUMN spare",
            None,
            SCHEMA_ALTERED,
        ),
    ]
    writer = mariadb_writer(mariadb, orders, seed=3, key_space=9000)
    writer.limit = 10**9
    writer.pause = 0.05
    try:
        for statement, fill, point in changes:
            # the child's environment only: never this process's
            run = start_run(pipeline, env={CRASH_AT: point})
            wait_until(snapshot_committed(checkpoint, run), "the snapshot")
            if not writer.is_alive():
                writer.start()
            assert run.poll() is None, "sparkcdc run exited early (see run-*.log)"
            mariadb.execute(statement, database=orders)
            if fill:
                mariadb.execute(fill, database=orders)
            assert run.wait(300) == -signal.SIGKILL, "the run did not die at the crash point"
            columns = mariadb.execute("SHOW COLUMNS FROM orders", database=orders)
            assert target_columns() == [c[0] for c in columns], f"{statement} not applied"
            planned = len(list((checkpoint / "offsets").glob("[0-9]*")))
            assert planned == batches(checkpoint) + 1, "the batch of the change was committed"
            run_available_now(spark, pipeline)  # replays that batch: the change seen again
    finally:
        writer.stop()
    run_available_now(spark, pipeline)
    for table in ("orders", "audit"):
        source = table_state(mariadb, orders, table)
        assert target_rows(sink, spark, scratch, (postgres, pg_db), orders, table) == source
    verdicts = verify_pipeline(load_pipeline(pipeline), spark)
    assert [v.status for v in verdicts] == ["equal", "equal"]

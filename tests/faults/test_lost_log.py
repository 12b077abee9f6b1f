"""The fault suite: the source's log from a stopped pipeline's position is lost (MariaDB's
binlogs purged past it; PostgreSQL's slot dropped) while random writes go on (several
statements per transaction, key moves, deletes of rows the target holds, two tables).

The next run stops with one message naming what was lost (the purged binlog file) and the
recovery command on the pipeline's own file. ``sparkcdc recover`` checks the loss against
the server and writes the signal; the run after it empties the targets of the tables it
had read, reads them again while the writes go on, and the targets end equal to the
source, ``verify`` agreeing: nothing the lost log deleted stays behind. A table dropped
while the log was lost is followed as a drop (``lenient``: its target is kept). The
outcome is printed (docs/design.md, "A lost log"). ``make faults`` (the long form) adds a
PostgreSQL (JDBC) target."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.cli.main import main
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import PipelineFailedError, PipelineRun, prepare
from sparkcdc.snapshot.recovery import LOG_LOST
from tests.faults.test_kill_loop import KILLS, target_rows
from tests.faults.test_restarts import create_orders
from tests.integration.test_pipeline_postgres import (
    SCHEMA,
    drop_slot,
    pipeline,
    slot_of,
    source_database,
    source_rows,
)
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import (
    committed_offsets,
    pipeline_file,
    run_available_now,
    sink_block,
    snapshot_done,
    wait_until,
)
from tests.support.postgres_writes import POSTGRES_WRITES
from tests.support.random_writer import RandomWriter

#: Into PostgreSQL (the targets emptied by a DELETE in the batch's transaction) in the long
#: form only: the short form's time goes to Delta and to the PostgreSQL source.
LOST_LOG_SINKS = ["delta"] + (["jdbc-postgres"] if KILLS > 2 else [])


def purge_through(server: EmbeddedMariaDB, file: str) -> None:
    """Purge the binlogs up to and including ``file``: a new one is started, and the
    purge is repeated while a reader that left a moment ago still holds ``file`` (the
    server does not purge a file in use)."""
    server.execute("FLUSH BINARY LOGS")
    newest = server.execute("SHOW MASTER STATUS")[0][0]

    def gone() -> bool:
        server.execute(f"PURGE BINARY LOGS TO '{newest}'")
        return file not in [row[0] for row in server.execute("SHOW BINARY LOGS")]

    wait_until(gone, f"{file} to be purged", timeout=60)


def streamed(path: Path, spark: Any, batches: int) -> PipelineRun:
    """A run of the pipeline, once its snapshot is committed and ``batches`` more after it
    (stopped by the caller)."""
    run = prepare(load_pipeline(path), spark=spark)
    checkpoint = run.definition.settings.checkpoint
    run.start()

    def reached() -> bool:
        assert run.active, f"the pipeline stopped: {run.query.exception()}"
        offsets = committed_offsets(checkpoint)
        done = [i for i, o in enumerate(offsets) if snapshot_done(o)]
        return bool(done) and len(offsets) - done[0] > batches

    wait_until(reached, "the snapshot and batches after it")
    return run


def failure(path: Path, spark: Any) -> str:
    """Why a run of the pipeline stops (it must)."""
    run = prepare(load_pipeline(path), spark=spark)
    run.start()
    with pytest.raises(PipelineFailedError) as stopped:
        run.wait()
    return str(stopped.value)


def recover(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(["recover", str(path)]) == 0
    return capsys.readouterr().out


def read_again(path: Path, spark: Any) -> None:
    """Run until the newest committed batch has every table's snapshot done again after
    the recovery (whose marks its entries keep)."""
    run = prepare(load_pipeline(path), spark=spark)
    checkpoint = run.definition.settings.checkpoint
    run.start()
    try:

        def done() -> bool:
            assert run.active, f"the pipeline stopped: {run.query.exception()}"
            newest = committed_offsets(checkpoint)[-1]
            return LOG_LOST in json.dumps(newest) and snapshot_done(newest)

        wait_until(done, "the tables read again")
    finally:
        run.stop()


@pytest.mark.faults
@pytest.mark.timeout(900)
@pytest.mark.parametrize("sink", LOST_LOG_SINKS)
def test_binlogs_purged_past_a_stopped_pipeline_are_recovered_by_reading_its_tables_again(
    spark: Any,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    sink: str,
) -> None:
    with EmbeddedMariaDB() as server:
        db = server.create_database("shop")
        create_orders(server, db)
        server.execute("CREATE TABLE notes (id INT PRIMARY KEY, note TEXT)", database=db)
        server.execute("INSERT INTO notes VALUES (1, 'kept by lenient')", database=db)
        block = sink_block(sink, postgres, pg_db, monkeypatch)
        path = pipeline_file(scratch, server, f"{db}.(orders|audit|notes)", block, max_rows=300)
        writer = mariadb_writer(server, db, seed=61, key_space=9000)
        writer.limit, writer.pause = 10**9, 0.05
        writer.start()
        try:
            streamed(path, spark, batches=2).stop()
            position = committed_offsets(scratch / "checkpoint")[-1]["log"]
            signals = load_pipeline(path).signal_file
            assert main(["recover", str(path)]) == 1  # nothing lost yet: nothing written
            assert not signals.exists() or signals.read_text() == ""
            # stopped: the tables change (rows the target holds deleted among them), one is
            # dropped, and the binlogs from the pipeline's position on are purged
            server.execute("DELETE FROM orders WHERE id < 600", database=db)
            server.execute("DROP TABLE notes", database=db)
            time.sleep(2)
            purge_through(server, position["file"])
            stopped = failure(path, spark)
            assert f"binlog file {position['file']}" in stopped, stopped
            assert f"sparkcdc recover {path}" in stopped, stopped
            assert server.cdc.password not in stopped

            said = recover(path, capsys)
            tables = f"{db}.audit, {db}.notes, {db}.orders"
            assert f"reads again, emptying their targets first: {tables}" in said, said
            read_again(path, spark)
        finally:
            writer.stop()
        run_available_now(spark, path)
        checked = 0
        for table in ("orders", "audit"):
            expected = table_state(server, db, table)
            found = target_rows(sink, spark, scratch, (postgres, pg_db), db, table)
            assert found == expected, table
            checked += len(expected)
        # the dropped table's target is kept ('lenient'), with the rows it had
        kept = target_rows(sink, spark, scratch, (postgres, pg_db), db, "notes")
        assert kept == {1: (1, "kept by lenient")}
        verdicts = verify_pipeline(load_pipeline(path), spark)
        assert [(v.table.table, v.status) for v in verdicts] == [
            ("audit", "equal"),
            ("orders", "equal"),
        ]
        print(
            f"\nbinlogs purged past the pipeline's position ({position['file']}), into {sink}: "
            f"recovered by `sparkcdc recover`, {writer.transactions} source transactions, "
            f"{checked} rows checked equal, verify equal"
        )


@pytest.mark.faults
@pytest.mark.timeout(600)
def test_a_dropped_postgres_slot_is_recovered_by_reading_the_tables_again(
    spark: Any,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The slot is the WAL a PostgreSQL stream resumes from; dropped while the pipeline is
    stopped (by hand, or by a server that invalidated it), the WAL in between is gone."""
    source_database(postgres, pg_db)
    path = pipeline(scratch, postgres, pg_db, slot_of(pg_db), "type: delta\npath: lake")
    writer = RandomWriter(
        lambda: postgres.connect(pg_db, options=f"-c search_path={SCHEMA}"),
        POSTGRES_WRITES,
        seed=62,
        key_space=7000,
    )
    writer.limit, writer.pause = 10**9, 0.05
    writer.start()
    try:
        streamed(path, spark, batches=2).stop()
        postgres.execute(f"DELETE FROM {SCHEMA}.orders WHERE id < 600", dbname=pg_db)
        time.sleep(1)
        drop_slot(postgres, pg_db)
        time.sleep(1)
        stopped = failure(path, spark)
        assert f"replication slot '{slot_of(pg_db)}'" in stopped, stopped
        assert f"sparkcdc recover {path}" in stopped, stopped
        said = recover(path, capsys)
        assert f"{SCHEMA}.orders, {SCHEMA}.prices" in said, said
        read_again(path, spark)
    finally:
        writer.stop()
    run_available_now(spark, path)
    lake = scratch / "lake" / SCHEMA / "orders"
    rows = spark.read.format("delta").load(str(lake)).select("id", "name", "qty").collect()
    sql = f"SELECT id, name, qty FROM {SCHEMA}.orders"
    assert {r[0]: tuple(r) for r in rows} == source_rows(postgres, pg_db, sql)
    verdicts = verify_pipeline(load_pipeline(path), spark)
    assert [v.status for v in verdicts] == ["equal", "equal"]
    drop_slot(postgres, pg_db)
    print(f"\nPostgreSQL slot dropped: recovered, {writer.transactions} source transactions")

"""A ``recover-lost-log`` signal empties the targets only when the server says the log is
lost (issue #63): whoever may write to the signal channel cannot empty them with a signal
alone. A pipeline into Delta with a row only its target holds (so an emptied target shows,
even once refilled): the signal while the log is there is refused and consumed, the stream
goes on, the row stays; the same signal after the binlogs were purged past the pipeline's
position recovers (MariaDB), and is refused on PostgreSQL while its slot is there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparkcdc.core.identifiers import quoted
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.snapshot.recovery import LOG_LOST
from sparkcdc.snapshot.signal_file import append_signal
from tests.faults.test_lost_log import purge_through
from tests.integration.test_pipeline_postgres import (
    SCHEMA,
    drop_slot,
    pipeline,
    slot_of,
    source_rows,
)
from tests.support.mariadb_writes import table_state
from tests.support.pipelines import committed_offsets, pipeline_file, run_available_now

#: The signal, as anyone who may write to the channel can write it.
SIGNAL = {"id": "forged", "type": "recover-lost-log"}
#: A key only the target holds: gone when the target is emptied.
ONLY_IN_TARGET = 1_000_000


def delta_rows(spark: Any, path: Path) -> dict[Any, tuple[Any, ...]]:
    return {r[0]: tuple(r) for r in spark.read.format("delta").load(str(path)).collect()}


def add_target_only_row(spark: Any, target: Path, values: str) -> None:
    spark.sql(f"INSERT INTO delta.{quoted(str(target))} VALUES ({ONLY_IN_TARGET}, {values})")


def recovered(checkpoint: Path) -> bool:
    return any(LOG_LOST in json.dumps(o) for o in committed_offsets(checkpoint))


def signal_consumed(checkpoint: Path, signals: Path) -> bool:
    last = committed_offsets(checkpoint)[-1]
    return bool(last.get("signals", {}).get("file") == signals.stat().st_size)


def test_a_recovery_signal_needs_purged_binlogs(spark: Any, scratch: Path) -> None:
    with EmbeddedMariaDB() as server:
        db = server.create_database("shop")
        server.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=db)
        rows = ", ".join(f"({i}, {i})" for i in range(1, 301))
        server.execute(f"INSERT INTO t VALUES {rows}", database=db)
        path = pipeline_file(scratch, server, f"{db}.t", "type: delta\npath: lake")
        checkpoint, signals = scratch / "checkpoint", load_pipeline(path).signal_file
        target = scratch / "lake" / db / "t"
        run_available_now(spark, path)
        add_target_only_row(spark, target, "-1")
        expected = {**table_state(server, db, "t"), ONLY_IN_TARGET: (ONLY_IN_TARGET, -1)}
        assert delta_rows(spark, target) == expected

        # a signal while the binlogs are there: refused, consumed, the stream goes on
        append_signal(signals, SIGNAL)
        server.execute("INSERT INTO t VALUES (301, 301)", database=db)
        server.execute("DELETE FROM t WHERE id = 1", database=db)
        run_available_now(spark, path)
        assert signal_consumed(checkpoint, signals)
        assert not recovered(checkpoint)
        expected = {**table_state(server, db, "t"), ONLY_IN_TARGET: (ONLY_IN_TARGET, -1)}
        assert delta_rows(spark, target) == expected

        # the binlogs purged past the pipeline's position: the same signal recovers
        position = committed_offsets(checkpoint)[-1]["log"]
        server.execute("DELETE FROM t WHERE id = 2", database=db)
        purge_through(server, position["file"])
        append_signal(signals, {**SIGNAL, "id": "real"})
        run_available_now(spark, path)
        assert recovered(checkpoint)
        assert delta_rows(spark, target) == table_state(server, db, "t")


def test_a_recovery_signal_is_refused_while_the_postgres_slot_is_there(
    spark: Any, postgres: EmbeddedPostgres, pg_db: str, scratch: Path
) -> None:
    with postgres.connect(pg_db) as conn:
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(f"CREATE TABLE {SCHEMA}.orders (id BIGINT PRIMARY KEY, name TEXT, qty INT)")
        conn.execute(f"ALTER TABLE {SCHEMA}.orders REPLICA IDENTITY FULL")
        conn.execute(
            f"INSERT INTO {SCHEMA}.orders SELECT g, 'n' || g, g FROM generate_series(1, 300) g"
        )
    sink = "type: delta\npath: lake"
    path = pipeline(scratch, postgres, pg_db, slot_of(pg_db), sink, "lenient", "orders")
    checkpoint, signals = scratch / "checkpoint", load_pipeline(path).signal_file
    target = scratch / "lake" / SCHEMA / "orders"
    sql = f"SELECT id, name, qty FROM {SCHEMA}.orders"
    try:
        run_available_now(spark, path)
        add_target_only_row(spark, target, "'kept', -1")
        append_signal(signals, SIGNAL)
        postgres.execute(f"INSERT INTO {SCHEMA}.orders VALUES (301, 'n301', 301)", dbname=pg_db)
        postgres.execute(f"DELETE FROM {SCHEMA}.orders WHERE id = 1", dbname=pg_db)
        run_available_now(spark, path)
        assert signal_consumed(checkpoint, signals)
        assert not recovered(checkpoint)
        expected = source_rows(postgres, pg_db, sql)
        assert delta_rows(spark, target) == {
            **expected,
            ONLY_IN_TARGET: (ONLY_IN_TARGET, "kept", -1),
        }
    finally:
        drop_slot(postgres, pg_db)

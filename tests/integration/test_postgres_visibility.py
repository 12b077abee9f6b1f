"""A transaction in the WAL that other sessions cannot see yet: exact chunks all the same.

With ``synchronous_standby_names`` naming a standby that never connects, a commit writes
and flushes its WAL record (logical decoding returns it) but the transaction stays
invisible to every other session until the wait is cancelled. While it hangs, batches
must not end past it: a chunk read then would miss a change its batch position includes.
The update touches keys the snapshot has not reached yet, so a batch ending past it would
lose it for good (tests/unit/test_visibility_normalize.py checks the per-key algebra; this
checks the batch end the driver picks on a real server).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.connectors.registry import connector
from sparkcdc.embedded import EmbeddedPostgres
from tests.support.changelog import ChangelogReplayer
from tests.support.inprocess import run_batches


@pytest.fixture
def private_postgres() -> Iterator[EmbeddedPostgres]:
    """A server of its own: synchronous replication settings are server-wide."""
    server = EmbeddedPostgres().start()
    try:
        yield server
    finally:
        server.stop()


def test_a_commit_invisible_to_snapshots_holds_the_batch_end_back(
    private_postgres: EmbeddedPostgres,
) -> None:
    pg = private_postgres
    pg.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
    pg.execute("ALTER TABLE t REPLICA IDENTITY FULL")
    pg.execute("INSERT INTO t SELECT g, 0 FROM generate_series(1, 400) g")
    options = {
        "hostname": pg.host,
        "port": str(pg.port),
        "username": pg.user,
        "password": pg.password,
        "database-name": "postgres",
        "schema-name": "public",
        "table-name": "t",
        "slot.name": "hold_back",
        "scan.incremental.snapshot.chunk.size": "50",
    }
    found = connector("postgres")
    source = found.source(found.parse_config(options))
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "v"])
    offset = source.initial_offset()
    # the snapshot, and one batch that only clears its chunk span (docs/design.md)
    offset = run_batches(source, offset, replayer.apply_batch, max_rows=60, max_batches=3)

    pg.execute("ALTER SYSTEM SET synchronous_standby_names = 'ghost'")
    pg.execute("SELECT pg_reload_conf()")
    stuck = pg.connect()
    stuck.execute("SET synchronous_commit = on")
    ((pid,),) = stuck.execute("SELECT pg_backend_pid()").fetchall()
    hanging = threading.Thread(
        target=stuck.execute, args=("UPDATE t SET v = 7 WHERE id > 300",), daemon=True
    )
    hanging.start()
    local = pg.connect()
    local.execute("SET synchronous_commit = local")
    deadline = time.monotonic() + 30
    while not local.execute(
        "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event = 'SyncRep'", (pid,)
    ).fetchall():
        assert time.monotonic() < deadline, "the commit did not wait for the standby"
        time.sleep(0.05)
    ((flushed,),) = local.execute("SELECT pg_current_wal_flush_lsn()::text").fetchall()
    local.execute("UPDATE t SET v = 8 WHERE id <= 10")  # visible, committed after it

    emitted: list[dict[str, Any]] = []

    def collect(rows: list[dict[str, Any]]) -> None:
        emitted.extend(rows)
        replayer.apply_batch(rows)

    # the snapshot goes on (the stuck transaction is in the WAL, not in any snapshot)
    offset = run_batches(source, offset, collect, max_rows=60, max_batches=1000)
    assert lsn_from_text(offset["log"]["lsn"]) <= lsn_from_text(str(flushed))
    assert all(done.get("done") for done in offset["tables"].values())
    assert not any(r["v"] in (7, 8) for r in emitted), "a batch ended past the hidden commit"

    local.execute("SELECT pg_cancel_backend(%s)", (pid,))  # committed locally: now visible
    hanging.join(30)
    local.execute("ALTER SYSTEM RESET synchronous_standby_names")
    local.execute("SELECT pg_reload_conf()")
    run_batches(source, offset, replayer.apply_batch, max_rows=60)
    state = {r[0]: r for r in pg.execute("SELECT id, v FROM t")}
    assert sum(1 for _, v in state.values() if v == 7) == 100
    assert replayer.state == state
    source.close()
    stuck.close()
    local.close()

"""Capturing MariaDB replicas: a replica that does not log what it replicates is refused up
front; a source reading one replica fails over to another by GTID (its file names and byte
offsets mean nothing there) and the replayed changelog equals the primary's table, with
nothing lost or doubled, even for a batch planned on the first replica and read on the
second; a second replica that lags behind the checkpoint is refused until it caught up.
A Spark task that reaches another server than the one its batch was planned on fails
before reading.

The servers are a topology of their own (a primary and three replicas) so the shared one
keeps a single server in its GTID state.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog import locate
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SourceConfigurationError, SourceUnavailableError
from sparkcdc.embedded import EmbeddedMariaDB
from tests.support.changelog import ChangelogReplayer
from tests.support.inprocess import run_batches
from tests.support.mariadb_writes import mariadb_writer, table_state

DB = "shop"


@pytest.fixture(scope="module")
def topology() -> Iterator[tuple[EmbeddedMariaDB, EmbeddedMariaDB, EmbeddedMariaDB]]:
    """A primary and two replicas that write what they replicate to their binlogs."""
    servers = [EmbeddedMariaDB().start()]
    try:
        for _ in range(2):
            servers.append(EmbeddedMariaDB(settings={"log-slave-updates": ""}).start())
            servers[-1].replicate_from(servers[0])
        yield servers[0], servers[1], servers[2]
    finally:
        for server in servers:
            server.stop()


def source(server: EmbeddedMariaDB, database: str = DB) -> MySqlCdcSource:
    options = {
        **server.source_options(),
        "database-name": database,
        "table-name": "orders",
        "server-id": "6200-6210",
        "scan.incremental.snapshot.chunk.size": "200",
        "scan.incremental.snapshot.rows-per-batch": "400",  # 1500 rows: 4 batches or more
    }
    return MySqlCdcSource(parse_config(options))


def read(source: MySqlCdcSource, start: dict[str, Any], end: dict[str, Any]) -> list[Any]:
    """One planned batch, read the way Spark reads it (pickled partitions)."""
    rows: list[dict[str, Any]] = []
    for spec in source.partitions(start, end):
        executor = pickle.loads(pickle.dumps(source))
        for batch in executor.read(pickle.loads(pickle.dumps(spec))):
            rows.extend(pa.Table.from_batches([batch]).to_pylist())
    return rows


def test_a_replica_that_does_not_log_what_it_replicates_is_refused(
    topology: tuple[EmbeddedMariaDB, EmbeddedMariaDB, EmbeddedMariaDB],
) -> None:
    primary = topology[0]
    with EmbeddedMariaDB() as replica:  # log_slave_updates is OFF by default
        replica.replicate_from(primary)
        replica.catch_up(primary)
        capture = source(replica)
        with pytest.raises(SourceConfigurationError, match="log_slave_updates is OFF"):
            capture.initial_offset()
        capture.close()


def test_failover_to_another_replica_by_gtid_loses_and_repeats_nothing(
    topology: tuple[EmbeddedMariaDB, EmbeddedMariaDB, EmbeddedMariaDB],
) -> None:
    primary, first, second = topology
    primary.create_database(DB)
    primary.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)", database=DB
    )
    primary.execute(
        "CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT)", database=DB
    )
    primary.execute(
        "INSERT INTO orders SELECT seq, CONCAT('n', seq), seq % 7 FROM seq_0_to_1499",
        database=DB,
    )
    first.catch_up(primary)
    second.catch_up(primary)
    second.execute("STOP SLAVE")  # falls behind what the first replica has
    second.execute("FLUSH BINARY LOGS")  # and its binlog names other files than the first's
    primary.execute("INSERT INTO audit (note) VALUES ('the second lacks this')", database=DB)
    first.catch_up(primary)  # so every offset read on the first is ahead of the second
    orders = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"])
    apply = orders.apply_batch

    writer = mariadb_writer(primary, DB, seed=11, key_space=2000)
    writer.start()
    try:
        on_first = source(first)
        offset = run_batches(on_first, None, apply, max_rows=300, batches=2)
        assert not all(p.get("done") for p in offset["tables"].values()), "mid-snapshot"
        planned = on_first.latest_offset(offset, 300)  # planned on the first, read later
        on_first.close()
        assert offset["origin"] == planned["origin"] == str(first.server_id)

        on_second = source(second)
        with pytest.raises(SourceConfigurationError, match="has not yet written every"):
            read(on_second, offset, planned)
        on_second.close()

        second.execute("START SLAVE")
        second.catch_up(primary)
        on_second = source(second)
        apply(read(on_second, offset, planned))  # the same batch, from the second's binlog
        last = run_batches(on_second, planned, apply, max_rows=300, batches=6)
        assert last["origin"] == str(second.server_id)
        assert last["log"]["file"] != planned["log"]["file"]
    finally:
        writer.stop()
    second.catch_up(primary)
    run_batches(on_second, last, apply, max_rows=300)
    on_second.close()
    assert writer.transactions > 50
    assert orders.state == table_state(primary, DB, "orders")


def test_a_commit_while_the_position_is_carried_over_is_not_skipped(
    topology: tuple[EmbeddedMariaDB, EmbeddedMariaDB, EmbeddedMariaDB],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second replica is exactly where the checkpoint is, and a transaction commits
    just after the scan for the checkpoint's GTID state reached its binlog's end: the
    position found must be before that transaction (the binlog's end read before the
    scan), not the end after it."""
    primary, first, second = topology
    db = primary.create_database("shop_race")
    primary.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)", database=db
    )
    primary.execute("INSERT INTO orders VALUES (1, 'a', 1), (2, 'b', 2)", database=db)
    first.catch_up(primary)
    second.catch_up(primary)
    orders = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"])
    on_first = source(first, db)
    offset = run_batches(on_first, None, orders.apply_batch)
    on_first.close()
    scans = locate.transaction_starts

    def scan_then_commit(*args: Any, **kwargs: Any) -> Iterator[Any]:
        yield from scans(*args, **kwargs)
        primary.execute("INSERT INTO orders VALUES (3, 'c', 3)", database=db)
        second.catch_up(primary)

    monkeypatch.setattr(locate, "transaction_starts", scan_then_commit)
    on_second = source(second, db)
    run_batches(on_second, offset, orders.apply_batch)
    on_second.close()
    assert orders.state == table_state(primary, db, "orders")


def test_a_task_that_reaches_another_server_than_its_planner_reads_nothing(
    topology: tuple[EmbeddedMariaDB, EmbeddedMariaDB, EmbeddedMariaDB],
) -> None:
    """The batch is planned on the first replica; its tasks reach the second (the host
    name leads there now): they fail before reading, naming both servers. Planned again
    on the second (a restart), the same batch reads every row."""
    primary, first, second = topology
    db = primary.create_database("shop_moved")
    primary.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, qty INT)", database=db)
    primary.execute("INSERT INTO orders SELECT seq, seq % 7 FROM seq_0_to_299", database=db)
    first.catch_up(primary)
    second.catch_up(primary)
    on_first = source(first, db)
    offset = on_first.initial_offset()
    planned = on_first.latest_offset(offset, 300)
    specs = on_first.partitions(offset, planned)
    on_first.close()
    assert specs
    moved = pickle.loads(pickle.dumps(source(second, db)))  # an executor's copy
    for spec in specs:
        with pytest.raises(SourceUnavailableError) as info:
            list(moved.read(pickle.loads(pickle.dumps(spec))))
        assert (
            f"planned on server {first.server_id}, but a Spark task reading it reached "
            f"server {second.server_id}"
        ) in str(info.value)
    on_second = source(second, db)
    rows = read(on_second, offset, planned)
    on_second.close()
    assert sorted(r["id"] for r in rows) == list(range(300))

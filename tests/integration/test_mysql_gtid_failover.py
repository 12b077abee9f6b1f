"""Failover between MySQL 8.0 replicas by GTID set: capture replica A mid-snapshot, repoint
the source to replica B (other binlog file names and offsets): a B behind the checkpoint is
refused until it caught up, then the batch planned on A is read from B's binlog and the
stream goes on there; the replayed changelog equals the primary's table, nothing lost or
doubled. A replica that does not log what it replicates is refused up front. (MariaDB's
side: test_mysql_replicas.py.)"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.embedded import EmbeddedMySQL
from tests.support.changelog import ChangelogReplayer
from tests.support.inprocess import run_batches
from tests.support.mariadb_writes import fill_orders, mariadb_writer, table_state

DB = "shop"


@pytest.fixture(scope="module")
def topology() -> Iterator[tuple[EmbeddedMySQL, EmbeddedMySQL, EmbeddedMySQL]]:
    """A MySQL 8.0 primary and two replicas by GTID auto-position (log_slave_updates on)."""
    servers = [EmbeddedMySQL("mysql8").start()]
    try:
        for _ in range(2):
            servers.append(EmbeddedMySQL("mysql8").start())
            servers[-1].replicate_from(servers[0])
        yield servers[0], servers[1], servers[2]
    finally:
        for server in servers:
            server.stop()


def source(server: EmbeddedMySQL) -> MySqlCdcSource:
    options = {
        **server.source_options(),
        "database-name": DB,
        "table-name": "orders",
        "server-id": "6300-6310",
        "scan.incremental.snapshot.chunk.size": "200",
        "scan.incremental.snapshot.rows-per-batch": "400",
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


def test_failover_between_mysql_replicas_by_gtid_set_loses_and_repeats_nothing(
    topology: tuple[EmbeddedMySQL, EmbeddedMySQL, EmbeddedMySQL],
) -> None:
    primary, first, second = topology
    primary.create_database(DB)
    primary.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)", database=DB
    )
    primary.execute(
        "CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT)", database=DB
    )
    fill_orders(primary, DB, 1500)
    first.catch_up(primary)
    second.catch_up(primary)
    second.execute("STOP SLAVE")  # falls behind what the first replica has
    second.execute("FLUSH BINARY LOGS")  # and its binlog names other files than the first's
    primary.execute("INSERT INTO audit (note) VALUES ('the second lacks this')", database=DB)
    first.catch_up(primary)
    orders = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"])
    apply = orders.apply_batch
    ((first_uuid,),) = first.execute("SELECT @@server_uuid")
    ((second_uuid,),) = second.execute("SELECT @@server_uuid")

    writer = mariadb_writer(primary, DB, seed=12, key_space=2000)
    writer.start()
    try:
        on_first = source(first)
        offset = run_batches(on_first, None, apply, max_rows=300, batches=2)
        assert not all(p.get("done") for p in offset["tables"].values()), "mid-snapshot"
        planned = on_first.latest_offset(offset, 300)  # planned on the first, read later
        on_first.close()
        assert offset["origin"] == planned["origin"] == str(first_uuid)
        assert offset["log"]["gtid"]  # the executed GTID set travels with the position

        on_second = source(second)
        with pytest.raises(SourceConfigurationError, match="has not yet written every"):
            read(on_second, offset, planned)
        on_second.close()

        second.execute("START SLAVE")
        second.catch_up(primary)
        on_second = source(second)
        apply(read(on_second, offset, planned))  # the same batch, from the second's binlog
        last = run_batches(on_second, planned, apply, max_rows=300, batches=6)
        assert last["origin"] == str(second_uuid)
        assert last["log"]["file"] != planned["log"]["file"]
    finally:
        writer.stop()
    second.catch_up(primary)
    run_batches(on_second, last, apply, max_rows=300)
    on_second.close()
    assert writer.transactions > 50
    assert orders.state == table_state(primary, DB, "orders")


def test_a_mysql_replica_that_does_not_log_what_it_replicates_is_refused(
    topology: tuple[EmbeddedMySQL, EmbeddedMySQL, EmbeddedMySQL],
) -> None:
    primary = topology[0]
    with EmbeddedMySQL("mysql8", settings={"log-slave-updates": "OFF"}) as replica:
        replica.replicate_from(primary)
        replica.catch_up(primary)
        primary.create_database("quiet")
        primary.execute("CREATE TABLE quiet.orders (id INT PRIMARY KEY)")
        replica.catch_up(primary)
        options = {**replica.source_options(), "database-name": "quiet", "table-name": "orders"}
        capture = MySqlCdcSource(parse_config(options))
        with pytest.raises(SourceConfigurationError, match="log_slave_updates is OFF"):
            capture.arrow_schema()
        capture.close()

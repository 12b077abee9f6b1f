"""mysql-cdc against the harness's MariaDB, through Spark, checked by replaying the changelog."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.core.errors import RESTART_FOR_SCHEMA
from sparkcdc.embedded import EmbeddedMariaDB
from tests.support.changelog import ChangelogReplayer
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import committed_offsets, snapshot_done, wait_until
from tests.support.streams import collect_stream, run_available_now


def replay_stream(
    spark: Any, options: dict[str, str], checkpoint: Path, replayer: ChangelogReplayer
) -> list[int]:
    """Run the stream until caught up, replaying every batch; return the batch sizes."""
    sizes: list[int] = []

    def each(batch: Any, _: int) -> None:
        rows = [r.asDict() for r in batch.collect()]
        replayer.apply_batch(rows)
        sizes.append(len(rows))

    run_available_now(spark, options, checkpoint, each)
    return sizes


@pytest.fixture
def orders(mariadb: EmbeddedMariaDB, mysql_db: str) -> str:
    mariadb.execute(
        "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)", database=mysql_db
    )
    mariadb.execute(
        "CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT)", database=mysql_db
    )
    rows = [(i * 3, f"name{i}", i % 50) for i in range(2000)]
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO orders VALUES (%s, %s, %s)", rows)
    return mysql_db


def source_options(mariadb: EmbeddedMariaDB, db: str, **extra: str) -> dict[str, str]:
    return {
        **mariadb.source_options(),
        "database-name": db,
        "table-name": "orders",
        "scan.incremental.snapshot.chunk.size": "97",
        "scan.incremental.snapshot.rows-per-partition": "300",
        **extra,
    }


def test_without_a_read_limit_chunks_per_batch_are_bounded_and_availablenow_moves_on(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """No maxRowsPerTrigger: the snapshot still spans several micro-batches of at most
    ``rows-per-batch`` chunk rows, and under availableNow their log positions keep up with
    the writes (chunks are normalised to a recent position, not to the query's start,
    which would make every window longer), yet the query ends and replays to the table."""
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"])
    options = source_options(
        mariadb, orders, **{"scan.incremental.snapshot.rows-per-batch": "400"}
    )  # 2000 rows in chunks of 97: 5 chunks (485 rows) per batch
    writer = mariadb_writer(mariadb, orders, seed=5, key_space=7000)
    # writing until stopped: a cold JVM's first batch can outlast any fixed number of writes,
    # and the later batches' positions would then have nothing to keep up with
    writer.limit, writer.pause = 10**9, 0.01
    writer.start()
    try:
        sizes = replay_stream(spark, options, scratch / "ckpt", replayer)
    finally:
        writer.stop()
    assert writer.transactions > 20
    offsets = committed_offsets(scratch / "ckpt")
    snapshot = [o for o in offsets if not snapshot_done(o)]
    assert len(snapshot) >= 4, sizes
    positions = [(o["log"]["file"], int(o["log"]["pos"])) for o in offsets]
    assert positions == sorted(positions) and len(set(positions[: len(snapshot) + 1])) > 2
    replay_stream(spark, options, scratch / "ckpt", replayer)
    assert replayer.state == table_state(mariadb, orders, "orders")


def test_batch_read_is_the_table(spark: Any, mariadb: EmbeddedMariaDB, orders: str) -> None:
    df = spark.read.format("mysql-cdc").options(**source_options(mariadb, orders)).load()
    rows = {r["id"]: (r["id"], r["name"], r["qty"]) for r in df.collect()}
    assert rows == table_state(mariadb, orders, "orders")
    assert {r["_change_type"] for r in df.select("_change_type").collect()} == {"insert"}


def test_a_typed_stream_stops_at_an_added_column_and_goes_on_with_it_when_restarted(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """A Spark query's schema is fixed: a running one-table stream stops exactly at an ADD
    COLUMN with the message, every change before it delivered; the query restarted from
    its checkpoint has the new column, and the whole replayed changelog equals the table."""
    from pyspark.errors import StreamingQueryException

    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty", "c"])
    columns: list[list[str]] = []

    def each(batch: Any, _: int) -> None:
        columns.append(batch.columns)
        replayer.apply_batch({"c": None, **r.asDict()} for r in batch.collect())

    options = source_options(mariadb, orders)
    checkpoint = scratch / "ckpt"
    query = (
        spark.readStream.format("mysql-cdc")
        .options(**options)
        .load()
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        wait_until(
            lambda: any(snapshot_done(o) for o in committed_offsets(checkpoint)), "the snapshot"
        )
        mariadb.execute("UPDATE orders SET qty = qty + 1 WHERE id < 30", database=orders)
        mariadb.execute("ALTER TABLE orders ADD COLUMN c INT", database=orders)
        mariadb.execute("UPDATE orders SET c = id WHERE id < 60", database=orders)
        mariadb.execute("INSERT INTO orders VALUES (1, 'new', 5, 7)", database=orders)
        with pytest.raises(StreamingQueryException) as stopped:
            query.awaitTermination(120)  # no exception: still running, the test fails
    finally:
        query.stop()
    message = str(stopped.value)
    assert RESTART_FOR_SCHEMA in message and f"the columns of {orders}.orders changed" in message
    old_shape = len(columns)
    assert replayer.state[3][2] == 2  # the change before the ALTER was delivered
    run_available_now(spark, options, checkpoint, each)  # restarted: the new columns
    assert [c for c in columns[old_shape] if not c.startswith("_")] == ["id", "name", "qty", "c"]
    assert replayer.state == table_state(mariadb, orders, "orders")
    assert replayer.state[1] == (1, "new", 5, 7) and replayer.state[57][3] == 57


def test_a_typed_stream_restarted_after_a_column_was_added_while_it_was_stopped(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    """The ADD COLUMN happened while nothing ran: the restarted query has the table's
    columns of now, and the changes logged before the ALTER have the old ones, which one
    Spark schema cannot carry. It stops before delivering anything, naming both column
    lists and the ways out; a new checkpoint replays to the table."""
    from pyspark.errors import StreamingQueryException

    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty", "c"])

    def each(batch: Any, _: int) -> None:
        replayer.apply_batch({"c": None, **r.asDict()} for r in batch.collect())

    options = source_options(mariadb, orders)
    checkpoint = scratch / "ckpt"
    run_available_now(spark, options, checkpoint, each)
    delivered = dict(replayer.state)
    mariadb.execute("UPDATE orders SET qty = qty + 1 WHERE id < 30", database=orders)
    mariadb.execute("ALTER TABLE orders ADD COLUMN c INT", database=orders)
    mariadb.execute("UPDATE orders SET c = id WHERE id < 60", database=orders)
    with pytest.raises(StreamingQueryException) as stopped:
        run_available_now(spark, options, checkpoint, each)
    message = str(stopped.value)
    assert f"the columns of {orders}.orders at " in message
    assert "(id, name, qty) are not its columns now (id, name, qty, c)" in message
    assert "Capture it together with another table" in message and "new checkpoint" in message
    assert replayer.state == delivered  # nothing of the old shape was delivered in the new
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty", "c"])
    run_available_now(spark, options, scratch / "new", each)
    assert replayer.state == table_state(mariadb, orders, "orders")
    assert replayer.state[3][2] == 2 and replayer.state[57][3] == 57


def test_several_tables_share_one_stream_and_unpack_to_typed_changelogs(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    from sparkcdc.spark.envelope import table_schema, unpack_table

    options = source_options(mariadb, orders, maxRowsPerTrigger="700")
    options["table-name"] = "orders|audit"
    schemas = {t: table_schema(spark, options, orders, t) for t in ("orders", "audit")}
    replayers = {
        "orders": ChangelogReplayer(lambda r: r["id"], ["id", "name", "qty"]),
        "audit": ChangelogReplayer(lambda r: r["id"], ["id", "note"]),
    }
    writer = mariadb_writer(mariadb, orders, seed=11, key_space=7000)
    writer.limit = 1500

    def each(batch: Any, batch_id: int) -> None:
        assert set(batch.columns) >= {"database_name", "table_name", "key", "before", "after"}
        for name, replayer in replayers.items():
            typed = unpack_table(batch, orders, name, schemas[name])
            replayer.apply_batch(r.asDict() for r in typed.collect())

    def run() -> None:
        run_available_now(spark, options, scratch / "ckpt", each)

    writer.start()
    try:
        run()
    finally:
        writer.stop()
    run()
    assert replayers["orders"].state == table_state(mariadb, orders, "orders")
    assert replayers["audit"].state == table_state(mariadb, orders, "audit")
    assert len(replayers["audit"].state) > 10


def test_startup_modes(spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1, 10), (2, 20)", database=mysql_db)
    file, pos = mariadb.execute("SHOW MASTER STATUS")[0][:2]
    (gtid,) = mariadb.execute("SELECT @@gtid_binlog_pos")[0]
    time.sleep(1.1)  # binlog timestamps have whole seconds
    millis = int(time.time() * 1000)
    mariadb.execute("INSERT INTO t VALUES (3, 30)", database=mysql_db)
    base = {**mariadb.source_options(), "database-name": mysql_db, "table-name": "t"}

    def run(name: str, **extra: str) -> list[tuple[str, int]]:
        rows = collect_stream(spark, {**base, **extra}, scratch / name)
        return sorted((r["_change_type"], r["id"]) for r in rows)

    # latest-offset: nothing old; the checkpointed query then sees only new changes
    assert run("latest", **{"scan.startup.mode": "latest-offset"}) == []
    mariadb.execute("UPDATE t SET v = 31 WHERE id = 3", database=mysql_db)
    assert run("latest", **{"scan.startup.mode": "latest-offset"}) == [
        ("update_postimage", 3),
        ("update_preimage", 3),
    ]
    # specific-offset: changes after the recorded position only (insert of 3, its update)
    specific = {
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.file": file,
        "scan.startup.specific-offset.pos": str(pos),
    }
    after_3 = [("insert", 3), ("update_postimage", 3), ("update_preimage", 3)]
    assert run("specific", **specific) == after_3
    by_gtid = {
        "scan.startup.mode": "specific-offset",
        "scan.startup.specific-offset.gtid-set": gtid,
    }
    assert run("gtid", **by_gtid) == after_3
    by_time = {"scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": str(millis)}
    assert run("timestamp", **by_time) == after_3
    # earliest-offset: every change still in the binlog, without a snapshot
    earliest = run("earliest", **{"scan.startup.mode": "earliest-offset"})
    assert [k for k in earliest if k[0] == "insert"] == [
        ("insert", 1),
        ("insert", 2),
        ("insert", 3),
    ]
    # snapshot: the table as it is, and nothing after, even when it changes later
    assert run("snapshot", **{"scan.startup.mode": "snapshot"}) == [
        ("insert", 1),
        ("insert", 2),
        ("insert", 3),
    ]
    mariadb.execute("DELETE FROM t WHERE id = 1", database=mysql_db)
    assert run("snapshot", **{"scan.startup.mode": "snapshot"}) == []


def test_metadata_columns(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1, 10)", database=mysql_db)
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "t",
        "metadata.list": "database_name,table_name,op_ts,row_kind,"
        "binlog_file,binlog_pos,binlog_gtid",
    }
    snapshot = collect_stream(spark, options, scratch / "ckpt")
    mariadb.execute("UPDATE t SET v = 11 WHERE id = 1", database=mysql_db)
    (gtid,) = mariadb.execute("SELECT @@gtid_binlog_pos")[0]
    changes = collect_stream(spark, options, scratch / "ckpt")
    assert [(r["row_kind"], r["database_name"], r["table_name"]) for r in snapshot] == [
        ("+I", mysql_db, "t")
    ]
    assert snapshot[0]["binlog_file"] is None and snapshot[0]["op_ts"] is None
    by_kind = {r["row_kind"]: r for r in changes}
    assert set(by_kind) == {"-U", "+U"}
    update = by_kind["+U"]
    assert update["binlog_file"].startswith("binlog.") and update["binlog_pos"] > 4
    assert update["binlog_gtid"] == gtid
    events = mariadb.execute(f"SHOW BINLOG EVENTS IN '{update['binlog_file']}'")
    assert {r[1]: r[2] for r in events}[update["binlog_pos"]].startswith("Update_rows")
    assert update["op_ts"] == update["_commit_timestamp"]
    assert by_kind["-U"]["_commit_version"] == update["_commit_version"]
    assert update["_commit_version"] > snapshot[0]["_commit_version"]


def test_max_rows_per_trigger_bounds_streaming_batches(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mysql_db)
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "t",
        "scan.startup.mode": "latest-offset",
        "maxRowsPerTrigger": "10",
    }
    assert collect_stream(spark, options, scratch / "ckpt") == []
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE other (id INT PRIMARY KEY)")  # DDL transactions in between
        for i in range(60):
            cur.execute("INSERT INTO t VALUES (%s, 0)", (i,))
            for j in range(3):  # a busier table that is not captured must not use the budget
                cur.execute("INSERT INTO other VALUES (%s)", (i * 3 + j,))
            if i % 20 == 0:
                cur.execute(f"CREATE TABLE other{i} (id INT PRIMARY KEY)")
        cur.execute("BEGIN")
        for i in range(60, 75):  # one transaction bigger than the limit: taken whole
            cur.execute("INSERT INTO t VALUES (%s, 0)", (i,))
        cur.execute("COMMIT")
    sizes: list[int] = []
    ids: list[int] = []

    def each(batch: Any, _: int) -> None:
        rows = batch.collect()
        sizes.append(len(rows))
        ids.extend(r["id"] for r in rows)

    run_available_now(spark, options, scratch / "ckpt", each)
    assert sorted(ids) == list(range(75))
    assert sizes[-1] == 15 and all(0 < s <= 10 for s in sizes[:-1]), sizes
    assert 7 <= len(sizes) <= 9  # 60 rows of t by 10, then the big transaction

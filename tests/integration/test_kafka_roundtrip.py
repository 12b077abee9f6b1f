"""MariaDB -> mysql-cdc -> Kafka in each format -> back through the decoders and the upsert
source: replaying what comes back gives the table, through updates, deletes and primary-key
moves, on topics with several partitions (one key's messages must stay in order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB
from sparkcdc.spark.envelope import table_schema
from sparkcdc.spark.kafka.sink import KafkaChangelogWriter
from sparkcdc.spark.kafka.source import (
    decode_changelog_json,
    decode_debezium_json,
    read_kafka,
    read_upsert_kafka,
)
from tests.support.changelog import ChangelogReplayer
from tests.support.kafka_topics import collect_available_now, create_topic
from tests.support.streams import run_available_now

COLUMNS = ["id", "name", "price", "data", "at", "local"]
FORMATS = ("changelog-json", "debezium-json", "upsert")


def _writes(mariadb: EmbeddedMariaDB, db: str) -> None:
    statements = [
        "UPDATE items SET price = price + 1.25, name = CONCAT(name, '-u') WHERE id % 3 = 0",
        "UPDATE items SET id = id + 1000 WHERE id % 5 = 1",  # primary-key moves
        "DELETE FROM items WHERE id % 7 = 2",
        "INSERT INTO items VALUES (500, 'new', 0.01, x'00ff', '2038-01-19 03:14:07.999999',"
        " '9999-12-31 23:59:59.999999')",
        "UPDATE items SET id = 3 WHERE id = 500",  # into a key freed... or taken: ignore
        "UPDATE items SET data = NULL, at = NULL WHERE id % 4 = 0",
        "DELETE FROM items WHERE id = 1006",
        "INSERT INTO items VALUES (6, 'back', 6.00, x'06', NULL, NULL)",
    ]
    for sql in statements:
        mariadb.execute(sql.replace("UPDATE items SET id = 3", "UPDATE IGNORE items SET id = 3"),
                        database=db)  # fmt: skip


def test_mariadb_through_each_kafka_format_replays_to_the_table(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, kafka: EmbeddedKafka, topic: str,
    scratch: Path,
) -> None:  # fmt: skip
    mariadb.execute(
        "CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(64), price DECIMAL(10,2),"
        " data VARBINARY(16), at TIMESTAMP(6) NULL, local DATETIME(6))",
        database=mysql_db,
    )
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s)",
            [
                (i, f"n{i}", f"{i}.{i % 100:02d}", bytes([i % 256, 0]),
                 f"2024-01-{1 + i % 28:02d} 10:00:00.{i:06d}", "1000-01-01 00:00:00.000001")
                for i in range(60)
            ],
        )  # fmt: skip
    servers = kafka.bootstrap_servers
    topics = {f: create_topic(servers, f"{topic}_{f}", partitions=3) for f in FORMATS}
    writers = [
        KafkaChangelogWriter(servers, f, ["id"], topic=topics[f], kafka_options={"acks": "all"})
        for f in FORMATS
    ]
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "items",
        "metadata.list": "database_name,table_name,binlog_file,binlog_pos,binlog_gtid",
    }

    def each(batch: Any, batch_id: int) -> None:
        batch.persist()
        for writer in writers:
            writer(batch, batch_id)
        batch.unpersist()

    run_available_now(spark, options, scratch / "source", each)  # the snapshot
    _writes(mariadb, mysql_db)
    run_available_now(spark, options, scratch / "source", each)  # the binlog
    schema = table_schema(spark, options, mysql_db, "items")
    expected = {
        r["id"]: tuple(r[c] for c in COLUMNS)
        for r in spark.read.format("mysql-cdc").options(**options).load().collect()
    }
    assert len(expected) > 40

    def replayed(rows: list[dict[str, Any]]) -> dict[Any, tuple[Any, ...]]:
        replayer = ChangelogReplayer(lambda r: r["id"], COLUMNS)
        replayer.apply_batch(rows)
        return replayer.state

    for fmt, decode in (
        ("changelog-json", decode_changelog_json),
        ("debezium-json", decode_debezium_json),
    ):
        raw = read_kafka(spark, servers, topics[fmt], streaming=False)
        rows = [r.asDict() for r in decode(raw, schema).collect()]
        assert replayed(rows) == expected, fmt
    deletes = [r for r in rows if r["_change_type"] == "delete"]
    assert deletes, "debezium deletes (moves and DELETEs) came back"

    raw = read_kafka(spark, servers, topics["upsert"])
    normalized = collect_available_now(read_upsert_kafka(raw, schema, ["id"]), scratch / "up")
    assert {r["_change_type"] for r in normalized} == {
        "insert", "update_preimage", "update_postimage", "delete",
    }  # fmt: skip
    assert replayed(normalized) == expected

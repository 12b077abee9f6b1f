"""The JDBC sink against the harness's real PostgreSQL and MariaDB: targets created with the
right types and keys, changes applied exactly once in one transaction per batch, every
source type round-tripping, and a consistent snapshot for ``verify``."""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.core.changes import CHANGE_COLUMNS
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import SinkError
from sparkcdc.sinks.jdbc.own_files import ForeignFileRequest
from sparkcdc.sinks.jdbc.sink import JdbcSink
from sparkcdc.sinks.write_plan import WritePlan, plan_of

UTC = timezone.utc


@dataclass
class TargetDb:
    """One target database on a harness server, as the sink and the test see it."""

    family: str
    options: dict[str, str]
    query: Callable[..., list[tuple[Any, ...]]]

    def sink(self, pipeline: str | None = None, **options: str) -> JdbcSink:
        return JdbcSink(JdbcSinkConfig.from_options({**self.options, **options}), pipeline)

    def rows(self, table: str, order: str = "1") -> list[tuple[Any, ...]]:
        quote = '"' if self.family == "postgresql" else "`"
        return self.query(f"SELECT * FROM {quote}{table}{quote} ORDER BY {order}")

    def offsets(self) -> list[tuple[Any, ...]]:
        return self.query("SELECT pipeline, batch_id, source_offset FROM sparkcdc_offsets")


def postgres_target(postgres: Any, db: str) -> TargetDb:
    return TargetDb(
        "postgresql",
        {
            "url": f"postgresql://{postgres.host}:{postgres.port}/{db}",
            "username": postgres.user,
            "password": postgres.password,
        },
        lambda sql, params=None: postgres.execute(sql, params, dbname=db),
    )


MARIADB_SINK_USER = "sparkcdc_sink"
MARIADB_SINK_PASSWORD = "Sink-" + secrets.token_hex(8)


@pytest.fixture(params=["postgresql", "mysql"])
def target(request: pytest.FixtureRequest) -> TargetDb:
    """An empty database on PostgreSQL or MariaDB, reached by a user with a password."""
    if request.param == "postgresql":
        return postgres_target(
            request.getfixturevalue("postgres"), request.getfixturevalue("pg_db")
        )
    return mariadb_target(request.getfixturevalue("mariadb"), request.getfixturevalue("mysql_db"))


def mariadb_target(mariadb: EmbeddedMariaDB, db: str) -> TargetDb:
    mariadb.execute(
        f"CREATE OR REPLACE USER '{MARIADB_SINK_USER}'@'%%' IDENTIFIED BY %s",
        (MARIADB_SINK_PASSWORD,),
    )
    mariadb.execute(f"GRANT ALL ON *.* TO '{MARIADB_SINK_USER}'@'%'")
    return TargetDb(
        "mysql",
        {
            "url": f"mariadb://{mariadb.host}:{mariadb.port}/{db}",
            "username": MARIADB_SINK_USER,
            "password": MARIADB_SINK_PASSWORD,
        },
        lambda sql, params=None: mariadb.execute(sql, params, database=db),
    )


# ------------------------------------------------------------------------------------------
# Typed changelogs built by hand


def schema_of(ddl: str) -> Any:
    from pyspark.sql.types import StructType

    return StructType.fromDDL(ddl)


def changelog(spark: Any, schema: Any, rows: Sequence[tuple[Any, ...]]) -> Any:
    """A changelog DataFrame: ``rows`` are (columns..., change type, commit version)."""
    from pyspark.sql.types import LongType, StringType, StructType, TimestampType

    full = StructType(
        [
            *schema.fields,
            *[
                f
                for f in StructType()
                .add(CHANGE_COLUMNS[0], StringType())
                .add(CHANGE_COLUMNS[1], LongType())
                .add(CHANGE_COLUMNS[2], TimestampType())
                .fields
            ],
        ]
    )
    stamp = datetime(2024, 5, 1, tzinfo=UTC)
    return spark.createDataFrame([(*r, stamp) for r in rows], full).cache()


ORDERS = TableId("shop", "orders")
ORDERS_SCHEMA = (
    "id INT, name STRING, amount DECIMAL(12,3), placed TIMESTAMP, local TIMESTAMP_NTZ, "
    "day DATE, raw BINARY, paid BOOLEAN, score DOUBLE, tiny TINYINT, big BIGINT"
)
AT = datetime(2024, 2, 29, 23, 59, 59, 123456, tzinfo=UTC)
LOCAL = datetime(1999, 12, 31, 12, 30, 0, 1)


def order(i: int, name: str, amount: str = "1.500") -> tuple[Any, ...]:
    return (
        i,
        name,
        Decimal(amount),
        AT,
        LOCAL,
        date(2024, 1, i % 28 + 1),
        bytes([i, 0]),
        i % 2 == 0,
        i / 3,
        i % 100,
        2**40 + i,
    )


def test_changes_land_once_in_created_targets(spark: Any, target: TargetDb) -> None:
    schema = schema_of(ORDERS_SCHEMA)
    table = SinkTable(ORDERS, schema, ("id",))
    sink = target.sink()
    sink.open(spark, [table])
    try:
        assert column_types(target, "orders") == EXPECTED_TYPES[target.family]
        assert primary_key(target, "orders") == ["id"]

        batch1 = [(*order(i, f"n{i}"), "insert", i) for i in (1, 2, 3, 6)]
        sink.write(plan_of("p1", 0, {ORDERS: changelog(spark, schema, batch1)}, '{"pos": 1}'))
        batch2 = [
            (*order(1, "n1"), "update_preimage", 10),
            (*order(1, "n1-new", "-99999999.999"), "update_postimage", 10),
            (*order(2, "n2"), "delete", 11),
            (*order(3, "n3"), "update_preimage", 12),  # primary key 3 -> 30
            (*order(30, "n3"), "update_postimage", 12),
            (*order(4, "n4"), "insert", 13),  # born and gone in one batch
            (*order(4, "n4"), "delete", 14),
            (*order(5, "n5"), "insert", 15),
            (*order(5, "n5"), "update_preimage", 16),
            (*(None if i else v for i, v in enumerate(order(5, ""))), "update_postimage", 16),
            (*order(6, "n6"), "delete", 17),  # deleted, then back
            (*order(6, "n6-back"), "insert", 18),
        ]
        sink.write(plan_of("p1", 1, {ORDERS: changelog(spark, schema, batch2)}, '{"pos": 2}'))
        expected = {
            1: "n1-new",
            5: None,
            6: "n6-back",
            30: "n3",
        }
        assert {r[0]: r[1] for r in target.rows("orders")} == expected
        assert target.rows("orders")[0][2] == Decimal("-99999999.999")
        assert target.offsets() == [("p1", 1, '{"pos": 2}')]

        # Replays of both batches, even with other contents, change nothing.
        wipe = [(*order(i, "x"), "delete", 99) for i in (1, 5, 6, 30)]
        sink.write(plan_of("p1", 1, {ORDERS: changelog(spark, schema, wipe)}, '{"pos": 9}'))
        sink.write(plan_of("p1", 0, {ORDERS: changelog(spark, schema, wipe)}, '{"pos": 9}'))
        assert {r[0]: r[1] for r in target.rows("orders")} == expected
        assert target.offsets() == [("p1", 1, '{"pos": 2}')]

        # The snapshot is the rows with their offset; typed like the source.
        snap = target.sink(pipeline="p1").snapshot(spark, table)
        assert snap.source_offset == '{"pos": 2}'
        assert snap.rows.schema == schema
        got = {r["id"]: tuple(r) for r in snap.rows.collect()}
        assert got[1] == spark_row(order(1, "n1-new", "-99999999.999"))
        assert got[5] == (5, *[None] * (len(schema.fields) - 1))
        assert set(got) == set(expected)
    finally:
        sink.close()


def test_snapshot_rows_are_bulk_loaded(
    spark: Any, target: TargetDb, caplog: pytest.LogCaptureFixture
) -> None:
    """Snapshot rows (inserts at the batch's snapshot version) are bulk-loaded, every type
    intact, next to the batch's log changes: on PostgreSQL with COPY into a target that
    holds the pipeline's rows only, where a key someone else put there fails the batch
    instead of being overwritten, and a target with other rows is upserted; on MariaDB
    with LOAD DATA LOCAL into any target, where a load that meets a key already there is
    undone and its rows upserted."""
    caplog.set_level(logging.INFO, logger="sparkcdc.sinks.jdbc")
    schema = schema_of(ORDERS_SCHEMA)
    table = SinkTable(ORDERS, schema, ("id",))
    sink = target.sink()
    sink.open(spark, [table])

    def batch(
        batch_id: int, rows: list[tuple[Any, ...]], version: int, pipeline: str = "p1"
    ) -> WritePlan:
        snapshot = sum(1 for r in rows if r[-2:] == ("insert", version))
        return plan_of(
            pipeline,
            batch_id,
            {ORDERS: changelog(spark, schema, rows)},
            f'{{"pos": {batch_id}}}',
            rows={ORDERS: len(rows)},
            snapshot_version=version,
            snapshot_rows={ORDERS: snapshot},
        )

    def applied(batch_id: int) -> str:
        return next(
            r.getMessage().split("applied ")[1]
            for r in caplog.records
            if r.getMessage().startswith(f"jdbc sink: pipeline p1 batch {batch_id} applied")
        )

    try:
        first = [(*order(i, f"s{i}"), "insert", 100) for i in range(1, 6)]
        sink.write(batch(0, first, 100))
        assert applied(0) == "(shop.orders: 5 copied, 0 upserted, 0 deleted)"
        second = [
            (*order(1, "s1"), "update_preimage", 150),  # a log change of a copied key
            (*order(1, "s1-new"), "update_postimage", 150),
            (*order(2, "s2"), "delete", 160),
            *[(*order(i, f"s{i}"), "insert", 200) for i in range(6, 9)],  # snapshot rows
        ]
        sink.write(batch(1, second, 200))
        assert applied(1) == "(shop.orders: 3 copied, 1 upserted, 1 deleted)"
        got = {r[0]: tuple(r) for r in target.rows("orders")}
        assert {k: v[1] for k, v in got.items()} == {
            1: "s1-new",
            3: "s3",
            4: "s4",
            5: "s5",
            6: "s6",
            7: "s7",
            8: "s8",
        }
        reread = {r["id"]: tuple(r) for r in sink.snapshot(spark, table).rows.collect()}
        assert reread[7] == spark_row(order(7, "s7"))
        marked = target.family == "postgresql"
        comments = (
            target.query("SELECT obj_description('orders'::regclass, 'pg_class')")
            if marked
            else [(None,)]
        )
        assert comments == [("sparkcdc.appends-for=p1" if marked else None,)]
        # somebody else's row where the snapshot's next key goes
        target.query(
            f"INSERT INTO {'orders' if marked else '`orders`'} (id, name) VALUES (9, 'theirs')"
        )
        third = [(*order(9, "s9"), "insert", 300), (*order(10, "s10"), "insert", 300)]
        if marked:
            with pytest.raises(Exception, match="duplicate key"):
                sink.write(batch(2, third, 300))
            assert target.offsets() == [("p1", 1, '{"pos": 1}')]  # nothing of it stayed
        else:
            sink.write(batch(2, third, 300))
            assert "took 1 of 2 rows with 1 warnings (1062: Duplicate entry '9'" in caplog.text
            assert applied(2) == "(shop.orders: 0 copied, 2 upserted, 0 deleted)"
            assert {r[0]: r[1] for r in target.rows("orders")}[9] == "s9"
            assert target.offsets() == [("p1", 2, '{"pos": 2}')]
    finally:
        sink.close()

    # a target that holds other rows is not marked: its snapshot rows are upserted
    other = target.sink(**{"table-name": "others"})
    other.open(spark, [table])
    try:
        target.query(
            f"INSERT INTO {'others' if marked else '`others`'} (id, name) VALUES (1, 'theirs')"
        )
        other.write(batch(0, [(*order(1, "ours"), "insert", 100)], 100, pipeline="p2"))
        assert {r[0]: r[1] for r in target.rows("others")} == {1: "ours"}
    finally:
        other.close()


def test_a_batch_read_once_is_checked_before_its_commit_and_a_replay_reads_nothing(
    spark: Any, target: TargetDb
) -> None:
    """A batch of one table's snapshot rows the pipeline did not count
    (``WritePlan.uncounted``) is read once into the bulk load: the sink hands the
    DataFrame it read to its end to ``read_through`` (its plan holds the counts) before it
    commits, so a check that fails there leaves nothing written; a replay the target
    already has reads nothing and says so (None). A load MariaDB refused (a key already
    there) says None too: the rows are read again, upserted and counted again."""
    schema = schema_of(ORDERS_SCHEMA)
    table = SinkTable(ORDERS, schema, ("id",))
    sink = target.sink()
    sink.open(spark, [table])
    seen: list[Any] = []

    def batch(batch_id: int, first: int, check: Callable[[Any], None]) -> WritePlan:
        rows = [(*order(i, f"s{i}"), "insert", 100 + batch_id) for i in range(first, first + 3)]
        return plan_of(
            "p1",
            batch_id,
            {ORDERS: changelog(spark, schema, rows)},
            f'{{"pos": {batch_id}}}',
            rows={},
            snapshot_version=100 + batch_id,
            snapshot_rows={},
            read_once=frozenset({ORDERS}),
            on_read=check,
        )

    def refuse(frame: Any) -> None:
        raise RuntimeError("held a log change")

    try:
        assert sink.writes_snapshot_once(spark, table, "p1")  # empty: it will be p1's
        first = batch(0, 1, seen.append)
        sink.write(first)
        assert first.read_frames[0] is None and first.read_frames[1:] == seen
        assert len(seen) == 1 and sum(b.rows for b in seen[0].collect()) == 3  # its blocks
        assert [r[0] for r in target.rows("orders")] == [1, 2, 3]
        with pytest.raises(RuntimeError, match="held a log change"):
            sink.write(batch(1, 4, refuse))
        assert [r[0] for r in target.rows("orders")] == [1, 2, 3]
        assert target.offsets() == [("p1", 0, '{"pos": 0}')]
        replay = batch(0, 1, refuse)
        sink.write(replay)
        assert replay.read_frames == [None]
        assert sink.writes_snapshot_once(spark, table, "p1")
        # PostgreSQL: p1's rows are there; MariaDB's load takes any target
        assert sink.writes_snapshot_once(spark, table, "p2") == (target.family == "mysql")
        if target.family == "mysql":
            table_sql = "`orders`"
            target.query(f"INSERT INTO {table_sql} (id, name) VALUES (5, 'theirs')")
            refused = batch(1, 4, seen.append)
            sink.write(refused)
            assert refused.read_frames[-1] is None  # counted again
            assert [(r[0], r[1]) for r in target.rows("orders")][3:] == [
                (4, "s4"),
                (5, "s5"),
                (6, "s6"),
            ]
    finally:
        sink.close()


EDGES_SCHEMA = (
    "id INT, s STRING, f FLOAT, d DOUBLE, n DECIMAL(38,10), u DECIMAL(20,0), ts TIMESTAMP, "
    "tn TIMESTAMP_NTZ, day DATE, raw BINARY, b BOOLEAN, t TINYINT, sh SMALLINT, big BIGINT"
)
EDGE_ROWS = [
    (1, "", float("nan"), float("inf"), Decimal("1E-10"), Decimal(2**64 - 1),
     datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999),
     date(1, 1, 1), b"", False, -128, -32768, -(2**63)),
    (2, 'a "quoted", \n, \\N and \\x ,\r\nline', float("-inf"), -0.0,
     Decimal("-1234567890123456789012345678.9012345678"), Decimal(0),
     datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), datetime(1970, 1, 1),
     date(9999, 12, 31), bytes(range(256)), True, 127, 32767, 2**63 - 1),
    (3, *[None] * 13),
    (4, "\\N", 1.1, 5e-324, Decimal("0.0000000001"), Decimal(1), AT, LOCAL,
     date(2024, 2, 29), b"\x00,\"\n", True, 0, 0, 0),
    (5, "💡 ü ß ʼn", 3.4028234663852886e38, 1.7976931348623157e308, Decimal("-1E-10"),
     Decimal(10**19), AT, LOCAL, date(2000, 1, 1), b"\\x", None, None, None, None),
]  # fmt: skip


def test_copied_snapshot_rows_keep_every_value(spark: Any, postgres: Any, pg_db: str) -> None:
    """Snapshot rows bulk-loaded as CSV (``csv_blocks`` + ``COPY``) come back exactly:
    empty strings vs NULL, quotes, line breaks and backslashes, NaN/infinities/-0.0,
    float and decimal extremes, year 1 and 9999, every byte."""
    target = postgres_target(postgres, pg_db)
    schema = schema_of(EDGES_SCHEMA)
    edges = TableId("shop", "edges")
    table = SinkTable(edges, schema, ("id",))
    rows = changelog(spark, schema, [(*r, "insert", 7) for r in EDGE_ROWS])
    sink = target.sink(pipeline="p")
    sink.open(spark, [table])
    try:
        sink.write(
            plan_of(
                "p",
                0,
                {edges: rows},
                "o0",
                rows={edges: len(EDGE_ROWS)},
                snapshot_version=7,
                snapshot_rows={edges: len(EDGE_ROWS)},
            )
        )
        snap = sink.snapshot(spark, table)
    finally:
        sink.close()
    marks = target.query("SELECT obj_description('edges'::regclass, 'pg_class')")
    assert marks == [("sparkcdc.appends-for=p",)]  # the COPY path, not upserts
    want = {r["id"]: repr(tuple(r)) for r in rows.select(*schema.names).collect()}
    got = {r["id"]: repr(tuple(r)) for r in snap.rows.collect()}
    assert got == want


def test_rows_loaded_into_mariadb_equal_rows_upserted(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Snapshot rows bulk-loaded into MariaDB (``csv_blocks`` + ``LOAD DATA LOCAL``) come
    back exactly as the same rows upserted do, and as Spark had them: empty strings vs
    NULL, quotes, line breaks and backslashes, the largest float, decimal extremes, year 1
    and 9999, every byte (MariaDB stores no NaN, infinity or -0.0: those rows use finite
    values, and -0.0 comes back as 0.0 either way).
    The load announced LOCAL files but the connection sends none outside it."""
    caplog.set_level(logging.INFO, logger="sparkcdc.sinks.jdbc")
    target = mariadb_target(mariadb, mysql_db)
    edge_rows = [tuple(_finite(v) for v in r) for r in EDGE_ROWS]
    schema = schema_of(EDGES_SCHEMA)
    edges = TableId("shop", "edges")
    table = SinkTable(edges, schema, ("id",))
    read: dict[str, Any] = {}
    for name, version in (("loaded", 7), ("upserted", 8)):  # 8: log inserts, not snapshot rows
        rows = changelog(spark, schema, [(*r, "insert", version) for r in edge_rows])
        sink = target.sink(pipeline=name, **{"table-name": name})
        sink.open(spark, [table])
        try:
            sink.write(
                plan_of(
                    name,
                    0,
                    {edges: rows},
                    "o0",
                    rows={edges: len(edge_rows)},
                    snapshot_version=7,
                    snapshot_rows={edges: len(edge_rows) if version == 7 else 0},
                )
            )
            read[name] = {
                r["id"]: repr(tuple(r)) for r in sink.snapshot(spark, table).rows.collect()
            }
            with pytest.raises(ForeignFileRequest, match="outside a bulk load"):
                sink._connection().cursor().execute(  # a server asking for a file gets none
                    f"LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE `{name}`"
                )
        finally:
            sink.close()
    assert "edges: 5 copied, 0 upserted" in caplog.text
    assert "edges: 0 copied, 5 upserted" in caplog.text
    assert read["loaded"] == read["upserted"]
    # MariaDB stores -0.0 as 0 (upserted or loaded)
    unsigned = [
        (*(v + 0.0 if isinstance(v, float) else v for v in r), "insert", 7) for r in edge_rows
    ]
    expected = changelog(spark, schema, unsigned).select(*schema.names)
    want = {r["id"]: repr(tuple(r)) for r in expected.collect()}
    assert read["loaded"] == want


def _finite(value: Any) -> Any:
    """NaN and the infinities as finite doubles (what MariaDB can store)."""
    if isinstance(value, float) and not math.isfinite(value):
        return 0.5 if math.isnan(value) else math.copysign(3e38, value)  # fits a FLOAT
    return value


def spark_row(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Values as Spark hands them back: instants as naive local times."""
    return tuple(
        v.astimezone().replace(tzinfo=None) if isinstance(v, datetime) and v.tzinfo else v
        for v in values
    )


EXPECTED_TYPES = {
    "postgresql": {
        "id": "integer",
        "name": "text",
        "amount": "numeric(12,3)",
        "placed": "timestamp with time zone",
        "local": "timestamp without time zone",
        "day": "date",
        "raw": "bytea",
        "paid": "boolean",
        "score": "double precision",
        "tiny": "smallint",
        "big": "bigint",
    },
    "mysql": {
        "id": "int(11)",
        "name": "longtext",
        "amount": "decimal(12,3)",
        "placed": "datetime(6)",
        "local": "datetime(6)",
        "day": "date",
        "raw": "longblob",
        "paid": "tinyint(1)",
        "score": "double",
        "tiny": "tinyint(4)",
        "big": "bigint(20)",
    },
}


def column_types(target: TargetDb, table: str) -> dict[str, str]:
    if target.family == "postgresql":
        rows = target.query(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped",
            (f'"{table}"',),
        )
    else:
        rows = target.query(
            "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (table,),
        )
    return {str(n): str(t) for n, t in rows}


def primary_key(target: TargetDb, table: str) -> list[str]:
    rows = target.query(
        "SELECT k.column_name FROM information_schema.table_constraints c "
        "JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name "
        "AND k.table_schema = c.table_schema AND k.table_name = c.table_name "
        "WHERE c.constraint_type = 'PRIMARY KEY' AND c.table_name = %s "
        "AND c.table_schema = "
        + ("current_schema()" if target.family == "postgresql" else "DATABASE()")
        + " ORDER BY k.ordinal_position",
        (table,),
    )
    return [str(r[0]) for r in rows]


# ------------------------------------------------------------------------------------------


def test_failed_batch_leaves_nothing_behind(spark: Any, target: TargetDb) -> None:
    """Composite string keys (with keys differing only by a trailing space or case), an
    existing target used as it is, and a batch failing in its second table."""
    regions = TableId("shop", "regions")
    stock = TableId("shop", "stock")
    regions_schema = schema_of("region STRING, id BIGINT, label STRING")
    stock_schema = schema_of("sku STRING, qty INT")
    q = '"' if target.family == "postgresql" else "`"
    target.query(
        f"CREATE TABLE {q}stock{q} (sku VARCHAR(20) PRIMARY KEY, qty INT CHECK (qty < 100), "
        "note VARCHAR(10) DEFAULT 'kept')"
    )
    tables = [
        SinkTable(regions, regions_schema, ("region", "id")),
        SinkTable(stock, stock_schema, ("sku",)),
    ]
    sink = target.sink()
    sink.open(spark, tables)
    try:
        first = {
            regions: changelog(
                spark,
                regions_schema,
                [
                    ("eu", 1, "a", "insert", 1),
                    ("eu ", 1, "b", "insert", 2),
                    ("EU", 1, "c", "insert", 3),
                ],
            ),
            stock: changelog(spark, stock_schema, [("s1", 5, "insert", 4)]),
        }
        sink.write(plan_of("p", 7, first, "o7"))
        assert target.rows("regions", "label") == [("eu", 1, "a"), ("eu ", 1, "b"), ("EU", 1, "c")]

        def second(qty: int) -> dict[TableId, Any]:
            return {
                regions: changelog(
                    spark,
                    regions_schema,
                    [("eu", 1, "a", "delete", 5), ("us", 2, "d", "insert", 6)],
                ),
                stock: changelog(
                    spark,
                    stock_schema,
                    [("s1", 5, "update_preimage", 7), ("s1", qty, "update_postimage", 7)],
                ),
            }

        with pytest.raises(Exception, match=r"(?i)check|constraint"):
            sink.write(plan_of("p", 8, second(qty=500), "o8"))
        assert target.rows("regions", "label") == [("eu", 1, "a"), ("eu ", 1, "b"), ("EU", 1, "c")]
        assert target.rows("stock") == [("s1", 5, "kept")]
        assert target.offsets() == [("p", 7, "o7")]

        sink.write(plan_of("p", 8, second(qty=50), "o8"))  # a fresh connection after the failure
        assert target.rows("regions", "label") == [("eu ", 1, "b"), ("EU", 1, "c"), ("us", 2, "d")]
        assert target.rows("stock") == [("s1", 50, "kept")]
        assert target.offsets() == [("p", 8, "o8")]
    finally:
        sink.close()


def test_all_source_types_round_trip(
    spark: Any, mariadb: EmbeddedMariaDB, target: TargetDb
) -> None:
    """Rows of every MySQL type, read by the real ``mysql-cdc`` source, come back from the
    target exactly as the source emitted them."""
    from tests.integration.test_mysql_types_roundtrip import DDL, INSERTS, insert

    source_db = mariadb.create_database("src_" + secrets.token_hex(4))
    mariadb.execute(DDL, database=source_db)
    for written, _ in INSERTS.values():
        insert(mariadb, source_db, written)
    options = {**mariadb.source_options(), "database-name": source_db, "table-name": "all_types"}
    changes = spark.read.format("mysql-cdc").options(**options).load().cache()
    columns = [c for c in changes.columns if c not in CHANGE_COLUMNS]
    schema = changes.select(*columns).schema
    table = SinkTable(TableId(source_db, "all_types"), schema, ("id",))
    sink = target.sink(**{"table-name": "{table}_copy", "batch-size": "2"})
    sink.open(spark, [table])
    try:
        sink.write(plan_of("types", 0, {table.source: changes}, None))
        snap = sink.snapshot(spark, table)
    finally:
        sink.close()
    assert snap.source_offset is None
    assert snap.rows.schema == schema
    want = {r["id"]: r.asDict() for r in changes.select(*columns).collect()}
    got = {r["id"]: r.asDict() for r in snap.rows.collect()}
    assert got == want
    assert len(got) == len(INSERTS)


# ------------------------------------------------------------------------------------------


def test_existing_targets_are_checked(target: TargetDb) -> None:
    from pyspark.sql.types import IntegerType, StringType, StructType

    schema = StructType().add("id", IntegerType()).add("name", StringType())
    q = '"' if target.family == "postgresql" else "`"
    target.query(f"CREATE TABLE {q}no_name{q} (id INT PRIMARY KEY)")
    target.query(f"CREATE TABLE {q}no_key{q} (id INT, name TEXT)")
    with pytest.raises(SinkError, match=r"lacks column\(s\) name"):
        target.sink().open(None, [SinkTable(TableId("d", "no_name"), schema, ("id",))])
    with pytest.raises(SinkError, match=r"no primary key or unique constraint on \(id\)"):
        target.sink().open(None, [SinkTable(TableId("d", "no_key"), schema, ("id",))])
    with pytest.raises(SchemaError, match="no primary key"):
        target.sink().open(None, [SinkTable(TableId("d", "x"), schema, ())])
    with pytest.raises(SinkError, match="both map to target"):
        target.sink(**{"table-name": "t"}).open(
            None,
            [
                SinkTable(TableId("a", "x"), schema, ("id",)),
                SinkTable(TableId("b", "x"), schema, ("id",)),
            ],
        )
    with pytest.raises(SinkError, match=r"target table .*missing of d\.missing does not exist"):
        target.sink().snapshot(None, SinkTable(TableId("d", "missing"), schema, ("id",)))
    if target.family == "mysql":
        target.query("CREATE TABLE myisam (id INT PRIMARY KEY, name TEXT) ENGINE=MyISAM")
        with pytest.raises(SinkError, match="engine MyISAM"):
            target.sink().open(None, [SinkTable(TableId("d", "myisam"), schema, ("id",))])


def test_wrong_password_is_never_shown(target: TargetDb) -> None:
    wrong = "Wr0ng-" + secrets.token_hex(8)
    sink = target.sink(password=wrong)
    with pytest.raises(SinkError) as info:
        sink.open(None, [])
    message = str(info.value)
    assert "cannot connect" in message and target.options["username"] in message
    assert wrong not in message and wrong not in repr(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_targets_named_with_percent_are_the_ones_emptied_and_dropped(target: TargetDb) -> None:
    """A '%' doubled for the drivers' placeholders is a '%' again only in a statement run
    with parameters: DELETE and DROP ran without, and hit the table named with '%%' (#63)."""
    from pyspark.sql.types import IntegerType, StructType

    schema = StructType().add("id", IntegerType())
    q = '"' if target.family == "postgresql" else "`"
    for name in ("x%y", "x%%y"):  # (the test's own statements run without parameters)
        target.query(f"CREATE TABLE {q}{name}{q} (id INT PRIMARY KEY)")
    table = SinkTable(TableId("d", "x%y"), schema, ("id",))
    sink = target.sink()
    sink.open(None, [table])
    for name in ("x%y", "x%%y"):
        target.query(f"INSERT INTO {q}{name}{q} VALUES (1)")
    try:
        sink.truncate(None, table, plan_of("p", 0, {}, '{"pos": 1}'))
        sink.write(plan_of("p", 0, {}, '{"pos": 1}'))
        assert target.rows("x%y") == []
        assert target.rows("x%%y") == [(1,)]  # the other table keeps its row
        sink.drop_table(None, table, plan_of("p", 1, {}, '{"pos": 2}'))
        sink.write(plan_of("p", 1, {}, '{"pos": 2}'))
    finally:
        sink.close()
    here = "current_schema()" if target.family == "postgresql" else "DATABASE()"
    left = target.query(
        "SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'x%' "
        f"AND table_schema = {here}"
    )
    assert sorted(str(r[0]) for r in left) == ["x%%y"]


def test_someone_elses_table_is_refused_unless_adopted(target: TargetDb) -> None:
    """A non-empty table the sink did not make is not taken as a target by its name alone:
    its rows would be written over, and a truncate or a source DROP would empty or drop it
    (#63). An empty one, or one the option adopts, is taken and marked; tables the sink
    created are its own on every later run."""
    from pyspark.sql.types import IntegerType, StringType, StructType

    schema = StructType().add("id", IntegerType()).add("name", StringType())
    q = '"' if target.family == "postgresql" else "`"
    target.query(f"CREATE TABLE {q}users{q} (id INT PRIMARY KEY, name TEXT)")
    target.query(f"INSERT INTO {q}users{q} VALUES (1, 'the payroll')")
    target.query(f"CREATE TABLE {q}ready{q} (id INT PRIMARY KEY, name TEXT)")
    users = SinkTable(TableId("crm", "users"), schema, ("id",))
    ready = SinkTable(TableId("crm", "ready"), schema, ("id",))
    made = SinkTable(TableId("crm", "made"), schema, ("id",))
    with pytest.raises(SinkError, match="holds rows and was not made by a sparkcdc sink"):
        target.sink().open(None, [users])
    assert target.rows("users") == [(1, "the payroll")]

    first = target.sink()
    first.open(None, [ready, made])  # an empty table is taken, a missing one created
    first.close()
    for name in ("ready", "made"):
        target.query(f"INSERT INTO {q}{name}{q} VALUES (7, 'written')")
    again = target.sink()
    again.open(None, [ready, made])  # both marked: theirs now, rows and all
    again.close()

    adopted = target.sink(**{"adopt-existing-tables": "true"})
    adopted.open(None, [users])
    adopted.close()
    target.sink().open(None, [users])  # marked when adopted: no option needed again
    assert target.rows("users") == [(1, "the payroll")]

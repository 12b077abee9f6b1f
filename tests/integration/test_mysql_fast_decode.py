"""The compiled row decoder gives exactly the reference decoder's changes (python-mysql-
replication + RowDecoder), on real MariaDB binlogs: every supported type, NULLs, inserts,
updates with full images, deletes, multi-row events, large transactions, 1..1000 columns.

The reference itself is checked against the snapshot path and literal values in
test_mysql_types_roundtrip.py; here the two binlog decoders are compared value for value
(and type for type: ``True`` is not ``1``, ``Decimal('1.50')`` keeps its exponent).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.reader import read_change_blocks, read_changes
from sparkcdc.connectors.mysql.binlog.rowdecode import FastRowDecoder, WireColumn
from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import ColumnSinks
from sparkcdc.connectors.mysql.binlog.table_names import name_columns
from sparkcdc.connectors.mysql.config import MySqlSourceConfig, parse_config
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import arrow_type
from sparkcdc.core.rows import RowChange
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from tests.integration.test_mysql_types_roundtrip import DDL, INSERTS, UPDATE_SQL, insert
from tests.support.decoder_tables import (
    COLUMN_TYPES,
    ColumnType,
    captured_table,
    column_values,
    create_table_sql,
    position,
)


def config_for(mariadb: EmbeddedMariaDB, database: str, table: str) -> MySqlSourceConfig:
    return parse_config(
        {**mariadb.source_options(), "database-name": database, "table-name": table}
    )


def both(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    coverage_reasons: Mapping[TableId, str] | None = None,
) -> tuple[list[RowChange], list[RowChange]]:
    """Both decoders' changes; also checks the Arrow output of every table not named in
    ``coverage_reasons`` (tables whose table maps the compiled plan leaves to Python)."""
    coverage_reasons = coverage_reasons or {}
    server_id = 7000 + secrets.randbelow(2000)
    fast = list(read_changes(config, tables, start, end, server_id, decoder="fast"))
    reference = list(read_changes(config, tables, start, end, server_id, decoder="reference"))
    arrow = assert_arrow_equals_reference(config, tables, start, end, server_id, reference)
    covered = [t for t in tables if not coverage_reasons.get(t)]
    assert arrow == len(covered), "every compiled table map has Arrow output"
    return fast, reference


def assert_arrow_equals_reference(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    server_id: int,
    reference: Sequence[RowChange],
) -> int:
    """The Arrow output (decode_into column sinks) equals pa.array of the reference
    decoder's row images, in the tables' Arrow types, image for image. Returns how many
    tables went to Arrow (the others' table maps take the reference path)."""
    types = {t: [arrow_type(c) for c in table.columns] for t, table in tables.items()}
    sinks = ColumnSinks(types)
    got: dict[TableId, list[pa.Array]] = {}
    blocks = list(read_change_blocks(config, tables, start, end, server_id, sinks=sinks))
    for t in tables:
        mine = [b for b in blocks if b.table == t]
        if mine and all(b.sunk is not None for b in mine):
            got[t] = sinks.take(t)
    for t, arrays in got.items():
        images = [
            image
            for change in reference
            if change.table == t
            for image in (change.before, change.after)
            if image is not None
        ]
        struct_type = pa.struct([pa.field(f"c{i}", ty) for i, ty in enumerate(types[t])])
        expected = pa.array(images, struct_type).flatten()
        for column, (a, e) in enumerate(zip(arrays, expected, strict=True)):
            a.validate(full=True)
            assert a.equals(e), (tables[t].columns[column].name, a, e)
    return len(got)


def typed(value: Any) -> Any:
    """A value with its type and, for Decimal, its exact digits and exponent."""
    if isinstance(value, Decimal):
        return ("Decimal", value.as_tuple())
    if isinstance(value, tuple):
        return tuple(typed(v) for v in value)
    return (type(value).__name__, value, getattr(value, "tzinfo", None))


def assert_same_changes(fast: Sequence[RowChange], reference: Sequence[RowChange]) -> None:
    assert len(fast) == len(reference)
    for f, r in zip(fast, reference, strict=True):
        assert f == r
        assert typed(f.before) == typed(r.before)
        assert typed(f.after) == typed(r.after)


def coverage(
    mariadb: EmbeddedMariaDB, table: CapturedTable, start: BinlogPosition
) -> dict[str, str]:
    """Reasons the compiled plan does not cover the table maps of ``table`` after ``start``
    (empty: every table map is compiled)."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import TableMapEvent

    stream = BinLogStreamReader(
        connection_settings={
            "host": mariadb.host,
            "port": mariadb.port,
            "user": mariadb.cdc.user,
            "password": mariadb.cdc.password,
        },
        server_id=7000 + secrets.randbelow(2000),
        is_mariadb=False,
        resume_stream=True,
        log_file=start.file,
        log_pos=start.pos,
        blocking=False,
        only_events=[TableMapEvent],
        only_schemas=[table.table_id.database],
    )
    reasons: dict[str, str] = {}
    try:
        for event in stream:
            if event.table != table.table_id.table:
                continue
            name_columns(event.columns, table.columns)  # no row metadata: the history's
            fast = FastRowDecoder([WireColumn.from_library(c) for c in event.columns], table)
            if not fast.covered:
                reasons[event.table] = fast.plan.reason
    finally:
        stream.close()
    return reasons


def test_all_types_fast_equals_reference(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    """The roundtrip test's rows (extremes, zero dates, negative fractional TIME, emoji,
    latin1, padded BINARY, empty SETs, spatial) through both decoders."""
    mariadb.execute(DDL, database=mysql_db)
    table = captured_table(mariadb, mysql_db, "all_types")
    start = position(mariadb)
    for written, _ in INSERTS.values():
        insert(mariadb, mysql_db, written)
    mariadb.execute(UPDATE_SQL, database=mysql_db)
    mariadb.execute("UPDATE all_types SET id = id + 100", database=mysql_db)  # multi-row
    mariadb.execute("DELETE FROM all_types WHERE id <> 103", database=mysql_db)
    end = position(mariadb)
    assert coverage(mariadb, table, start) == {}
    config = config_for(mariadb, mysql_db, "all_types")
    fast, reference = both(config, {table.table_id: table}, start, end)
    assert len(fast) == len(INSERTS) + 1 + len(INSERTS) + len(INSERTS) - 1
    assert_same_changes(fast, reference)


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[ColumnType], list[list[Any]], list[list[Any]]]:
    """Column types (1..1000 columns, mostly few), inserted rows and replacement values."""
    width = draw(st.one_of(st.integers(1, 12), st.sampled_from([0, 60, 400, 1000])))
    if width == 0:  # every type at once
        types = list(COLUMN_TYPES)
    else:
        types = draw(st.lists(st.sampled_from(COLUMN_TYPES), min_size=width, max_size=width))
    rows = draw(st.integers(1, 8))
    inserted = [draw(column_values(types)) for _ in range(rows)]
    updated = [draw(column_values(types)) for _ in range(rows)]
    return types, inserted, updated


@pytest.fixture(scope="module")
def hypo_db(mariadb: EmbeddedMariaDB) -> str:
    return mariadb.create_database(f"db_fast_decode_hypo_{secrets.token_hex(3)}")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(workload=workloads())
def test_random_rows_fast_equals_reference(
    mariadb: EmbeddedMariaDB,
    hypo_db: str,
    workload: tuple[list[ColumnType], list[list[Any]], list[list[Any]]],
) -> None:
    types, inserted, updated = workload
    name = f"t_{secrets.token_hex(4)}"
    mariadb.execute(create_table_sql(name, types), database=hypo_db)
    table = captured_table(mariadb, hypo_db, name)
    names = [f"c{i}" for i in range(len(types))]
    start = position(mariadb)
    with mariadb.connect(hypo_db) as conn, conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("SET SESSION time_zone = '+00:00'")
        # one multi-row INSERT (a multi-row event), then per-row updates and a multi-row
        # UPDATE and DELETE inside one transaction
        marks = ", ".join(["(%s" + ", %s" * len(types) + ")"] * len(inserted))
        args = [v for i, row in enumerate(inserted) for v in [i + 1, *row]]
        cur.execute(f"INSERT INTO `{name}` (id, {', '.join(names)}) VALUES {marks}", args)
        cur.execute("BEGIN")
        for i, row in enumerate(updated):
            sets = ", ".join(f"{n} = %s" for n in names)
            cur.execute(f"UPDATE `{name}` SET {sets} WHERE id = %s", [*row, i + 1])
        cur.execute(f"UPDATE `{name}` SET id = id + 1000")
        cur.execute(f"DELETE FROM `{name}` WHERE id % 2 = 0")
        cur.execute("COMMIT")
    end = position(mariadb)
    reasons = coverage(mariadb, table, start)
    assert reasons == {}
    config = config_for(mariadb, hypo_db, name)
    fast, reference = both(config, {table.table_id: table}, start, end)
    assert len(fast) >= 2 * len(inserted)  # unchanged rows log no update
    assert_same_changes(fast, reference)
    mariadb.execute(f"DROP TABLE `{name}`", database=hypo_db)


def test_large_transaction_many_events(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    """20,000 rows in one transaction: dozens of rows events of ~8 KiB, one table map."""
    mariadb.execute(
        "CREATE TABLE big (id INT PRIMARY KEY, a VARCHAR(300), b DECIMAL(30,10), "
        "c DATETIME(6), d BIGINT UNSIGNED, e TEXT) DEFAULT CHARSET=utf8mb4",
        database=mysql_db,
    )
    table = captured_table(mariadb, mysql_db, "big")
    start = position(mariadb)
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute(
            "INSERT INTO big SELECT seq, REPEAT('ü', seq % 300), seq / 7, "
            "'2024-01-01' + INTERVAL seq SECOND + INTERVAL seq MICROSECOND, "
            "18446744073709551615 - seq, IF(seq % 3 = 0, NULL, REPEAT('x', seq % 1000)) "
            "FROM seq_1_to_20000"
        )
        cur.execute("UPDATE big SET a = CONCAT(a, '😀'), b = -b WHERE id % 3 = 0")
        cur.execute("DELETE FROM big WHERE id % 5 = 0")
        cur.execute("COMMIT")
    end = position(mariadb)
    config = config_for(mariadb, mysql_db, "big")
    fast, reference = both(config, {table.table_id: table}, start, end)
    assert len(fast) == 20000 + 20000 // 3 + 20000 // 5
    assert_same_changes(fast, reference)


def test_uncovered_types_fall_back_to_reference(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    """A charset the compiled plan leaves to Python (ucs2 here) makes the whole table map
    take the reference path, with the same results."""
    mariadb.execute(
        "CREATE TABLE fb (id INT PRIMARY KEY, u VARCHAR(10) CHARACTER SET ucs2, n INT)",
        database=mysql_db,
    )
    table = captured_table(mariadb, mysql_db, "fb")
    start = position(mariadb)
    mariadb.execute("INSERT INTO fb VALUES (1, 'äb', 5), (2, NULL, NULL)", database=mysql_db)
    end = position(mariadb)
    assert "ucs2" in coverage(mariadb, table, start).get("fb", "")
    config = config_for(mariadb, mysql_db, "fb")
    fast, reference = both(config, {table.table_id: table}, start, end, {table.table_id: "ucs2"})
    assert [c.after for c in fast] == [(1, "äb", 5), (2, None, None)]
    assert_same_changes(fast, reference)

"""A captured table's columns change while the stream reads it: every row is decoded with
the columns it was written with. A one-table stream stops at the change for a restart
with the new columns; several tables follow changes without one. A drop or rename of a
captured table stops the stream with the statement and the way out (never silently wrong
rows), a truncate too unless skipped; an online schema change tool's swap is followed."""

from __future__ import annotations

import json
from decimal import Decimal
from functools import partial
from typing import Any

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.changes import CHANGE_COLUMNS
from sparkcdc.core.errors import RestartForSchemaError, SchemaError
from sparkcdc.embedded import EmbeddedMariaDB
from tests.conftest import on_flavors
from tests.support.inprocess import run_batches
from tests.support.mariadb_writes import numbers

mariadb = on_flavors("mariadb", "mysql8", "mysql57")


def is_mysql57(server: EmbeddedMariaDB) -> bool:
    return str(server.execute("SELECT VERSION()")[0][0]).startswith("5.7.")


def source(mariadb: EmbeddedMariaDB, database: str, **extra: str) -> MySqlCdcSource:
    options = {
        **mariadb.source_options(),
        "database-name": database,
        "table-name": "t",
        "server-id": "6200-6210",
        **extra,
    }
    return MySqlCdcSource(parse_config(options))


@pytest.mark.parametrize(
    ("ddl", "columns", "after", "row_1"),
    [
        ("ADD COLUMN c INT", ["id", "name", "qty", "price", "c"], {"c": 7}, None),
        ("ADD COLUMN c INT FIRST", ["c", "id", "name", "qty", "price"], {"c": 7}, None),
        ("ADD c VARCHAR(8) AFTER id", ["id", "c", "name", "qty", "price"], {"c": "x"}, None),
        ("DROP COLUMN name", ["id", "qty", "price"], {}, None),
        ("CHANGE name label VARCHAR(32)", ["id", "label", "qty", "price"], {"label": "b"}, None),
        ("RENAME COLUMN name TO label", ["id", "label", "qty", "price"], {"label": "b"}, None),
        ("MODIFY qty BIGINT", ["id", "name", "qty", "price"], {"qty": 2**40}, None),
        ("MODIFY price DECIMAL(12,4)", ["id", "name", "qty", "price"], {"price": "1.2345"}, None),
        # values the binlog does not carry: the table's rows are read again
        (
            "MODIFY qty INT UNSIGNED",
            ["id", "name", "qty", "price"],
            {"qty": 2**31 + 5},
            {"qty": 2},
        ),
        ("MODIFY price DECIMAL(10,1)", ["id", "name", "qty", "price"], {}, {"price": "1.5"}),
        (
            "ADD COLUMN d DATETIME(3), ADD COLUMN e ENUM('x','y') NOT NULL DEFAULT 'y'",
            ["id", "name", "qty", "price", "d", "e"],
            {"e": "x"},
            {"d": None, "e": "y"},
        ),
    ],
)
def test_a_one_table_stream_stops_at_a_column_change_and_resumes_with_the_new_columns(
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    ddl: str,
    columns: list[str],
    after: dict[str, Any],
    row_1: dict[str, Any] | None,
) -> None:
    """A change that gives the rows there values without binlog rows (``row_1``: row 1's
    values then) has the restarted stream read the table again; the others do not."""
    if ddl.startswith("RENAME COLUMN") and is_mysql57(mariadb):  # no RENAME COLUMN there
        ddl = "CHANGE name label VARCHAR(32)"
    mariadb.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(32), qty INT, price DECIMAL(10,2))",
        database=mysql_db,
    )
    mariadb.execute("INSERT INTO t VALUES (1, 'a', 1, 1.50)", database=mysql_db)
    cdc = source(mariadb, mysql_db)
    rows: list[dict[str, Any]] = []
    ends: list[Any] = []
    try:
        offset = run_batches(cdc, None, rows.extend)  # the snapshot
        mariadb.execute("UPDATE t SET qty = 2 WHERE id = 1", database=mysql_db)
        offset = run_batches(cdc, offset, rows.extend)  # a change under the old schema
        assert [r["qty"] for r in rows] == [1, 1, 2]
        mariadb.execute(f"ALTER TABLE t {ddl}", database=mysql_db)
        values = {"id": 2, **after}
        names = ", ".join(values)
        marks = ", ".join(["%s"] * len(values))
        mariadb.execute(
            f"INSERT INTO t ({names}) VALUES ({marks})", tuple(values.values()), database=mysql_db
        )
        with pytest.raises(RestartForSchemaError) as stopped:
            run_batches(cdc, offset, rows.extend, ends=ends)
        assert f"the columns of {mysql_db}.t changed" in str(stopped.value)
        assert "restart the query" in str(stopped.value)
        assert len(rows) == 3  # the change's own batch has no rows
    finally:
        cdc.close()
    restarted = source(mariadb, mysql_db)  # a new query: the table's columns now
    more: list[dict[str, Any]] = []
    try:
        run_batches(restarted, ends[-1], more.extend)
    finally:
        restarted.close()
    row = more[-1]  # row 2 (the insert, then as read again)
    assert [c for c in row if c not in CHANGE_COLUMNS] == columns
    for name, value in values.items():
        got = row[name]
        assert (str(got) if isinstance(got, Decimal) else got) == value, name
    again = [r for r in more if r["id"] == 1]
    assert [r["id"] for r in more] == ([2, 1, 2] if row_1 else [2])
    for name, value in (row_1 or {}).items():
        got = again[0][name]
        assert (str(got) if isinstance(got, Decimal) else got) == value, name


def test_statements_that_leave_the_columns_alone_do_not_stop_the_stream(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, qty INT)", database=mysql_db)
    cdc = source(mariadb, mysql_db)
    rows: list[dict[str, Any]] = []
    try:
        offset = run_batches(cdc, None, rows.extend)
        for ddl in ("ADD INDEX (qty)", "ALTER COLUMN qty SET DEFAULT 3", "ENGINE=InnoDB"):
            mariadb.execute(f"ALTER TABLE t {ddl}", database=mysql_db)
        mariadb.execute("INSERT INTO t (id) VALUES (1)", database=mysql_db)
        run_batches(cdc, offset, rows.extend)
    finally:
        cdc.close()
    assert [(r["id"], r["qty"]) for r in rows] == [(1, 3)]


def test_several_tables_follow_every_change_with_rows_in_between(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """Several tables share the envelope, whose rows carry their own columns: the stream
    follows any number of changes without a restart, each row decoded with the columns
    it was written with."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT)", database=mysql_db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY)", database=mysql_db)
    cdc = MySqlCdcSource(
        parse_config(
            {
                **mariadb.source_options(),
                "database-name": mysql_db,
                "table-name": "t|u",
                "server-id": "6200-6210",
            }
        )
    )
    rows: list[dict[str, Any]] = []
    try:
        offset = run_batches(cdc, None, rows.extend)
        script = [
            "INSERT INTO t VALUES (1, 1)",
            "ALTER TABLE t ADD COLUMN b VARCHAR(4)",
            "INSERT INTO t VALUES (2, 2, 'x')",
            "INSERT INTO u VALUES (1)",
            "ALTER TABLE t DROP COLUMN a, ADD COLUMN c BIGINT FIRST",
            "UPDATE t SET c = 5 WHERE id = 1",
            (
                "ALTER TABLE t CHANGE b bb VARCHAR(4)"  # 5.7 has no RENAME COLUMN
                if is_mysql57(mariadb)
                else "ALTER TABLE t RENAME COLUMN b TO bb"
            ),
            "INSERT INTO t VALUES (9, 3, 'y')",
        ]
        for statement in script:
            mariadb.execute(statement, database=mysql_db)
        run_batches(cdc, offset, rows.extend)
    finally:
        cdc.close()
    images = [
        (r["_change_type"], json.loads(r["after"] or r["before"]))
        for r in rows
        if r["table_name"] == "t"
    ]
    assert images == [
        ("insert", {"id": 1, "a": 1}),
        ("insert", {"id": 2, "a": 2, "b": "x"}),
        ("update", {"c": 5, "id": 1, "b": None}),
        ("insert", {"c": 9, "id": 3, "bb": "y"}),
    ]


def test_changes_while_a_table_is_snapshotted_are_followed(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """Columns added and dropped while a table's snapshot runs, with writes in between:
    the batch before each change reads no chunk of the table (its chunks would be read in
    the new shape and normalised across the change), the change is a batch of its own, and
    the snapshot goes on in the new shape. The replayed rows equal the table (rows of the
    old shape lack the columns added since, as an upsert target fills them with NULL)."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, name VARCHAR(8))")
    execute("CREATE TABLE u (id INT PRIMARY KEY)")
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s)", [(i, i, f"n{i}") for i in range(400)])
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "t|u",
        "server-id": "6200-6210",
        "scan.incremental.snapshot.chunk.size": "20",
    }
    cdc = MySqlCdcSource(parse_config(options))
    # each change comes after other writes, so the batch before it has a range to read
    script = {
        1: [
            "UPDATE t SET a = -1 WHERE id = 3",
            "ALTER TABLE t ADD COLUMN b VARCHAR(4)",
            "UPDATE t SET b = 'x' WHERE id % 7 = 0",
        ],
        2: ["INSERT INTO t VALUES (1000, 1, 'late', 'y')", "DELETE FROM t WHERE id = 390"],
        3: [
            "INSERT INTO u VALUES (1)",
            "ALTER TABLE t DROP COLUMN a",
            "UPDATE t SET name = 'moved', id = id + 2000 WHERE id = 385",
        ],
        5: ["INSERT INTO u VALUES (2)", "ALTER TABLE t ADD COLUMN c INT FIRST"],
    }
    state: dict[Any, dict[str, Any]] = {}

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            if r["table_name"] != "t":
                continue
            if r["before"]:
                del state[json.loads(r["before"])["id"]]
            if r["after"]:
                image = json.loads(r["after"])
                state[image["id"]] = image

    def between(batch: int) -> None:
        for statement in script.get(batch, []):
            execute(statement)

    try:
        run_batches(cdc, None, replay, max_rows=60, between=between)
    finally:
        cdc.close()
    columns = [
        c
        for (c,) in execute(
            "SELECT column_name FROM information_schema.columns "
            f"WHERE table_schema = '{mysql_db}' AND table_name = 't' "
            "ORDER BY ordinal_position"
        )
    ]
    table = {
        r[columns.index("id")]: dict(zip(columns, r, strict=True))
        for r in execute("SELECT * FROM t")
    }
    replayed = {k: {c: image.get(c) for c in columns} for k, image in state.items()}
    assert replayed == table


def test_a_change_of_the_chunk_key_while_a_table_is_snapshotted_stops_the_stream(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """The snapshot's cursor is a value of the chunk key column (here not the primary
    key, whose changes are never followed): retyping it mid-snapshot stops the stream at
    planning, naming the statement (never a cursor of the old type)."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT)", database=mysql_db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY, a INT)", database=mysql_db)
    mariadb.execute(f"INSERT INTO t SELECT seq, seq FROM {numbers(0, 199)}", database=mysql_db)
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "t|u",
        "server-id": "6200-6210",
        "scan.incremental.snapshot.chunk.size": "20",
        "scan.incremental.snapshot.chunk.key-column": "a",
    }
    cdc = MySqlCdcSource(parse_config(options))

    def between(batch: int) -> None:
        if batch == 1:
            mariadb.execute("INSERT INTO u VALUES (1, 1)", database=mysql_db)
            mariadb.execute("ALTER TABLE t MODIFY a VARCHAR(10)", database=mysql_db)

    try:
        with pytest.raises(SchemaError, match=r"MODIFY a VARCHAR.*changes its chunk key"):
            run_batches(cdc, None, lambda rows: None, max_rows=40, between=between)
    finally:
        cdc.close()


def test_a_column_change_the_binlog_does_not_log_stops_the_stream_at_its_rows(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """An ALTER made with the binlog off leaves no statement to follow: the first row
    event whose table map has other columns than the captured table stops the read,
    naming the change and its place, never decoding the row into the old columns."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, qty INT)", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1, 1)", database=mysql_db)
    cdc = source(mariadb, mysql_db)
    try:
        offset = run_batches(cdc, None, lambda rows: None)
        with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("ALTER TABLE t ADD COLUMN c INT")
            cur.execute("SET SESSION sql_log_bin = 1")
            cur.execute("INSERT INTO t VALUES (2, 2, 2)")
            conn.commit()
        with pytest.raises(SchemaError) as stopped:
            run_batches(cdc, offset, lambda rows: None)
    finally:
        cdc.close()
    message = str(stopped.value)
    assert (
        f"the columns of {mysql_db}.t changed while captured (3 columns in the binlog, 2 "
        "captured; binlog " in message
    )
    assert "no statement in the binlog" in message and "sql_log_bin" in message
    assert "new checkpoint" in message


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("ALTER TABLE t ADD COLUMN (a INT, b INT)", r"of {db}\.t .*not followed: sqlglot"),
        (
            "ALTER TABLE t ADD c INT NOT NULL, DROP PRIMARY KEY, ADD PRIMARY KEY (id, c)",
            "not followed",
        ),
        ("TRUNCATE TABLE other", None),
        ("RENAME TABLE t TO t_old, other TO t", None),  # a swap: followed
        ("RENAME TABLE t TO t_old", r"RENAME of {db}\.t .*truncate\.handling\.mode"),
        ("ALTER TABLE t RENAME TO t_old", r"RENAME of {db}\.t .*truncate\.handling\.mode"),
    ],
)
def test_a_drop_or_rename_stops_the_stream_at_planning(
    mariadb: EmbeddedMariaDB, mysql_db: str, statement: str, expected: str | None
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=mysql_db)
    mariadb.execute("CREATE TABLE other (id INT PRIMARY KEY)", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1), (2)", database=mysql_db)
    cdc = source(mariadb, mysql_db)
    try:
        offset = run_batches(cdc, None, lambda rows: None)
        mariadb.execute(statement, database=mysql_db)
        if expected is None:
            run_batches(cdc, offset, lambda rows: None)
            return
        with pytest.raises(SchemaError, match=expected.format(db=mysql_db)) as stopped:
            run_batches(cdc, offset, lambda rows: None)
        assert "new checkpoint" in str(stopped.value)
    finally:
        cdc.close()


def test_a_drop_table_is_a_batch_of_its_own_then_the_table_is_forgotten(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """With ``truncate.handling.mode: skip`` a DROP of a captured table while its snapshot
    runs is a batch of its own whose end offset marks the table dropped; the next batch's
    offset no longer has it, and the other table's rows replay to its table. A restart
    from before the drop reads the dropped table's changes with its columns from the
    offset up to the drop, then forgets it the same way. By default the stream stops at
    the drop, naming the option; a one-table stream cannot go past its table's drop."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE gone (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE kept (id INT PRIMARY KEY, a INT)")
    execute("CREATE TABLE v (id INT PRIMARY KEY)")
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        for table in ("gone", "kept"):
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s)", [(i, i) for i in range(300)])
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "gone|kept",
        "server-id": "6200-6210",
        "scan.incremental.snapshot.chunk.size": "20",
        "truncate.handling.mode": "skip",
    }
    stopping = [source(mariadb, mysql_db, **{"table-name": "v"})]
    stopping.append(source(mariadb, mysql_db, **{**options, "table-name": "v"}))
    starts = [run_batches(s, None, lambda rows: None) for s in stopping]
    script = {
        1: [
            "INSERT INTO gone VALUES (1000, 1)",
            "UPDATE kept SET a = -1 WHERE id = 7",
            "DROP TABLE gone, v",
            "UPDATE kept SET a = -2 WHERE id = 8",
        ],
        4: ["INSERT INTO kept VALUES (1000, 1)"],
    }
    state: dict[Any, Any] = {}
    emitted: set[int] = set()

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            image = json.loads(r["after"] or r["before"])
            if r["table_name"] == "gone":
                emitted.add(image["id"])
                continue
            if r["before"]:
                del state[json.loads(r["before"])["id"]]
            if r["after"]:
                state[image["id"]] = image["a"]

    def run_script(batch: int) -> None:
        for statement in script.get(batch, []):
            execute(statement)

    ends: list[Any] = []
    cdc = MySqlCdcSource(parse_config(options))
    try:
        run_batches(
            cdc,
            None,
            replay,
            max_rows=60,
            between=run_script,
            ends=ends,
        )
    finally:
        cdc.close()
    assert state == dict(execute("SELECT id, a FROM kept"))
    assert emitted and emitted <= {*range(300), 1000}
    key = f"{mysql_db}.gone"

    def dropped_at(offsets: list[Any]) -> int:
        (index,) = [
            i
            for i, e in enumerate(offsets)
            if "table_dropped" in e["tables"].get(key, {}).get("schema", {})
        ]
        assert "DROP TABLE `gone`,`v`" in offsets[index]["tables"][key]["schema"]["change"]
        assert all(key not in e["tables"] for e in offsets[index + 1 :])
        return index

    drop = dropped_at(ends)
    assert not ends[drop - 1]["tables"][key].get("done")  # dropped while its snapshot ran
    # a restart from before the drop: gone is no longer on the server
    again: list[Any] = []
    restarted = MySqlCdcSource(parse_config(options))
    try:
        run_batches(restarted, ends[drop - 1], lambda rows: None, ends=again)
    finally:
        restarted.close()
    assert dropped_at(again) == 0
    for stream, message in zip(
        stopping,
        [r"DROP of .*\.v .*truncate\.handling\.mode", r"a one-table stream ends with its table"],
        strict=True,
    ):
        try:
            with pytest.raises(SchemaError, match=message):
                run_batches(stream, starts.pop(0), lambda rows: None)
        finally:
            stream.close()


def test_a_rename_is_a_drop_of_the_old_name_and_the_new_name_a_new_table(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """RENAME TABLE src TO dst with ``scan.newly-added-table.enabled``: dst is a new table,
    snapshotted from the batch before the rename (its rows are src's), src's drop is a
    batch of its own; a rename to a name the options do not match is only a drop. The
    replayed dst equals the table."""
    execute = partial(mariadb.execute, database=mysql_db)
    for table in ("src", "kept"):
        execute(f"CREATE TABLE {table} (id INT PRIMARY KEY, a INT)")
        execute(f"INSERT INTO {table} VALUES (1, 1), (2, 2), (3, 3)")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "src|dst|kept",
        "server-id": "6200-6210",
        "truncate.handling.mode": "skip",
        "scan.newly-added-table.enabled": "true",
    }
    state: dict[str, dict[Any, Any]] = {}

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            table = state.setdefault(r["table_name"], {})
            if r["before"]:
                del table[json.loads(r["before"])["id"]]
            if r["after"]:
                image = json.loads(r["after"])
                table[image["id"]] = image["a"]

    ends: list[Any] = []
    cdc = MySqlCdcSource(parse_config(options))
    try:
        offset = run_batches(cdc, None, replay)
        for statement in (
            "INSERT INTO src VALUES (4, 4)",
            "RENAME TABLE src TO dst",
            "INSERT INTO dst VALUES (5, 5)",
            "UPDATE kept SET a = -1 WHERE id = 1",
        ):
            execute(statement)
        offset = run_batches(cdc, offset, replay, ends=ends)
        assert state["dst"] == dict(execute("SELECT id, a FROM dst"))
        assert state["src"] == {1: 1, 2: 2, 3: 3, 4: 4}  # up to the rename
        assert state["kept"] == dict(execute("SELECT id, a FROM kept"))
        marks = [e["tables"].get(f"{mysql_db}.src", {}).get("schema", {}) for e in ends]
        assert sum("table_dropped" in m for m in marks) == 1
        assert f"{mysql_db}.src" not in ends[-1]["tables"]
        execute("ALTER TABLE dst RENAME TO elsewhere")
        execute("INSERT INTO elsewhere VALUES (6, 6)")
        ends.clear()
        run_batches(cdc, offset, replay, ends=ends)
        assert sorted(ends[-1]["tables"]) == [f"{mysql_db}.kept"]
        assert "elsewhere" not in state and 6 not in state["dst"]
    finally:
        cdc.close()


def test_chunks_read_after_their_table_was_dropped_emit_nothing(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """A batch's chunks are read after it was planned: a DROP in between makes them
    unreadable (the log window holds the drop, or the SELECT finds no table). They emit
    nothing, no error, and the next batch is the drop's own."""
    execute = partial(mariadb.execute, database=mysql_db)
    for table in ("gone", "kept"):
        execute(f"CREATE TABLE {table} (id INT PRIMARY KEY)")
        execute(f"INSERT INTO {table} VALUES (1), (2), (3)")
    options = {
        **mariadb.source_options(),
        "database-name": mysql_db,
        "table-name": "gone|kept",
        "server-id": "6200-6210",
        "truncate.handling.mode": "skip",
    }
    cdc = MySqlCdcSource(parse_config(options))
    try:
        start = cdc.initial_offset()
        end = cdc.latest_offset(start, None)
        specs = cdc.partitions(start, end)
        execute("DROP TABLE gone")
        rows = [
            row
            for spec in specs
            for batch in cdc.read(spec)
            for row in pa.Table.from_batches([batch]).to_pylist()
        ]
        assert sorted(r["table_name"] for r in rows) == ["kept"] * 3
        drop = cdc.latest_offset(end, None)
        assert "table_dropped" in drop["tables"][f"{mysql_db}.gone"]["schema"]
        assert cdc.partitions(end, drop) == []
    finally:
        cdc.close()


def test_a_truncate_stops_the_stream_or_is_a_batch_of_its_own_recorded_in_the_offset(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """``truncate.handling.mode``: ``fail`` (the default) stops at planning, naming the
    statement and the option; ``skip`` makes the truncate a batch of its own (no rows),
    whose offset records it, each truncate with its own position; rows around it flow."""
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT)", database=mysql_db)
    mariadb.execute("INSERT INTO t VALUES (1, 1), (2, 2)", database=mysql_db)
    stopping = source(mariadb, mysql_db)
    try:
        offset = run_batches(stopping, None, lambda rows: None)
        mariadb.execute("/* nightly */ TRUNCATE TABLE `t`", database=mysql_db)
        with pytest.raises(SchemaError, match=r"TRUNCATE of .*t.*truncate\.handling\.mode"):
            run_batches(stopping, offset, lambda rows: None)
    finally:
        stopping.close()

    cdc = source(mariadb, mysql_db, **{"truncate.handling.mode": "skip"})
    batches: list[list[tuple[str, int]]] = []
    ends: list[Any] = []
    try:
        mariadb.execute("INSERT INTO t VALUES (3, 3)", database=mysql_db)
        mariadb.execute("TRUNCATE t", database=mysql_db)
        mariadb.execute("INSERT INTO t VALUES (4, 4)", database=mysql_db)
        run_batches(
            cdc,
            offset,
            lambda rows: batches.append([(r["_change_type"], r["id"]) for r in rows]),
            ends=ends,
        )
    finally:
        cdc.close()
    # the first truncate, the insert, the second truncate, the insert: each alone
    assert batches == [[], [("insert", 3)], [], [("insert", 4)]]
    marks = [e["tables"][f"{mysql_db}.t"]["schema"] for e in ends]
    assert "TRUNCATE" in marks[0]["change"] and marks[2]["change"] == "TRUNCATE t"
    assert marks[0]["truncated"] != marks[2]["truncated"]
    assert marks[1]["truncated"] == marks[0]["truncated"]  # kept until the next change


@pytest.mark.parametrize(
    ("tool", "at_batch"),
    [("gh-ost", 1), ("pt-osc", None)],  # while t's snapshot runs; after it is done
)
def test_an_online_schema_change_tools_swap_is_followed_and_the_table_read_again(
    mariadb: EmbeddedMariaDB, mysql_db: str, tool: str, at_batch: int | None
) -> None:
    """gh-ost and pt-online-schema-change alter a copy of the table (``_t_gho`` /
    ``_t_new``, not captured), keep it in step with the table's writes, and swap it in
    with one RENAME. The stream takes the copy's columns at the swap (a column the tool
    renamed is a drop and an add) and reads the table again, so the replayed rows equal
    the table afterwards: values of the renamed and added columns included."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, name VARCHAR(8))")
    execute("CREATE TABLE u (id INT PRIMARY KEY)")
    execute(f"INSERT INTO t SELECT seq, seq, CONCAT('n', seq) FROM {numbers(0, 399)}")
    shadow, old = ("_t_gho", "_t_del") if tool == "gh-ost" else ("_t_new", "_t_old")
    swap = [
        "UPDATE t SET a = -1 WHERE id = 3",
        f"CREATE TABLE {shadow} LIKE t",
        f"ALTER TABLE {shadow} CHANGE name label VARCHAR(8), ADD COLUMN extra INT DEFAULT 5",
        "DELETE FROM t WHERE id = 7",  # the tool applies the table's writes to its copy
        f"INSERT INTO {shadow} (id, a, label) SELECT id, a, name FROM t",
        "INSERT INTO u VALUES (1)",
        f"RENAME /* {tool} */ TABLE `{mysql_db}`.`t` TO `{mysql_db}`.`{old}`, "
        f"`{mysql_db}`.`{shadow}` TO `{mysql_db}`.`t`",
        f"DROP TABLE {old}",
        "UPDATE t SET extra = 9, label = 'upd' WHERE id % 11 = 0",
        "INSERT INTO t VALUES (1000, 1, 'late', 1)",
    ]
    cdc = source(
        mariadb, mysql_db, **{"table-name": "t|u", "scan.incremental.snapshot.chunk.size": "20"}
    )
    state: dict[Any, dict[str, Any]] = {}
    ends: list[Any] = []

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            if r["table_name"] != "t":
                continue
            if r["before"]:
                state.pop(json.loads(r["before"])["id"], None)
            if r["after"]:
                image = json.loads(r["after"])
                state[image["id"]] = image

    def between(batch: int) -> None:
        if batch == at_batch:
            for statement in swap:
                execute(statement)

    try:
        offset = run_batches(cdc, None, replay, max_rows=60, between=between, ends=ends)
        if at_batch is None:
            assert all(p.get("done") for p in ends[-1]["tables"].values())
            for statement in swap:
                execute(statement)
            run_batches(cdc, offset, replay, max_rows=60, ends=ends)
    finally:
        cdc.close()
    columns = ["id", "a", "label", "extra"]
    table = {r[0]: dict(zip(columns, r, strict=True)) for r in execute("SELECT * FROM t")}
    assert len(table) == 400 and table[11]["extra"] == 9 and table[12]["label"] == "n12"
    assert {k: {c: image.get(c) for c in columns} for k, image in state.items()} == table
    changes = [e["tables"][f"{mysql_db}.t"]["schema"] for e in ends]
    swapped = next(c for c in changes if "RENAME" in c.get("change", ""))
    assert swapped["dropped"] == ["name"]
    assert [c[0] for c in swapped["table"]["columns"]] == columns


def test_the_log_split_cut_from_the_planning_walk_is_the_split_walked_again(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """The planner's schema-change scan records the range's transaction boundaries, and
    the batch's log split is cut from them instead of walking the range a second time: the
    cuts (positions and GTID states) must be the ones the split's own walk finds."""
    from sparkcdc.connectors.mysql.binlog.limit import Boundary, split_at_boundaries, split_log
    from sparkcdc.connectors.mysql.binlog.schema_scan import first_schema_change

    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(64))", database=mysql_db)
    mariadb.execute("CREATE TABLE other (id INT PRIMARY KEY)", database=mysql_db)
    cdc = source(mariadb, mysql_db)
    try:
        start = cdc.dialect.current_position()
        with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
            for i in range(300):  # small transactions, a DDL of an uncaptured table, a flush
                cur.execute("INSERT INTO t VALUES (%s, REPEAT('x', 60))", (i,))
                conn.commit()
                if i == 100:
                    cur.execute("ALTER TABLE other ADD COLUMN c INT")
                if i == 200:
                    cur.execute("FLUSH BINARY LOGS")
        end = cdc.dialect.current_position()
        conn_ = cdc.dialect.conn
        walked: list[Boundary] = []
        change = first_schema_change(conn_, start, end, cdc.tables, lambda t: None, True, walked)
        assert change is None
        again = split_log(conn_, start, end, min_piece_bytes=1000)
        cut = split_at_boundaries(conn_, start, end, walked, min_piece_bytes=1000)
        assert len(again) == 3  # two pieces: the range is far below the 16-MiB piece size
        assert cut == again
        assert [c.gtid for c in cut] == [c.gtid for c in again]
    finally:
        cdc.close()

"""Column changes of captured tables while a pipeline runs, into Delta and PostgreSQL,
for each followed ``schema.change.behavior``: each target equals the target written down
here by hand from the behaviour's definition (docs/schema-evolution.md), not from the
code's own rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from sparkcdc.spark.kafka.source import read_kafka
from sparkcdc.verify.run import verify_tables
from tests.conftest import on_flavors
from tests.support.pipelines import (
    committed_offsets,
    pipeline_file,
    postgres_sink_block,
    run_until_caught_up,
    sink_block,
    wait_until,
)

#: MariaDB by default; the tests that also run on MySQL 8.0 say so (``indirect``).
mariadb = on_flavors("mariadb")
ALSO_MYSQL8 = pytest.mark.parametrize("mariadb", ["mariadb", "mysql8"], indirect=True)

BIG = 2**40

#: After the snapshot of t (1, 1, 'x'), (2, 2, 'y'), (3, 3, 'z') and u (1, 'one').
SCRIPT = [
    "INSERT INTO t VALUES (4, 4, 'w')",
    "ALTER TABLE t ADD COLUMN c INT",
    "INSERT INTO t VALUES (5, 5, 'v', 50)",
    "UPDATE t SET c = 10 WHERE id = 1",
    "INSERT INTO u VALUES (2, 'two')",
    "ALTER TABLE t DROP COLUMN b",
    "UPDATE t SET a = 20 WHERE id = 2",
    "ALTER TABLE t MODIFY a BIGINT NOT NULL",
    f"INSERT INTO t VALUES (6, {BIG}, 60)",
    "ALTER TABLE t RENAME COLUMN c TO d",
    "UPDATE t SET d = 11 WHERE id = 1",
    "DELETE FROM t WHERE id = 3",
    "INSERT INTO t VALUES (7, 7, 70)",
]

#: lenient: nothing is lost. b is kept after its drop (NULL in rows written after it), c is
#: kept after its rename to d (NULL from then on), a widened to BIGINT.
LENIENT_COLUMNS = ("id", "a", "b", "c", "d")
LENIENT = {
    1: (1, 1, None, None, 11),
    2: (2, 20, None, None, None),
    4: (4, 4, "w", None, None),
    5: (5, 5, "v", 50, None),
    6: (6, BIG, None, 60, None),
    7: (7, 7, None, None, 70),
}
U_ROWS = {1: (1, "one"), 2: (2, "two")}


def create_tables(mariadb: EmbeddedMariaDB, db: str) -> None:
    for statement in (
        "CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(16))",
        "INSERT INTO t VALUES (1, 1, 'x'), (2, 2, 'y'), (3, 3, 'z')",
        "CREATE TABLE u (id INT PRIMARY KEY, note VARCHAR(8))",
        "INSERT INTO u VALUES (1, 'one')",
    ):
        mariadb.execute(statement, database=db)


def target(
    spark: Any,
    sink: str,
    scratch: Path,
    postgres: EmbeddedPostgres,
    pg_db: str,
    db: str,
    table: str,
) -> tuple[tuple[str, ...], dict[Any, tuple[Any, ...]]]:
    """A target's columns and rows by key."""
    if sink == "delta":
        frame = spark.read.format("delta").load(str(scratch / "lake" / db / table))
        columns = tuple(frame.columns)
        rows = [tuple(r) for r in frame.collect()]
    else:
        with postgres.connect(pg_db) as conn:
            cursor = conn.execute(f'SELECT * FROM "{db}".{table}')
            columns = tuple(d.name for d in cursor.description)
            rows = [tuple(r) for r in cursor.fetchall()]
    key = columns.index("id")
    return columns, {r[key]: r for r in rows}


def delta_pipeline(scratch: Path, mariadb: EmbeddedMariaDB, db: str, behavior: str) -> Path:
    """A pipeline of t and u into Delta under ``schema.change.behavior: behavior``."""
    extra = f"  schema.change.behavior: {behavior}\n"
    return pipeline_file(scratch, mariadb, f"{db}.(t|u)", "type: delta\npath: lake", blocks=extra)


def run_script(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    path: Path,
    db: str,
    script: list[str],
) -> Any:
    run = prepare(load_pipeline(path), spark=spark)
    checkpoint = run.definition.settings.checkpoint

    def span_closed() -> bool:
        # the snapshot's chunk span stays in the offset until a planning walk finds no
        # change after it; a change before that re-reads the span (docs/schema-evolution.md,
        # "Rows read again and kept columns"), which these scripts' expectations leave out
        return not any("chunks" in t for t in committed_offsets(checkpoint)[-1]["tables"].values())

    def then() -> None:
        wait_until(span_closed, "the snapshot's chunk span to close")
        for statement in script:
            mariadb.execute(statement, database=db)

    run_until_caught_up(run, mariadb, then)
    return run


@pytest.mark.parametrize("sink", ["delta", "jdbc-postgres"])
def test_lenient_follows_adds_drops_renames_and_widening_while_streaming(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    create_tables(mariadb, mysql_db)
    block = sink_block(sink, postgres, pg_db, monkeypatch)
    path = pipeline_file(scratch, mariadb, f"{mysql_db}.(t|u)", block)
    run = run_script(spark, mariadb, path, mysql_db, SCRIPT)
    columns, rows = target(spark, sink, scratch, postgres, pg_db, mysql_db, "t")
    assert columns == LENIENT_COLUMNS
    assert rows == LENIENT
    assert target(spark, sink, scratch, postgres, pg_db, mysql_db, "u")[1] == U_ROWS
    # verify compares the columns the tables have now: u is equal; t's rows 5 and 6 were
    # not written since c became d, so their values are in c and d is NULL, which is what
    # lenient means for a rename (and what verify must report)
    verdicts = {
        str(v.table): v
        for v in verify_tables(spark, run.definition, run.sink, run.targets, run.probe.handle)
    }
    assert verdicts[f"{mysql_db}.u"].status == "equal"
    t = verdicts[f"{mysql_db}.t"].comparison
    assert t is not None and sorted(k for (k,), _ in t.samples) == [5, 6]
    assert run.metrics.snapshot().tables[0].schema_changes == 4
    # a restart writes into the evolved target as before: the row written now gets NULL in
    # the columns the table no longer has (b, c)
    mariadb.execute("UPDATE t SET a = 40 WHERE id = 5", database=mysql_db)
    run_script(spark, mariadb, path, mysql_db, [])
    assert target(spark, sink, scratch, postgres, pg_db, mysql_db, "t")[1][5] == (
        5,
        40,
        None,
        None,
        50,
    )


def test_ignore_keeps_the_target_columns_and_rows(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    """Up to the drop of b and an update after it, then a TRUNCATE (not applied: the
    rows stay) and a row after it."""
    create_tables(mariadb, mysql_db)
    path = delta_pipeline(scratch, mariadb, mysql_db, "ignore")
    script = [*SCRIPT[:7], "TRUNCATE TABLE t", "INSERT INTO t VALUES (9, 9, 90)"]
    run_script(spark, mariadb, path, mysql_db, script)
    frame = spark.read.format("delta").load(str(scratch / "lake" / mysql_db / "t"))
    assert tuple(frame.columns) == ("id", "a", "b")
    assert {r[0]: tuple(r) for r in frame.collect()} == {
        1: (1, 1, "x"),
        2: (2, 20, None),
        3: (3, 3, "z"),
        4: (4, 4, "w"),
        5: (5, 5, "v"),
        9: (9, 9, None),
    }


def test_exception_stops_before_the_first_row_of_the_new_shape(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    """With ``exclude.schema.changes: [add.column]`` the ADD COLUMN passes (taken as
    ``ignore`` takes it: c is not written); the DROP COLUMN stops the pipeline."""
    create_tables(mariadb, mysql_db)
    block = "type: delta\npath: lake\nexclude.schema.changes: [add.column]"
    extra = "  schema.change.behavior: exception\n"
    path = pipeline_file(scratch, mariadb, f"{mysql_db}.(t|u)", block, blocks=extra)
    with pytest.raises(AssertionError, match="ALTER TABLE t DROP COLUMN b") as stopped:
        run_script(spark, mariadb, path, mysql_db, SCRIPT[:7])
    assert "'schema.change.behavior' is 'exception'" in str(stopped.value)
    frame = spark.read.format("delta").load(str(scratch / "lake" / mysql_db / "t"))
    assert tuple(frame.columns) == ("id", "a", "b")
    assert {r[0]: tuple(r) for r in frame.collect()} == {  # the rows before the drop
        1: (1, 1, "x"),
        2: (2, 2, "y"),
        3: (3, 3, "z"),
        4: (4, 4, "w"),
        5: (5, 5, "v"),
    }


def test_a_one_table_pipeline_restarts_its_query_at_a_change(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    create_tables(mariadb, mysql_db)
    path = pipeline_file(scratch, mariadb, f"{mysql_db}.t", "type: delta\npath: lake")
    run = run_script(spark, mariadb, path, mysql_db, SCRIPT[:4])
    assert run.query is not None
    frame = spark.read.format("delta").load(str(scratch / "lake" / mysql_db / "t"))
    assert tuple(frame.columns) == ("id", "a", "b", "c")
    assert {r[0]: tuple(r) for r in frame.collect()} == {
        1: (1, 1, "x", 10),
        2: (2, 2, "y", None),
        3: (3, 3, "z", None),
        4: (4, 4, "w", None),
        5: (5, 5, "v", 50),
    }


#: evolve: the target mirrors t. b is dropped, c renamed to d with its values, a widened.
EVOLVE_COLUMNS = ("id", "a", "d")
EVOLVE = {
    1: (1, 1, 11),
    2: (2, 20, None),
    4: (4, 4, None),
    5: (5, 5, 50),
    6: (6, BIG, 60),
    7: (7, 7, 70),
}


@pytest.mark.parametrize("sink", ["delta"])  # PostgreSQL: test_pipeline_random_ddl.py
@ALSO_MYSQL8
def test_evolve_mirrors_adds_drops_renames_and_widening(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    create_tables(mariadb, mysql_db)
    block = sink_block(sink, postgres, pg_db, monkeypatch)
    extra = "  schema.change.behavior: evolve\n"
    path = pipeline_file(scratch, mariadb, f"{mysql_db}.(t|u)", block, blocks=extra)
    run = run_script(spark, mariadb, path, mysql_db, SCRIPT)
    assert target(spark, sink, scratch, postgres, pg_db, mysql_db, "t") == (EVOLVE_COLUMNS, EVOLVE)
    assert target(spark, sink, scratch, postgres, pg_db, mysql_db, "u")[1] == U_ROWS
    # the targets are the tables: verify finds nothing to report (unlike lenient's rename)
    verdicts = verify_tables(spark, run.definition, run.sink, run.targets, run.probe.handle)
    assert {str(v.table): v.status for v in verdicts} == {
        f"{mysql_db}.t": "equal",
        f"{mysql_db}.u": "equal",
    }
    # a column added FIRST lands first where the target keeps positions (Delta); a
    # restart writes into the target as it is now. The rows there get its default, which
    # no binlog row carries: the table is read again
    statement = "ALTER TABLE t ADD COLUMN x VARCHAR(4) NOT NULL DEFAULT 'x0' FIRST"
    mariadb.execute(statement, database=mysql_db)
    mariadb.execute("UPDATE t SET x = 'xx' WHERE id = 5", database=mysql_db)
    run_script(spark, mariadb, path, mysql_db, [])
    columns, rows = target(spark, sink, scratch, postgres, pg_db, mysql_db, "t")
    expected = ("x", "id", "a", "d") if sink == "delta" else ("id", "a", "d", "x")
    assert columns == expected
    assert rows[5] == (("xx", 5, 5, 50) if sink == "delta" else (5, 5, 50, "xx"))
    assert rows[1] == (("x0", 1, 1, 11) if sink == "delta" else (1, 1, 11, "x0"))
    # gh-ost renames a and adds e in its copy of t, then swaps the copy in: the target
    # takes the copy's columns (the rename as a drop and an add) and its rows
    mariadb.execute("DELETE FROM t WHERE id = 7", database=mysql_db)
    before_swap = len(committed_offsets(scratch / "checkpoint"))
    run_script(
        spark,
        mariadb,
        path,
        mysql_db,
        [
            "CREATE TABLE _t_gho LIKE t",
            "ALTER TABLE _t_gho CHANGE a aa BIGINT, ADD COLUMN e INT DEFAULT 3",
            "INSERT INTO _t_gho (x, id, aa, d) SELECT x, id, a, d FROM t",
            "RENAME TABLE t TO _t_del, _t_gho TO t",
            "DROP TABLE _t_del",
            "UPDATE t SET e = 4 WHERE id = 5",
        ],
    )
    columns, rows = target(spark, sink, scratch, postgres, pg_db, mysql_db, "t")
    assert columns == ("x", "id", "aa", "d", "e")
    assert rows == {r[1]: tuple(r) for r in mariadb.execute("SELECT * FROM t", database=mysql_db)}
    assert rows[5] == ("xx", 5, 5, 50, 4)
    # the swap read the whole table again: its last batch says the re-read is done (a
    # batch of the UPDATE after it may come later)
    swap_run = committed_offsets(scratch / "checkpoint")[before_swap:]
    ends = [o["tables"][f"{mysql_db}.t"].get("again") for o in swap_run]
    assert {"signal": "schema-change", "done": True} in ends, ends


def test_try_evolve_goes_on_where_the_target_refuses_and_evolve_stops(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A view on the PostgreSQL target's column b makes PostgreSQL refuse to drop it.
    ``evolve`` stops there, saying so; the same pipeline under ``try_evolve`` takes the
    drop as ``ignore`` does (b kept, NULL in later rows) and follows the other changes."""
    create_tables(mariadb, mysql_db)
    block = postgres_sink_block(postgres, pg_db, monkeypatch)
    path = pipeline_file(
        scratch, mariadb, f"{mysql_db}.(t|u)", block, blocks="  schema.change.behavior: evolve\n"
    )
    # stopped right after the snapshot batch, its chunk span (the whole table) is mostly
    # still in the checkpoint: the script's changes then read every row again, and the
    # rows read again after the drop leave b as the target has it (try_evolve fell back
    # to ignore); a stop one batch later reads nothing again, with the same result
    run_script(spark, mariadb, path, mysql_db, [])
    with postgres.connect(pg_db) as conn:
        conn.execute(f'CREATE VIEW "{mysql_db}".t_b AS SELECT id, b FROM "{mysql_db}".t')
    with pytest.raises(AssertionError, match=r"could not apply it .*depend.*'try_evolve'"):
        run_script(spark, mariadb, path, mysql_db, SCRIPT)
    path.write_text(path.read_text().replace("behavior: evolve", "behavior: try_evolve"))
    run_script(spark, mariadb, path, mysql_db, [])
    columns, rows = target(spark, "jdbc-postgres", scratch, postgres, pg_db, mysql_db, "t")
    assert columns == ("id", "a", "b", "d")
    assert rows == {
        1: (1, 1, None, 11),
        2: (2, 20, None, None),
        4: (4, 4, "w", None),
        5: (5, 5, "v", 50),
        6: (6, BIG, None, 60),
        7: (7, 7, None, 70),
    }


def test_changes_made_while_a_one_table_pipeline_was_stopped(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    """The checkpoint's offset holds the table's columns at its position, so rows written
    between two changes made while the pipeline was down are decoded with the columns they
    had (a one-table pipeline reads its table in the envelope until it has caught up)."""
    create_tables(mariadb, mysql_db)
    path = pipeline_file(scratch, mariadb, f"{mysql_db}.t", "type: delta\npath: lake")
    run_script(spark, mariadb, path, mysql_db, [])
    for statement in (
        "ALTER TABLE t ADD COLUMN c INT",
        "INSERT INTO t VALUES (4, 4, 'w', 40)",
        "ALTER TABLE t DROP COLUMN b, ADD COLUMN d VARCHAR(4) FIRST",
        "INSERT INTO t VALUES ('dd', 5, 5, 50)",
    ):
        mariadb.execute(statement, database=mysql_db)
    run = run_script(spark, mariadb, path, mysql_db, [])
    assert run.force_envelope
    frame = spark.read.format("delta").load(str(scratch / "lake" / mysql_db / "t"))
    assert tuple(frame.columns) == ("id", "a", "b", "c", "d")
    assert {r[0]: tuple(r) for r in frame.collect()} == {
        1: (1, 1, "x", None, None),
        2: (2, 2, "y", None, None),
        3: (3, 3, "z", None, None),
        4: (4, 4, "w", 40, None),
        5: (5, 5, None, 50, "dd"),
    }
    # caught up: the next run reads the table typed again
    again = prepare(load_pipeline(path), spark=spark)
    try:
        assert not again.force_envelope
    finally:
        again.stop()


@pytest.mark.parametrize(("behavior", "sink"), [("evolve", "delta"), ("lenient", "jdbc-postgres")])
def test_a_dropped_table_and_one_created_again_under_its_name(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    behavior: str,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DROP TABLE u while the pipeline streams, then u created again with other columns and
    a key the old u had (``scan.newly-added-table.enabled``). ``evolve`` drops u's target,
    and the new u gets a new target equal to it; ``lenient`` keeps the target with the old
    rows, and the new u's snapshot is merged into it (key 1 replaced, never a second row of
    it), its new column added. t goes on as if nothing happened."""
    create_tables(mariadb, mysql_db)
    path = pipeline_file(
        scratch,
        mariadb,
        f"{mysql_db}.(t|u)",
        sink_block(sink, postgres, pg_db, monkeypatch),
        extra_source="scan.newly-added-table.enabled: true",
        blocks=f"  schema.change.behavior: {behavior}\n",
    )
    script = [
        "INSERT INTO u VALUES (2, 'two')",
        "DROP TABLE u",
        "INSERT INTO t VALUES (4, 4, 'w')",
        "CREATE TABLE u (id INT PRIMARY KEY, note VARCHAR(8), n INT)",
        "INSERT INTO u VALUES (1, 'uno', 10), (9, 'nove', 90)",
        "UPDATE t SET a = 10 WHERE id = 1",
    ]
    run = run_script(spark, mariadb, path, mysql_db, script)
    columns, rows = target(spark, sink, scratch, postgres, pg_db, mysql_db, "u")
    verdicts = {
        str(v.table): v.status
        for v in verify_tables(spark, run.definition, run.sink, run.targets, run.probe.handle)
    }
    assert columns == ("id", "note", "n")
    if behavior == "evolve":
        assert rows == {1: (1, "uno", 10), 9: (9, "nove", 90)}
        assert verdicts == {f"{mysql_db}.t": "equal", f"{mysql_db}.u": "equal"}
    else:  # the old u's row 2 is kept, and verify says so
        assert rows == {1: (1, "uno", 10), 2: (2, "two", None), 9: (9, "nove", 90)}
        assert verdicts == {f"{mysql_db}.t": "equal", f"{mysql_db}.u": "different"}
    assert target(spark, sink, scratch, postgres, pg_db, mysql_db, "t")[1] == {
        1: (1, 10, "x"),
        2: (2, 2, "y"),
        3: (3, 3, "z"),
        4: (4, 4, "w"),
    }


def debezium_json_pipeline(
    mariadb: EmbeddedMariaDB, db: str, kafka: EmbeddedKafka, topic: str, scratch: Path
) -> Path:
    """The tables t and u, and a pipeline of theirs into debezium-json topics
    ``<topic>.<table>`` under ``evolve``."""
    create_tables(mariadb, db)
    block = (
        f"type: kafka\nproperties.bootstrap.servers: {kafka.bootstrap_servers}\n"
        f'value.format: debezium-json\ntopic-pattern: "{topic}.{{table}}"'
    )
    return pipeline_file(
        scratch, mariadb, f"{db}.(t|u)", block, blocks="  schema.change.behavior: evolve\n"
    )


def test_evolve_writes_a_truncate_to_a_debezium_json_topic(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    kafka: EmbeddedKafka,
    topic: str,
    scratch: Path,
) -> None:
    """Debezium's truncate message (op ``t``, no key, no images) between the changes
    before and after it; Kafka has no other way to say it."""
    path = debezium_json_pipeline(mariadb, mysql_db, kafka, topic, scratch)
    script = [
        "INSERT INTO t VALUES (4, 4, 'w')",
        "TRUNCATE TABLE t",
        "INSERT INTO t VALUES (5, 5, 'v')",
    ]
    run_script(spark, mariadb, path, mysql_db, script)
    raw = read_kafka(spark, kafka.bootstrap_servers, f"{topic}.t", streaming=False)
    messages = [
        (m["key"], json.loads(m["value"])) for m in raw.orderBy("partition", "offset").collect()
    ]
    ops = [(value["op"], (value["after"] or {}).get("id")) for _, value in messages]
    truncate = [(key, value) for key, value in messages if value["op"] == "t"]
    assert len(truncate) == 1
    key, value = truncate[0]
    assert key is None and value["before"] is None and value["after"] is None
    assert value["source"]["db"] == mysql_db and value["source"]["table"] == "t"
    assert value["source"]["file"] and value["source"]["pos"]
    # the snapshot's rows as Debezium's reads ("r"), the log's changes and the truncate;
    # a re-read of the chunks read before the truncate (ChunkSpan) may add "r" rows
    assert sorted((op, k) for op, k in ops if op != "r") == [("c", 4), ("c", 5), ("t", None)]
    read = [k for op, k in ops if op == "r"]
    assert {1, 2, 3} <= set(read) <= {1, 2, 3, 5}


def test_evolve_writes_each_change_with_its_columns_to_a_debezium_json_topic(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    kafka: EmbeddedKafka,
    topic: str,
    scratch: Path,
) -> None:
    """A topic is a history: each change's images carry the table's columns as of that
    change (as Debezium writes them), through an added, dropped, widened and renamed
    column; the column changes themselves write no data message."""
    path = debezium_json_pipeline(mariadb, mysql_db, kafka, topic, scratch)
    run_script(spark, mariadb, path, mysql_db, SCRIPT)
    raw = read_kafka(spark, kafka.bootstrap_servers, f"{topic}.t", streaming=False)
    values = [json.loads(m["value"]) for m in raw.orderBy("partition", "offset").collect()]
    # in order per key (a key's messages share a partition; partitions interleave)
    changes: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for v in values:
        if v["op"] != "r":
            image = v["before"] if v["op"] == "d" else v["after"]
            changes.setdefault(image["id"], []).append((v["op"], image))
    assert changes == {
        1: [("u", {"id": 1, "a": 1, "b": "x", "c": 10}), ("u", {"id": 1, "a": 1, "d": 11})],
        2: [("u", {"id": 2, "a": 20, "c": None})],
        3: [("d", {"id": 3, "a": 3, "d": None})],
        4: [("c", {"id": 4, "a": 4, "b": "w"})],
        5: [("c", {"id": 5, "a": 5, "b": "v", "c": 50})],
        6: [("c", {"id": 6, "a": BIG, "c": 60})],
        7: [("c", {"id": 7, "a": 7, "d": 70})],
    }
    # the snapshot's rows as Debezium's reads, with the columns they had then
    reads = [v["after"] for v in values if v["op"] == "r"]
    assert {(r["id"], r["a"], r.get("b")) for r in reads} >= {(1, 1, "x"), (2, 2, "y"), (3, 3, "z")}

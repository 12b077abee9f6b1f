"""MariaDB and PostgreSQL -> Delta pipelines with tables without a primary key
(docs/design.md, "Tables without a primary key"): captured as multisets of rows into a
history target, into an upsert target only with a transform's ``primary-keys``, refused
otherwise up front."""

from __future__ import annotations

import json
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import PipelineDefinition, load_pipeline
from sparkcdc.pipeline.runner import prepare
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.verify.run import verify_tables
from tests.integration.test_pipeline_postgres import SCHEMA, flush_lsn, pipeline
from tests.support.pipelines import (
    committed_batches,
    committed_offsets,
    pipeline_file,
    run_while_writing,
    snapshot_done,
    wait_until,
)
from tests.support.random_writer import RandomWriter, WriteStatements

#: Random writes to the keyless ``logs (id, name, qty)``, chunked by ``id``: every insert
#: adds two identical rows, updates, moves (of the chunk key) and deletes touch one row of
#: a value (LIMIT 1), so one of two identical rows is deleted or changed; ``audit`` has a
#: primary key.
KEYLESS_WRITES = WriteStatements(
    upsert=(
        "INSERT INTO logs (id, name, qty) SELECT %s, LEFT(%s, 2), MOD(%s, 3) "
        "FROM (SELECT 1 UNION ALL SELECT 2) AS twice"
    ),
    update="UPDATE logs SET qty = qty + 1 WHERE id = %s LIMIT 1",
    move="UPDATE logs SET id = %s WHERE id = %s LIMIT 1",
    delete="DELETE FROM logs WHERE id = %s LIMIT 1",
    audit="INSERT INTO audit (note) VALUES (%s)",
)

DELTA_HISTORY = """
type: delta
path: lake
changelog-mode: append
"""


def _history_replay(spark: Any, path: Path, columns: tuple[str, ...]) -> Counter[tuple[Any, ...]]:
    """A history target replayed as a multiset, here in Python: inserts and post-images
    add a copy of their row, deletes and pre-images take one away."""
    state: Counter[tuple[Any, ...]] = Counter()
    for r in spark.read.format("delta").load(str(path)).collect():
        row = tuple(r[c] for c in columns)
        gone = r["_change_type"] in ("delete", "update_preimage")
        state[row] += -1 if gone else 1
    assert min(state.values(), default=0) >= 0, "a row removed more often than it was added"
    return +state


def test_a_pattern_of_keyed_and_keyless_tables_into_a_history_target(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    """A keyless table with duplicate rows under random inserts, updates (of the chunk key
    too) and deletes of one of two identical rows, through its snapshot and stream, with a
    stop in the middle of the snapshot: its history target replays to the table as a
    multiset, the keyed table of the same pattern is captured too, and ``verify`` says
    both are equal (the keyless one compared as a multiset); then a target missing one
    copy of a duplicated row is found different."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE logs (id INT, name VARCHAR(16), qty INT)")
    execute("CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note VARCHAR(64))")
    execute(
        "INSERT INTO logs SELECT seq MOD 40, CONCAT('n', seq MOD 3), seq MOD 2 FROM seq_1_to_400"
    )
    execute("INSERT INTO audit (note) SELECT CONCAT('a', seq) FROM seq_1_to_50")
    pipeline = pipeline_file(
        scratch,
        mariadb,
        f"{mysql_db}.\\.*",
        DELTA_HISTORY,
        max_rows=150,
        extra_source=f"scan.incremental.snapshot.chunk.key-column: {mysql_db}.logs:id\n",
    )
    pipeline.write_text(
        pipeline.read_text().replace("chunk.size: 97", "chunk.size: 23"), encoding="utf-8"
    )
    definition = load_pipeline(pipeline)

    def writer(seed: int) -> RandomWriter:
        w = RandomWriter(lambda: mariadb.connect(mysql_db), KEYLESS_WRITES, seed, 50)
        w.pause, w.limit = 0.02, 300  # a backlog the pipeline clears in a few batches
        return w

    first, writes = prepare(definition, spark=spark), writer(64)
    writes.start()
    first.start()
    try:
        checkpoint = definition.settings.checkpoint
        wait_until(lambda: committed_batches(checkpoint) >= 3, "three batches")
    finally:
        first.stop()
        writes.stop()
    second = prepare(definition, spark=spark)
    run_while_writing(second, mariadb, writer(65), lambda: None)

    lake = scratch / "lake" / mysql_db
    table = Counter(execute("SELECT id, name, qty FROM logs"))
    assert max(table.values()) > 1, "the table should hold duplicate rows"
    assert _history_replay(spark, lake / "logs", ("id", "name", "qty")) == table
    audit = Counter(execute("SELECT id, note FROM audit"))
    assert _history_replay(spark, lake / "audit", ("id", "note")) == audit

    checked = prepare(definition, spark=spark)
    verdicts = verify_tables(spark, definition, checked.sink, checked.targets, checked.probe.handle)
    assert {str(v.table): v.status for v in verdicts} == {
        f"{mysql_db}.audit": "equal",
        f"{mysql_db}.logs": "equal",
    }

    # one copy of a duplicated row taken out of the history: verify names the row
    (twice, _), *_ = [(row, n) for row, n in table.items() if n > 1]
    history = spark.read.format("delta").load(str(lake / "logs"))
    one = history.where(
        f"id = {twice[0]} AND name = '{twice[1]}' AND qty = {twice[2]} "
        "AND _change_type IN ('insert', 'update_postimage')"
    ).limit(1)
    removal = one.selectExpr("*").drop("_change_type").selectExpr("*", "'delete' AS _change_type")
    removal.select(*history.columns).write.format("delta").mode("append").save(str(lake / "logs"))
    verdicts = verify_tables(spark, definition, checked.sink, checked.targets, checked.probe.handle)
    checked.stop()
    (logs,) = [v for v in verdicts if v.table.table == "logs"]
    assert logs.status == "different"
    assert logs.comparison is not None
    (sample,) = logs.comparison.samples
    assert json.loads(sample[0][0]) == {"id": twice[0], "name": twice[1], "qty": twice[2]}
    assert sample[1] == f"{table[twice]} in source, {table[twice] - 1} in target"


UPSERT_RULES = """\
transform:
  - source-table: {db}.items
    projection: \\*
    primary-keys: id
"""


def test_an_upsert_target_needs_the_transforms_primary_keys(
    spark: Any, mariadb: EmbeddedMariaDB, mysql_db: str, scratch: Path
) -> None:
    """Without a key a keyless table is refused by an upsert target before anything is
    written, naming the table and both ways out; with a transform's ``primary-keys`` its
    upsert target equals the table under random writes and a restart."""
    execute = partial(mariadb.execute, database=mysql_db)
    execute("CREATE TABLE items (id INT, name VARCHAR(16), qty INT)")
    execute("INSERT INTO items SELECT seq, CONCAT('n', seq), seq MOD 5 FROM seq_1_to_300")
    source = f"scan.incremental.snapshot.chunk.key-column: {mysql_db}.items:id\n"
    sink = "type: delta\npath: lake\n"
    (scratch / "refused").mkdir()
    refused = pipeline_file(
        scratch / "refused", mariadb, f"{mysql_db}.items", sink, extra_source=source
    )
    with pytest.raises(PipelineFileError) as caught:
        prepare(load_pipeline(refused), spark=spark)
    message = str(caught.value)
    assert f"table {mysql_db}.items has no primary key" in message
    assert "changelog-mode: append" in message and "primary-keys" in message
    assert not (scratch / "refused" / "lake").exists()

    pipeline = pipeline_file(
        scratch,
        mariadb,
        f"{mysql_db}.items",
        sink,
        max_rows=150,
        extra_source=source,
        blocks=UPSERT_RULES.format(db=mysql_db),
    )
    definition = load_pipeline(pipeline)
    items = WriteStatements(  # ids stay unique: the declared key is true
        upsert="INSERT INTO items (id, name, qty) SELECT v.id, v.name, v.qty FROM (SELECT "
        "%s + 1000 AS id, LEFT(%s, 16) AS name, %s AS qty) AS v WHERE NOT EXISTS "
        "(SELECT 1 FROM items AS i WHERE i.id = v.id)",
        update="UPDATE items SET qty = qty + 1, name = CONCAT(LEFT(name, 8), 'u') WHERE id = %s",
        move="UPDATE items SET qty = %s WHERE id = %s",
        delete="DELETE FROM items WHERE id = %s",
        audit="UPDATE items SET name = %s WHERE id = 7",
    )
    for seed in (1, 2):
        writes = RandomWriter(lambda: mariadb.connect(mysql_db), items, seed, 320)
        writes.pause, writes.limit = 0.02, 300
        run_while_writing(prepare(definition, spark=spark), mariadb, writes, lambda: None)
    rows = spark.read.format("delta").load(str(scratch / "lake" / mysql_db / "items")).collect()
    assert sorted(tuple(r) for r in rows) == sorted(execute("SELECT id, name, qty FROM items"))
    run = prepare(definition, spark=spark)
    try:
        (verdict,) = verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    finally:
        run.stop()
    assert verdict.status == "equal"


def _one_row(table: str, where: str) -> str:
    """The ``ctid`` of one row: PostgreSQL has no DELETE/UPDATE ... LIMIT."""
    return f"ctid = (SELECT ctid FROM {table} WHERE {where} LIMIT 1)"


#: :data:`KEYLESS_WRITES` in PostgreSQL: one of two identical rows by its ``ctid``.
PG_KEYLESS_WRITES = WriteStatements(
    upsert="INSERT INTO logs (id, name, qty) SELECT %s, LEFT(%s, 2), MOD(%s, 3) "
    "FROM generate_series(1, 2)",
    update=f"UPDATE logs SET qty = qty + 1 WHERE {_one_row('logs', 'id = %s')}",
    move=f"UPDATE logs SET id = %s WHERE {_one_row('logs', 'id = %s')}",
    delete=f"DELETE FROM logs WHERE {_one_row('logs', 'id = %s')}",
    audit="INSERT INTO audit (note) VALUES (%s)",
)
#: Writes to the keyless ``items``, whose ids stay unique (the declared key is true).
PG_ITEMS_WRITES = WriteStatements(
    upsert="INSERT INTO items (id, name, qty) SELECT v.id, v.name, v.qty FROM (SELECT "
    "%s + 1000 AS id, LEFT(%s, 16) AS name, %s AS qty) AS v WHERE NOT EXISTS "
    "(SELECT 1 FROM items AS i WHERE i.id = v.id)",
    update="UPDATE items SET qty = qty + 1, name = LEFT(name, 8) || 'u' WHERE id = %s",
    move="UPDATE items SET qty = %s WHERE id = %s",
    delete="DELETE FROM items WHERE id = %s",
    audit="UPDATE items SET name = %s WHERE id = 7",
)


def _pg_pipeline(
    folder: Path,
    postgres: EmbeddedPostgres,
    pg_db: str,
    slot: str,
    sink: str,
    tables: str,
    blocks: str = "",
) -> PipelineDefinition:
    """A pipeline of ``shop.(tables)`` chunked 23 rows at a time, the keyless tables on
    their ``id`` (with ``blocks``, e.g. a transform, at its end)."""
    folder.mkdir(exist_ok=True)
    path = pipeline(folder, postgres, pg_db, slot, sink, tables=tables)
    keys = f"{SCHEMA}.logs:id;{SCHEMA}.items:id"
    text = path.read_text(encoding="utf-8").replace(
        "  scan.incremental.snapshot.chunk.size: 97\n",
        f"  scan.incremental.snapshot.chunk.size: 23\n"
        f"  scan.incremental.snapshot.chunk.key-column: {keys}\n",
    )
    path.write_text(text + blocks, encoding="utf-8")
    return load_pipeline(path)


def _pg_writer(
    postgres: EmbeddedPostgres, pg_db: str, writes: WriteStatements, seed: int
) -> RandomWriter:
    w = RandomWriter(
        lambda: postgres.connect(pg_db, options=f"-c search_path={SCHEMA}"), writes, seed, 50
    )
    w.pause, w.limit = 0.02, 300
    return w


def _pg_catch_up(
    spark: Any,
    definition: PipelineDefinition,
    postgres: EmbeddedPostgres,
    pg_db: str,
    writer: RandomWriter,
) -> None:
    """Run the pipeline while ``writer`` writes; once its snapshot is committed stop the
    writes and wait until a committed offset is past the WAL's end."""
    run, checkpoint = prepare(definition, spark=spark), definition.settings.checkpoint

    def committed(reached: Any) -> Any:
        def check() -> bool:
            assert run.active, f"the pipeline stopped: {run.query.exception()}"
            return any(reached(o) for o in committed_offsets(checkpoint))

        return check

    writer.start()
    run.start()
    try:
        wait_until(committed(snapshot_done), "the snapshot")
        writer.stop()
        end = flush_lsn(postgres, pg_db)
        wait_until(committed(lambda o: lsn_from_text(o["log"]["lsn"]) >= end), "the catch-up")
    finally:
        run.stop()
        writer.stop()


def test_postgres_keyless_tables_into_history_and_upsert_targets(
    spark: Any, postgres: EmbeddedPostgres, pg_db: str, scratch: Path
) -> None:
    """PostgreSQL: a pattern of a keyless ``REPLICA IDENTITY FULL`` table with duplicate
    rows (random inserts, updates of the chunk key too, deletes of one of two identical
    rows by ``ctid``) and a keyed one, through snapshot and stream with a stop in the
    middle of the snapshot: the history target replays each to its table as a multiset and
    ``verify`` says both are equal. Then the keyless ``items`` (unique ids) into an upsert
    target through a transform's ``primary-keys``: equal to the
    table under random writes, and ``verify`` equal."""
    with postgres.connect(pg_db) as conn:
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(f"CREATE TABLE {SCHEMA}.logs (id INT NOT NULL, name TEXT, qty INT)")
        conn.execute(f"CREATE TABLE {SCHEMA}.audit (id SERIAL PRIMARY KEY, note TEXT)")
        conn.execute(f"CREATE TABLE {SCHEMA}.items (id INT NOT NULL, name TEXT, qty INT)")
        for name in ("logs", "audit", "items"):
            conn.execute(f"ALTER TABLE {SCHEMA}.{name} REPLICA IDENTITY FULL")
        conn.execute(
            f"INSERT INTO {SCHEMA}.logs SELECT g % 40, 'n' || g % 3, g % 2 "
            "FROM generate_series(1, 400) g"
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.audit (note) SELECT 'a' || g FROM generate_series(1, 50) g"
        )
        conn.execute(
            f"INSERT INTO {SCHEMA}.items SELECT g, 'n' || g, g % 5 FROM generate_series(1, 300) g"
        )

    def rows(sql: str) -> Counter[tuple[Any, ...]]:
        return Counter(postgres.execute(sql, dbname=pg_db))

    slots = [f"pipe_{pg_db[-6:]}", f"ups_{pg_db[-6:]}"]
    try:
        history = _pg_pipeline(
            scratch / "history", postgres, pg_db, slots[0], DELTA_HISTORY, "logs|audit"
        )
        first, writes = (
            prepare(history, spark=spark),
            _pg_writer(postgres, pg_db, PG_KEYLESS_WRITES, 64),
        )
        writes.start()
        first.start()
        try:
            wait_until(lambda: committed_batches(history.settings.checkpoint) >= 3, "three batches")
        finally:
            first.stop()
            writes.stop()
        _pg_catch_up(
            spark, history, postgres, pg_db, _pg_writer(postgres, pg_db, PG_KEYLESS_WRITES, 65)
        )

        lake = scratch / "history" / "lake" / SCHEMA
        table = rows(f"SELECT id, name, qty FROM {SCHEMA}.logs")
        assert max(table.values()) > 1, "the table should hold duplicate rows"
        assert _history_replay(spark, lake / "logs", ("id", "name", "qty")) == table
        audit = rows(f"SELECT id, note FROM {SCHEMA}.audit")
        assert _history_replay(spark, lake / "audit", ("id", "note")) == audit
        checked = prepare(history, spark=spark)
        try:
            verdicts = verify_tables(
                spark, history, checked.sink, checked.targets, checked.probe.handle
            )
        finally:
            checked.stop()
        assert {str(v.table): v.status for v in verdicts} == {
            f"{SCHEMA}.{t}": "equal" for t in ("logs", "audit")
        }

        rules = UPSERT_RULES.format(db=SCHEMA)
        upsert = _pg_pipeline(
            scratch / "upsert",
            postgres,
            pg_db,
            slots[1],
            "type: delta\npath: lake\n",
            "items",
            rules,
        )
        _pg_catch_up(
            spark, upsert, postgres, pg_db, _pg_writer(postgres, pg_db, PG_ITEMS_WRITES, 3)
        )
        target = spark.read.format("delta").load(
            str(scratch / "upsert" / "lake" / SCHEMA / "items")
        )
        assert sorted(tuple(r) for r in target.collect()) == sorted(
            postgres.execute(f"SELECT id, name, qty FROM {SCHEMA}.items", dbname=pg_db)
        )
        run = prepare(upsert, spark=spark)
        try:
            (verdict,) = verify_tables(spark, upsert, run.sink, run.targets, run.probe.handle)
        finally:
            run.stop()
        assert verdict.status == "equal"
    finally:
        for slot in slots:
            postgres.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                "WHERE slot_name = %s",
                (slot,),
                dbname=pg_db,
            )

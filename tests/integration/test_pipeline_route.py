"""route + transform end to end: three MariaDB shards with different columns and
overlapping keys, written to while the pipeline snapshots and streams, merged into one
Delta table and one PostgreSQL table; each target equals the union computed here from the
shards, and ``verify`` agrees. Then column changes of the shards, a new shard, and a shard
read again on demand, each target equal to the model of ``lenient`` computed here."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.main import main
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.verify.run import verify_tables
from tests.support.pipelines import (
    pipeline_file,
    run_until_caught_up,
    sink_block,
    wait_read_again,
)

SHARDS = {
    "shard_1": ("id BIGINT PRIMARY KEY", "name VARCHAR(64)", "qty INT"),
    "shard_2": ("id BIGINT PRIMARY KEY", "name VARCHAR(64)", "qty BIGINT", "note TEXT"),
    "shard_3": ("id INT PRIMARY KEY", "qty INT", "price DECIMAL(8,2)"),
}
#: The merged target: shard_1's columns, the projection's source_table, then what the
#: other shards add (tables in name order); id and qty widened to BIGINT.
COLUMNS = ("id", "name", "qty", "source_table", "note", "price")

RULES = """\
transform:
  - source-table: {db}.shard_[0-9]+
    projection: \\*, __table_name__ AS source_table
    filter: qty % 7 <> 3
    primary-keys: id, source_table
    partition-keys: source_table
    description: rows move in and out of the filter as qty changes
route:
  - source-table: {db}.shard_[0-9]+
    sink-table: {db}.merged
"""


#: Column changes of the shards once they stream, with writes between them; then, after a
#: restart, more writes. ``lenient`` (the default): the merged target gains extra and
#: label, keeps note and name (NULL in the rows of shard_2 written after their drop and
#: rename), and already holds shard_3's qty as BIGINT.
DDL = [
    "ALTER TABLE shard_1 ADD COLUMN extra VARCHAR(16)",
    "UPDATE shard_1 SET extra = CONCAT('e', id) WHERE id < 100",
    "ALTER TABLE shard_2 DROP COLUMN note",
    "UPDATE shard_2 SET qty = qty + 7 WHERE id < 50",
    "ALTER TABLE shard_3 MODIFY qty BIGINT",
    f"INSERT INTO shard_3 VALUES (2001, {2**40}, 1.5)",
    "ALTER TABLE shard_2 RENAME COLUMN name TO label",
    "UPDATE shard_2 SET qty = qty + 7 WHERE id BETWEEN 50 AND 60",
]
#: ... and a shard created while it runs (``scan.newly-added-table.enabled``): taken into
#: the merged target, which gains its color.
LATER = [
    "INSERT INTO shard_1 VALUES (3001, 'later', 1, 'x')",
    "UPDATE shard_2 SET label = 'relabelled' WHERE id BETWEEN 61 AND 62",
    "CREATE TABLE shard_4 (id BIGINT PRIMARY KEY, qty INT, color VARCHAR(8))",
    "INSERT INTO shard_4 VALUES (1, 1, 'red'), (2, 3, 'blue'), (3, 5, NULL)",
    "UPDATE shard_4 SET color = 'green' WHERE id = 3",
]
EVOLVED = (*COLUMNS, "extra", "label")
FINAL = (*EVOLVED, "color")
#: Each shard's columns after the changes; of shard_2, the ids written after the drop /
#: the rename
NOW = {
    "shard_1": ("id", "name", "qty", "extra"),
    "shard_2": ("id", "label", "qty"),
    "shard_3": ("id", "qty", "price"),
    "shard_4": ("id", "qty", "color"),
}
AFTER_DROP = range(0, 63)
AFTER_RENAME = range(50, 63)


class ShardWriter(threading.Thread):
    """Random inserts, updates (qty + 1: rows cross the filter), key moves and deletes on
    the three shards, one to three statements per transaction, across shards; at most
    ``limit`` transactions (a pipeline slower than the writer would never end its snapshot)."""

    limit = 1500

    def __init__(self, mariadb: EmbeddedMariaDB, db: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.mariadb, self.db, self.rng = mariadb, db, random.Random(seed)
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.mariadb.connect(self.db) as conn, conn.cursor() as cur:
                for _ in range(self.limit):
                    if self.stopping.is_set():
                        break
                    cur.execute("BEGIN")
                    for _ in range(self.rng.randint(1, 3)):
                        self.one(cur)
                    cur.execute("COMMIT")
                    self.stopping.wait(0.003)
        except BaseException as exc:
            self.error = exc

    def one(self, cur: Any) -> None:
        shard = self.rng.choice(sorted(SHARDS))
        k, op = self.rng.randrange(1500), self.rng.random()
        if op < 0.35:
            cur.execute(insert(shard) + " ON DUPLICATE KEY UPDATE qty = qty + 1", values(shard, k))
        elif op < 0.75:
            cur.execute(f"UPDATE {shard} SET qty = qty + 1 WHERE id = %s", (k,))
        elif op < 0.85:
            cur.execute(f"UPDATE IGNORE {shard} SET id = %s WHERE id = %s", (k + 1, k))
        else:
            cur.execute(f"DELETE FROM {shard} WHERE id = %s", (k,))

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)
        if self.error:
            raise self.error


def insert(shard: str) -> str:
    width = len(SHARDS[shard])
    return f"INSERT INTO {shard} VALUES ({', '.join(['%s'] * width)})"


def values(shard: str, k: int) -> tuple[Any, ...]:
    if shard == "shard_1":
        return (k, f"one-{k}", k % 40)
    if shard == "shard_2":
        return (k, f"two-{k}", k % 30, f"note {k}")
    return (k, k % 20, Decimal(k) / 4)


@pytest.fixture
def shards(mariadb: EmbeddedMariaDB, mysql_db: str) -> str:
    """Three shards whose keys overlap (every shard has ids 0, 2, 4, ...)."""
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        for shard, columns in SHARDS.items():
            cur.execute(f"CREATE TABLE {shard} ({', '.join(columns)})")
            cur.executemany(insert(shard), [values(shard, k) for k in range(0, 1500, 2)])
        conn.commit()
    return mysql_db


def expected(mariadb: EmbeddedMariaDB, db: str) -> dict[tuple[Any, str], tuple[Any, ...]]:
    """The merged target, computed from the shards without Spark: rows whose qty passes
    the filter, every shard's columns placed by name, NULL where a shard has none."""
    merged = {}
    for shard in SHARDS:
        names = [c.split()[0] for c in SHARDS[shard]]
        for row in mariadb.execute(f"SELECT * FROM {shard}", database=db):
            by_name = dict(zip(names, row, strict=True)) | {"source_table": shard}
            if by_name["qty"] % 7 != 3:
                merged[(row[0], shard)] = tuple(by_name.get(c) for c in COLUMNS)
    return merged


def run_script(mariadb: EmbeddedMariaDB, db: str, statements: list[str]) -> None:
    for statement in statements:
        mariadb.execute(statement, database=db)


def expected_evolved(
    mariadb: EmbeddedMariaDB, db: str, before: dict[tuple[Any, str], tuple[Any, ...]]
) -> dict[tuple[Any, str], tuple[Any, ...]]:
    """The merged target after ``DDL`` and ``LATER``, computed from the shards and the
    target ``before`` them: every column by name, shard_2's dropped note and renamed-away
    name as ``before`` had them in rows not written since (NULL in rows written since),
    its new label only in rows written after the rename."""
    merged = {}
    for shard, names in NOW.items():
        for row in mariadb.execute(f"SELECT * FROM {shard}", database=db):
            by_name = dict(zip(names, row, strict=True)) | {"source_table": shard}
            key = (row[0], shard)
            if by_name["qty"] % 7 == 3:
                continue  # shard_2's qty moved by 7: in the target before, in it now
            if shard == "shard_2":
                old = dict(zip(COLUMNS, before[key], strict=True))
                if row[0] not in AFTER_DROP:
                    by_name["note"] = old["note"]
                if row[0] not in AFTER_RENAME:
                    by_name["name"], by_name["label"] = old["name"], None
            merged[key] = tuple(by_name.get(c) for c in FINAL)
    return merged


def target_rows(found: list[Any]) -> dict[tuple[Any, str], tuple[Any, ...]]:
    keyed = {(r[0], r[3]): tuple(r) for r in found}
    assert len(keyed) == len(found), "duplicate keys in the merged target"
    return keyed


@pytest.mark.parametrize("sink", ["delta", "jdbc-postgres"])
def test_three_shards_merge_into_one_target_under_concurrent_writes(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    shards: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    block = sink_block(sink, postgres, pg_db, monkeypatch)
    path = pipeline_file(
        scratch,
        mariadb,
        f"{shards}.shard_[0-9]+",
        block,
        blocks=RULES.format(db=shards),
        extra_source="scan.newly-added-table.enabled: true",
    )
    definition = load_pipeline(path)
    run = prepare(definition, spark=spark)
    (target,) = run.targets
    assert target.table.columns == COLUMNS and target.table.key == ("id", "source_table")
    writer = ShardWriter(mariadb, shards, seed=len(sink))
    writer.start()

    def then() -> None:
        writer.stop()
        mariadb.execute("UPDATE shard_2 SET qty = 3 WHERE id = 2", database=shards)  # leaves
        mariadb.execute(  # enters (or is new)
            "INSERT INTO shard_3 VALUES (4, 4, 1) ON DUPLICATE KEY UPDATE qty = 4", database=shards
        )

    try:
        run_until_caught_up(run, mariadb, then)
    finally:
        writer.stop()

    if sink == "delta":
        frame = spark.read.format("delta").load(str(scratch / "lake" / shards / "merged"))
        types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
        assert types["id"] == "bigint" and types["price"] == "decimal(8,2)"
        detail = spark.sql(f"DESCRIBE DETAIL delta.`{scratch / 'lake' / shards / 'merged'}`")
        assert detail.first()["partitionColumns"] == ["source_table"]
        found = frame.select(*COLUMNS).collect()
    else:
        with postgres.connect(pg_db) as conn:
            found = conn.execute(f'SELECT {", ".join(COLUMNS)} FROM "{shards}".merged').fetchall()
    rows = target_rows(found)
    assert rows == expected(mariadb, shards)
    assert (2, "shard_2") not in rows and (4, "shard_3") in rows
    assert {k[1] for k in rows} == set(SHARDS)
    verdicts = verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    assert [(str(v.table), v.status) for v in verdicts] == [(f"{shards}.merged", "equal")]

    # then column changes of the shards, while it streams and across a restart
    run = prepare(definition, spark=spark)
    run_until_caught_up(run, mariadb, lambda: run_script(mariadb, shards, DDL))
    assert run.targets[0].table.columns == EVOLVED
    again = prepare(definition, spark=spark)  # a restart: the target as the changes left it
    assert again.targets[0].table.columns == EVOLVED
    run_until_caught_up(
        again, mariadb, lambda: [mariadb.execute(s, database=shards) for s in LATER]
    )
    if sink == "delta":
        frame = spark.read.format("delta").load(str(scratch / "lake" / shards / "merged"))
        assert frame.schema["qty"].dataType.simpleString() == "bigint"
    found = final_rows(spark, postgres, pg_db, scratch, shards, sink)
    assert list(again.targets[0].table.columns) == list(FINAL)
    assert [s.table.source.table for s in again.targets[0].sources][-1] == "shard_4"
    evolved = target_rows(found)
    assert evolved == expected_evolved(mariadb, shards, rows)
    assert evolved[(3, "shard_4")][-1] == "green" and (2, "shard_4") not in evolved

    # shard_2 read again on demand: its rows take their label, and keep the note and name
    # it lost (shard_1 still has a name: the kept columns are shard_2's own, not only
    # those no shard has)
    reread = prepare(definition, spark=spark)
    reread.start()
    try:
        assert main(["snapshot", str(path), "--table", f"{shards}.shard_2"]) == 0
        wait_read_again(reread, mariadb)
    finally:
        reread.stop()
    labels = dict(mariadb.execute("SELECT id, label FROM shard_2", database=shards))
    at = FINAL.index("label")
    for key, row in evolved.items():
        if key[1] == "shard_2":
            evolved[key] = (*row[:at], labels[key[0]], *row[at + 1 :])
    assert target_rows(final_rows(spark, postgres, pg_db, scratch, shards, sink)) == evolved
    assert sum(c.reread_rows for b in reread.batches for c in b.counts.values()) > 0


def final_rows(
    spark: Any, postgres: EmbeddedPostgres, pg_db: str, scratch: Path, db: str, sink: str
) -> list[Any]:
    """The merged target's rows, ``FINAL``'s columns."""
    if sink == "delta":
        frame = spark.read.format("delta").load(str(scratch / "lake" / db / "merged"))
        return list(frame.select(*FINAL).collect())
    with postgres.connect(pg_db) as conn:
        return list(conn.execute(f'SELECT {", ".join(FINAL)} FROM "{db}".merged').fetchall())


def test_an_expression_spark_rejects_names_the_rule_line(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    shards: str,
    scratch: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules = RULES.format(db=shards).replace(
        "\\*, __table_name__", "\\*, qty * nope, __table_name__"
    )
    path = pipeline_file(scratch, mariadb, f"{shards}.shard_[0-9]+", "type: console", blocks=rules)
    with pytest.raises(PipelineFileError) as info:
        prepare(load_pipeline(path), spark=spark)
    message = str(info.value)
    line = path.read_text().splitlines().index(f"  - source-table: {shards}.shard_[0-9]+") + 1
    assert f"{path}:{line}: transform of {shards}.shard_1: projection 'qty * nope'" in message
    assert "nope" in message and "UNRESOLVED_COLUMN" in message
    # validate analyses it the same way; the file alone passes
    assert main(["validate", str(path)]) == 2
    assert f"{path}:{line}: transform of {shards}.shard_1: projection" in capsys.readouterr().err
    assert main(["validate", str(path), "--offline"]) == 0
    path.write_text(path.read_text().replace("qty * nope, ", ""))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "source ok: 3 tables match" in out and "nothing was written" in out
    assert f"{shards}.shard_1, {shards}.shard_2, {shards}.shard_3 -> " in out, out
    # as a command, with a Spark session of its own: nothing left where it ran either
    before = sorted(p.name for p in scratch.iterdir())
    done = subprocess.run(
        [sys.executable, "-m", "sparkcdc.cli.main", "validate", str(path)],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "source ok: 3 tables match" in done.stdout, done.stderr
    assert sorted(p.name for p in scratch.iterdir()) == before


def test_a_one_part_sink_table_lands_in_the_sinks_default_schema(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    shards: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Flink CDC's ``sink-table: kafka_ods_orders`` (one part: the sink's default database
    or schema): into PostgreSQL with ``table-name: {database}.{table}``, the target is
    ``public.shard_one``, the connection's default schema, and holds the shard's rows
    after changes streamed to it."""
    block = sink_block("postgres", postgres, pg_db, monkeypatch)
    route = f"route:\n  - source-table: {shards}.shard_1\n    sink-table: shard_one\n"
    path = pipeline_file(scratch, mariadb, f"{shards}.shard_1", block, blocks=route)
    definition = load_pipeline(path)
    run = prepare(definition, spark=spark)
    (target,) = run.targets
    assert str(target.table.source) == "shard_one"

    def then() -> None:
        mariadb.execute("UPDATE shard_1 SET qty = qty + 1 WHERE id < 10", database=shards)
        mariadb.execute("DELETE FROM shard_1 WHERE id = 12", database=shards)

    run_until_caught_up(run, mariadb, then)
    rows = postgres.execute("SELECT id, name, qty FROM public.shard_one", dbname=pg_db)
    source = mariadb.execute("SELECT id, name, qty FROM shard_1", database=shards)
    assert sorted(rows) == sorted(tuple(r) for r in source)
    (verdict,) = verify_tables(spark, definition, run.sink, run.targets, run.probe.handle)
    assert verdict.status == "equal"

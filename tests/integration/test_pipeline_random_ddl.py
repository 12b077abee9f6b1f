"""Random DDL of every followed kind (column changes and TRUNCATE) interleaved with
random DML, during a table's snapshot and while it streams, into Delta and PostgreSQL, per
``schema.change.behavior``.

The expected target is computed here, independently of the product's code:

* ``evolve``: the target is the table (read
  from MariaDB at the end), column for column; truncates are applied, so this holds
  through them too; ``sparkcdc verify`` agrees;
* ``try_evolve`` into a PostgreSQL target that refuses some changes: a view on the target's
  column i1 makes PostgreSQL refuse to drop it (renames pass), and every run drops it
  last, after the other DDL and DML.
  The refused drop is taken as ``ignore`` takes it, the rest as under ``evolve``: the
  target is the table plus the kept column, which holds, per row, the dropped column's
  value as of the row's last write before the drop (NULL for writes after it; reads
  again after it leave it), by the lenient model below followed by the column's identity;
* ``lenient``: a model of the target. Every name the table ever had is a target column;
  a row's target values are its values at its last write (or at its snapshot read), with
  NULL in every name the table did not have then. A row's snapshot read can happen at any
  moment between its last write and the end of the snapshot, so for such rows any of
  those moments' shapes is accepted, and so are reads of it again at later such moments
  (a change re-reads the last chunks read), which leave the names the table lacks then
  as they were. A truncate is not applied: the rows it removed stay
  as they were (truncates come after the snapshot here: rows it removed before their
  snapshot read would never reach the target, and the model cannot know which).
  A column added with a default has the rows there filled in by the server without a
  binlog row: the pipeline reads them again, so each may hold the shape of any moment
  from its last write on.
* ``exception`` (its own test): the pipeline stops at the one DDL drawn, naming it, and
  the target is the table right before it (read from MariaDB then);
* ``ignore``: the lenient model with the target's first columns only: a row's values go
  by name into the names the table had at the start, NULL where the table has no such
  name at the row's write (dropped, renamed away); added columns never reach it.

Under ``lenient`` and ``ignore``, ``sparkcdc verify`` (which compares the columns a target
shares with its table) must say equal exactly when those columns hold what the table
holds: not after a truncate, nor where a name the table lost came back as a new column.

Each run draws a new seed, printed on failure; ``SPARKCDC_DDL_SEED`` replays one (the
same statements; the timing against the pipeline's batches still differs).
"""

from __future__ import annotations

import itertools
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import prepare
from tests.support.pipelines import (
    at_or_after,
    committed_offsets,
    master_position,
    pipeline_file,
    reads_done,
    sink_block,
    snapshot_done,
    wait_until,
)

ROWS = 1000
#: Behaviours whose target is the table (``try_evolve``: but for the change its target
#: refuses).
EVOLVING = ("evolve", "try_evolve")
STEPS = 40
#: Column names and the type each always has (a name added again gets its type again).
POOL = {**{f"i{n}": "INT" for n in range(1, 6)}, **{f"s{n}": "VARCHAR(8)" for n in range(1, 6)}}
WIDER = {"INT": "BIGINT", "VARCHAR(8)": "VARCHAR(32)"}


_IDENTS = itertools.count()


@dataclass
class Column:
    """A column of the table, by identity (a rename keeps it, a drop ends it)."""

    name: str
    kind: str
    ident: int = field(default_factory=lambda: next(_IDENTS))


@dataclass
class Model:
    """The table as the test changed it, with the history the lenient target needs."""

    columns: list[Column]
    #: row key -> (column identity -> value), the table's rows.
    rows: dict[int, dict[int, Any]] = field(default_factory=dict)
    #: (identity, name) of the columns after each DDL ("epochs"), oldest first.
    shapes: list[list[tuple[int, str]]] = field(default_factory=list)
    #: row key -> the epoch of its last write by the test (0: only the initial load).
    written: dict[int, int] = field(default_factory=dict)
    #: Every name the table ever had but the key's, in order of first appearance.
    names: list[str] = field(default_factory=list)
    #: row key -> its values when a truncate (not applied under lenient) removed it.
    kept: dict[int, dict[int, Any]] = field(default_factory=dict)
    #: Keys of rows there when a column was added with a default: the server fills it in
    #: without a binlog row, so the pipeline reads them again, at any later moment.
    reread: set[int] = field(default_factory=set)
    #: The column a view on the target protects (its target refuses to drop it), if any:
    #: dropped last, never widened (the target would refuse that too).
    protected: int | None = None
    #: Its name when the table dropped it: the target keeps it under that name.
    kept_name: str | None = None

    @property
    def epoch(self) -> int:
        return len(self.shapes) - 1

    def shape(self) -> None:
        self.shapes.append([(c.ident, c.name) for c in self.columns])
        for column in self.columns:
            if column.name != "id" and column.name not in self.names:
                self.names.append(column.name)

    def target_rows(self, key: int, epochs: range, names: list[str]) -> set[tuple[Any, ...]]:
        """The rows of ``key`` a target of columns ``names`` (lenient: every name the
        table had; ignore: its first ones) may hold after writes at some of ``epochs``, in
        order: the first sets every name (NULL where the table's shape then lacks it);
        a later one is the snapshot reading the row again (a chunk span after a change),
        which sets the names its shape has and leaves the others as the target has them."""
        values = self.rows[key] if key in self.rows else self.kept[key]
        states: set[tuple[Any, ...]] = set()
        for epoch in epochs:
            shape = {name: values.get(ident) for ident, name in self.shapes[epoch]}
            again = {
                tuple(shape.get(n, old) for n, old in zip(names, s, strict=True)) for s in states
            }
            states |= {tuple(shape.get(n) for n in names)} | again
        return {(key, *s) for s in states}

    def column_values(self, key: int, ident: int, epochs: range) -> set[Any]:
        """The values a target column that follows column ``ident`` by identity (renames
        applied) and keeps it once the table drops it may hold for ``key``, as
        :meth:`target_rows` does by name: the first write sets it (NULL if the table
        lacks the column then), a later read again sets it only if the table has it."""
        value = (self.rows[key] if key in self.rows else self.kept[key]).get(ident)
        states: set[Any] = set()
        for epoch in epochs:
            has = any(i == ident for i, _ in self.shapes[epoch])
            states = {value if has else s for s in states} | {value if has else None}
        return states

    def truncate(self) -> None:
        self.kept.update(self.rows)
        self.rows.clear()


def value(rng: random.Random, kind: str) -> Any:
    if rng.random() < 0.15:
        return None
    if kind in ("INT", "BIGINT"):
        return rng.randint(-1000, 1000)
    return "".join(rng.choices("abcxyz", k=rng.randint(0, 8)))


def ddl(
    rng: random.Random, model: Model, truncates: bool, wider: dict[str, str] = WIDER
) -> str | None:
    """A random followed ALTER TABLE (or a TRUNCATE, if ``truncates``; widenings of the
    types in ``wider``), applied to the model; None if none fits now."""
    if truncates and rng.random() < 0.12:
        model.truncate()
        return "TRUNCATE TABLE t"
    present = {c.name for c in model.columns}
    free = [n for n in POOL if n not in present]
    kind = rng.choice(["add", "add", "drop", "rename", "change", "widen"])
    if kind == "add" and free:
        name = rng.choice(free)
        column = Column(name, POOL[name])
        where = rng.choice(["", " FIRST", "after"])
        if where == "after":
            after = rng.choice(model.columns[1:] or model.columns[:1])
            where = f" AFTER {after.name}"
            model.columns.insert(model.columns.index(after) + 1, column)
        elif where == " FIRST":
            model.columns.insert(0, column)
        else:
            model.columns.append(column)
        default = value(rng, column.kind) if rng.random() < 0.4 else None
        if default is None:
            return f"ALTER TABLE t ADD COLUMN {name} {column.kind}{where}"
        for values in model.rows.values():
            values[column.ident] = default
        model.reread |= set(model.rows)
        literal = default if isinstance(default, int) else f"'{default}'"
        return f"ALTER TABLE t ADD COLUMN {name} {column.kind} DEFAULT {literal}{where}"
    others = [c for c in model.columns if c.name != "id"]
    if not others:
        return None
    column = rng.choice(others)
    if kind == "drop" and column.ident != model.protected:
        model.columns.remove(column)
        return f"ALTER TABLE t DROP COLUMN {column.name}"
    if kind in ("rename", "change"):
        names = [n for n in free if POOL[n] == POOL[column.name]]
        if not names:
            return None
        old, column.name = column.name, rng.choice(names)
        if kind == "rename":
            return f"ALTER TABLE t RENAME COLUMN {old} TO {column.name}"
        return f"ALTER TABLE t CHANGE {old} {column.name} {column.kind}"
    if kind == "widen" and column.kind in wider and column.ident != model.protected:
        column.kind = wider[column.kind]
        return f"ALTER TABLE t MODIFY {column.name} {column.kind}"
    return None


def epochs(model: Model, key: int, snapshot_end: int) -> range:
    """The epochs whose shapes a target row of ``key`` may have been written in: from its
    last write to the end of the snapshot (a snapshot read, or a read again of the last
    chunks read after a change), or to the end if the table was read again after an
    ALTER that filled in a default."""
    last = model.written[key]
    end = model.epoch if key in model.reread else max(last, snapshot_end)
    return range(last, end + 1)


def refuse_drops(postgres: EmbeddedPostgres, pg_db: str, db: str, model: Model) -> None:
    """A view on the PostgreSQL target's column i1 (once the pipeline created the target):
    PostgreSQL then refuses to drop the column (it follows renames)."""

    def created() -> bool:
        with postgres.connect(pg_db) as conn:
            return conn.execute("SELECT to_regclass(%s)", (f'"{db}".t',)).fetchone()[0] is not None

    wait_until(created, "the target")
    with postgres.connect(pg_db) as conn:
        conn.execute(f'CREATE VIEW "{db}".t_i1 AS SELECT id, i1 FROM "{db}".t')
    model.protected = next(c.ident for c in model.columns if c.name == "i1")


def dml(rng: random.Random, model: Model) -> tuple[str, tuple[Any, ...]]:
    """A random write of one row, applied to the model. An upsert that sets the values
    the row has is no write: the server changes nothing and logs nothing (in ROW format
    an unchanged row has no event), so the row keeps the epoch of its last real write."""
    key = rng.randint(1, ROWS + 300)
    others = [c for c in model.columns if c.name != "id"]
    if key in model.rows and rng.random() < 0.2:
        model.written[key] = model.epoch
        del model.rows[key]
        return "DELETE FROM t WHERE id = %s", (key,)
    values = {c.ident: value(rng, c.kind) for c in others}
    if key not in model.rows or any(model.rows[key].get(i) != v for i, v in values.items()):
        model.written[key] = model.epoch
        model.kept.pop(key, None)  # written again: the target row follows the table's
    if key in model.rows:
        model.rows[key].update(values)
    else:
        model.rows[key] = values
    names = ", ".join(c.name for c in others)
    sets = ", ".join(f"{c.name} = VALUES({c.name})" for c in others) or "id = id"
    marks = ", ".join(["%s"] * (len(others) + 1))
    return (
        f"INSERT INTO t (id{', ' if others else ''}{names}) VALUES ({marks}) "
        f"ON DUPLICATE KEY UPDATE {sets}",
        (key, *(values[c.ident] for c in others)),
    )


def created_table(rng: random.Random, mariadb: EmbeddedMariaDB, db: str) -> Model:
    """Tables t (ROWS random rows) and u (empty: the pipeline reads the envelope) in
    ``db``, and the model of t."""
    model = Model([Column("id", "INT"), Column("i1", "INT"), Column("s1", "VARCHAR(8)")])
    model.shape()
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, i1 INT, s1 VARCHAR(8))", database=db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY)", database=db)
    initial = []
    for key in range(1, ROWS + 1):
        i1, s1 = value(rng, "INT"), value(rng, "VARCHAR(8)")
        model.rows[key] = {model.columns[1].ident: i1, model.columns[2].ident: s1}
        model.written[key] = 0
        initial.append((key, i1, s1))
    with mariadb.connect(db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s)", initial)
    return model


def target_rows(
    spark: Any, sink: str, scratch: Path, postgres: EmbeddedPostgres, pg_db: str, db: str
) -> dict[str, dict[int, Any]]:
    """The target of t, as column name -> (key -> value)."""
    if sink == "delta":
        frame = spark.read.format("delta").load(str(scratch / "lake" / db / "t"))
        names, rows = frame.columns, [tuple(r) for r in frame.collect()]
    else:
        with postgres.connect(pg_db) as conn:
            cursor = conn.execute(f'SELECT * FROM "{db}".t')
            names = [d.name for d in cursor.description]
            rows = [tuple(r) for r in cursor.fetchall()]
    key = names.index("id")
    return {n: {r[key]: r[i] for r in rows} for i, n in enumerate(names)}


def source_rows(mariadb: EmbeddedMariaDB, db: str) -> dict[str, dict[int, Any]]:
    names = [r[0] for r in mariadb.execute("SHOW COLUMNS FROM t", database=db)]
    rows = mariadb.execute("SELECT * FROM t", database=db)
    key = names.index("id")
    return {n: {r[key]: r[i] for r in rows} for i, n in enumerate(names)}


@pytest.mark.parametrize(
    ("behavior", "sink"),
    [
        ("evolve", "delta"),
        ("evolve", "jdbc-postgres"),
        # where the sink takes every change try_evolve is evolve (the same code path):
        # its own case is a target that refuses one
        ("try_evolve", "jdbc-postgres-refusing"),
        ("lenient", "delta"),
        ("lenient", "jdbc-postgres"),
        ("ignore", "delta"),
        ("ignore", "jdbc-postgres"),
    ],
)
def test_random_ddl_and_dml_during_the_snapshot_and_while_streaming(
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
    seed = int(os.environ.get("SPARKCDC_DDL_SEED", random.randrange(10**6)))
    rng = random.Random(seed)
    model = created_table(rng, mariadb, mysql_db)
    block = sink_block(sink, postgres, pg_db, monkeypatch)
    path = pipeline_file(
        scratch,
        mariadb,
        f"{mysql_db}.(t|u)",
        block,
        max_rows=150,
        trigger="200ms",
        blocks=f"  schema.change.behavior: {behavior}\n",
    )
    checkpoint = scratch / "checkpoint"
    run = prepare(load_pipeline(path), spark=spark)
    run.start()
    # the stream's first offset takes the columns as they are then: a DDL before it is
    # no change the target could see (the model would expect the names it passed by)
    wait_until(lambda: (checkpoint / "offsets" / "0").exists() or not run.active, "a batch")
    if sink.endswith("-refusing"):
        refuse_drops(postgres, pg_db, mysql_db, model)
    statements: list[str] = []
    snapshot_end: int | None = None  # the last epoch a snapshot read can have
    try:
        for _ in range(STEPS):
            assert run.active, f"the pipeline stopped: {run.query.exception()} ({seed=})"
            if snapshot_end is None and any(
                snapshot_done(o) for o in committed_offsets(checkpoint)
            ):
                snapshot_end = model.epoch
            if rng.random() < 0.3:
                # lenient and ignore keep what a truncate removed: only once every row was read
                truncates = behavior in EVOLVING or snapshot_end is not None
                # ignore keeps the target's types: a widening stops it, by definition
                statement = ddl(rng, model, truncates, WIDER if behavior != "ignore" else {})
                if statement is not None:
                    mariadb.execute(statement, database=mysql_db)
                    statements.append(statement)
                    model.shape()
                    continue
            for _ in range(rng.randint(1, 5)):
                sql, args = dml(rng, model)
                mariadb.execute(sql, args, database=mysql_db)
            time.sleep(rng.uniform(0.0, 0.3))
        protected = [c for c in model.columns if c.ident == model.protected]
        if protected:  # the drop the target refuses, once the rows hold values
            model.columns.remove(protected[0])
            model.kept_name = protected[0].name
            statement = f"ALTER TABLE t DROP COLUMN {model.kept_name}"
            mariadb.execute(statement, database=mysql_db)
            statements.append(statement)
            model.shape()
            for _ in range(5):
                mariadb.execute(*dml(rng, model), database=mysql_db)
        file, pos = master_position(mariadb)

        def caught_up() -> bool:
            assert run.active, f"the pipeline stopped: {run.query.exception()} ({seed=})"
            offsets = committed_offsets(checkpoint)
            # a column added with a default re-reads the table: wait for all of the re-read
            return any(at_or_after(o, file, pos) and reads_done(o) for o in offsets)

        wait_until(caught_up, "the pipeline to catch up")
    finally:
        run.stop()
    end = model.epoch if snapshot_end is None else snapshot_end
    found = target_rows(spark, sink, scratch, postgres, pg_db, mysql_db)
    story = f"seed {seed}, {behavior}, {sink}; DDL: {statements}"
    if behavior in EVOLVING:
        expected = source_rows(mariadb, mysql_db)
        if model.kept_name is not None and model.protected is not None:
            # try_evolve took the refused drop as ignore does: the column stays, and holds
            # the dropped column's values where the rows were last written before the drop
            assert model.kept_name not in expected, story
            for key, got in found.pop(model.kept_name).items():
                accepted = model.column_values(key, model.protected, epochs(model, key, end))
                assert got in accepted, f"kept column, row {key}: {got} not in {accepted}; {story}"
        assert list(found) == list(expected) or sink != "delta", story
        assert sorted(found) == sorted(expected), story
        for name, column in expected.items():
            assert found[name] == column, f"column {name} differs; {story}"
        verdicts = {v.table.table: v.status for v in verify_pipeline(load_pipeline(path), spark)}
        # u (no rows, ever) has a target only where the sink writes one for nothing
        assert verdicts["t"] == "equal" and verdicts["u"] in ("equal", "empty"), story
        return
    kept = model.names if behavior == "lenient" else ["i1", "s1"]
    assert sorted(found) == sorted(["id", *kept]), story
    names = ["id", *kept]
    for key in [*model.rows, *model.kept]:
        row = tuple(found[n].get(key) for n in names)
        accepted = model.target_rows(key, epochs(model, key, end), kept)
        assert row in accepted, f"row {key}: {row} not in {sorted(accepted, key=str)}; {story}"
    assert set(found["id"]) == set(model.rows) | set(model.kept), story
    # verify compares the columns the target shares with the table: equal exactly when
    # they hold what the table holds (not after a truncate, nor where a name came back)
    table = source_rows(mariadb, mysql_db)
    agrees = all(found[name] == table[name] for name in found if name in table)
    verdicts = {v.table.table: v.status for v in verify_pipeline(load_pipeline(path), spark)}
    assert verdicts["t"] == ("equal" if agrees else "different"), story


@pytest.mark.parametrize("sink", ["delta", "jdbc-postgres"])
def test_random_ddl_under_exception_stops_the_pipeline_right_before_it(
    spark: Any,
    mariadb: EmbeddedMariaDB,
    mysql_db: str,
    postgres: EmbeddedPostgres,
    pg_db: str,
    scratch: Path,
    sink: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``exception``: random DML, then one random DDL (during the snapshot or once it is
    over), then more DML. The pipeline stops naming the statement, and the target holds
    the table as it was right before it: every row of it once the snapshot was over, and
    while the snapshot ran, the rows read so far, each with its values at the DDL."""
    seed = int(os.environ.get("SPARKCDC_DDL_SEED", random.randrange(10**6)))
    rng = random.Random(seed)
    model = created_table(rng, mariadb, mysql_db)
    path = pipeline_file(
        scratch,
        mariadb,
        f"{mysql_db}.(t|u)",
        sink_block(sink, postgres, pg_db, monkeypatch),
        max_rows=150,
        trigger="200ms",
        blocks="  schema.change.behavior: exception\n",
    )
    checkpoint = scratch / "checkpoint"
    run = prepare(load_pipeline(path), spark=spark)
    run.start()
    wait_until(lambda: (checkpoint / "offsets" / "0").exists() or not run.active, "a batch")
    after_snapshot = rng.random() < 0.5
    try:
        for _ in range(rng.randint(1, STEPS)):
            assert run.active, f"the pipeline stopped early: {run.query.exception()} ({seed=})"
            for _ in range(rng.randint(1, 5)):
                mariadb.execute(*dml(rng, model), database=mysql_db)
            time.sleep(rng.uniform(0.0, 0.3))
        if after_snapshot:
            wait_until(
                lambda: (
                    any(snapshot_done(o) for o in committed_offsets(checkpoint)) or not run.active
                ),
                "the snapshot",
            )
        assert run.active, f"the pipeline stopped early: {run.query.exception()} ({seed=})"
        before = source_rows(mariadb, mysql_db)
        statement = None
        while statement is None:
            # a longer VARCHAR is the same Spark type: the target does not change, so
            # exception lets it pass (docs/schema-evolution.md)
            statement = ddl(rng, model, truncates=True, wider={"INT": "BIGINT"})
        mariadb.execute(statement, database=mysql_db)
        for _ in range(rng.randint(1, 10)):
            mariadb.execute(*dml(rng, model), database=mysql_db)
        wait_until(lambda: not run.active, f"the pipeline to stop at {statement} ({seed=})")
    finally:
        run.stop()
    story = f"seed {seed}, {sink}, DDL: {statement}"
    error = str(run.query.exception())
    assert statement in error and "exception" in error, f"{error}; {story}"
    found = target_rows(spark, sink, scratch, postgres, pg_db, mysql_db)
    assert sorted(found) == sorted(before), story
    if after_snapshot:
        assert found == before, story
    else:
        assert set(found["id"]) <= set(before["id"]), story
        for name, column in found.items():
            for key, got in column.items():
                assert got == before[name][key], f"{name} of row {key} differs; {story}"

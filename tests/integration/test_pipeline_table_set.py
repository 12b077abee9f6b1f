"""``scan.newly-added-table.enabled`` in a MariaDB -> Delta pipeline: tables added to the
pattern between restarts (one that existed all along, one created while the pipeline was
stopped) are snapshotted while the captured table continues from the checkpoint without
a second snapshot; a table taken out of the pattern is forgotten and its target kept."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import PipelineRun, prepare
from sparkcdc.verify.run import verify_tables
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import pipeline_file, run_until_caught_up, run_while_writing

__all__ = ["orders"]  # the fixture, re-used

ENABLED = "scan.newly-added-table.enabled: true"


def run(spark: Any, scratch: Path, mariadb: EmbeddedMariaDB, tables: str) -> PipelineRun:
    path = pipeline_file(scratch, mariadb, tables, "type: delta\npath: lake", extra_source=ENABLED)
    return prepare(load_pipeline(path), spark=spark)


def delta(spark: Any, scratch: Path, db: str, table: str) -> dict[Any, tuple[Any, ...]]:
    rows = spark.read.format("delta").load(str(scratch / "lake" / db / table)).collect()
    return {r[0]: tuple(r) for r in rows}


def snapshot_rows(pipeline: PipelineRun, table: str) -> int:
    return sum(
        c.snapshot_rows for b in pipeline.batches for t, c in b.counts.items() if t.table == table
    )


def test_tables_added_and_removed_between_restarts(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    first = run(spark, scratch, mariadb, f"{orders}.orders")
    run_until_caught_up(first, mariadb, lambda: None)
    assert snapshot_rows(first, "orders") == 2000

    # while stopped: the captured table changes, the other table gets rows, a table appears
    mariadb.execute("UPDATE orders SET qty = qty + 100 WHERE id < 300", database=orders)
    mariadb.execute("INSERT INTO audit (note) VALUES ('a'), ('b'), ('c')", database=orders)
    mariadb.execute("CREATE TABLE items (id INT PRIMARY KEY, sku TEXT)", database=orders)
    mariadb.execute("INSERT INTO items VALUES (1, 'x'), (2, 'y')", database=orders)

    second = run(spark, scratch, mariadb, f"{orders}.(orders|audit|items)")
    writer = mariadb_writer(mariadb, orders, seed=3, key_space=7000)
    writer.limit = 600
    run_while_writing(second, mariadb, writer, lambda: None)
    assert snapshot_rows(second, "orders") == 0, "the captured table was snapshotted again"
    assert snapshot_rows(second, "items") == 2 and snapshot_rows(second, "audit") > 0
    for table in ("orders", "audit", "items"):
        assert delta(spark, scratch, orders, table) == table_state(mariadb, orders, table), table
    verdicts = verify_tables(
        spark, second.definition, second.sink, second.targets, second.probe.handle
    )
    assert [v.status for v in verdicts] == ["equal"] * 3

    # orders leaves the pattern: forgotten (its target keeps its rows), the others go on
    kept = table_state(mariadb, orders, "orders")
    third = run(spark, scratch, mariadb, f"{orders}.(audit|items)")

    def change() -> None:
        mariadb.execute("DELETE FROM orders", database=orders)
        mariadb.execute("INSERT INTO items VALUES (3, 'z')", database=orders)

    run_until_caught_up(third, mariadb, change)
    assert delta(spark, scratch, orders, "orders") == kept
    assert delta(spark, scratch, orders, "items") == table_state(mariadb, orders, "items")
    assert snapshot_rows(third, "items") == 0


def test_tables_created_while_running_are_captured_without_a_restart(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    pipeline = run(spark, scratch, mariadb, f"{orders}.(orders|audit|items.*)")
    query = None

    def create_tables() -> None:
        nonlocal query
        query = pipeline.query
        execute = partial(mariadb.execute, database=orders)
        execute("CREATE TABLE items (id INT PRIMARY KEY, sku TEXT, qty INT)")
        execute("INSERT INTO items VALUES (1, 'x', 1), (2, 'y', 2), (3, 'z', 3)")
        execute("UPDATE orders SET qty = qty + 1 WHERE id < 50")
        execute("INSERT INTO audit (note) VALUES ('created items')")
        # CREATE ... SELECT: the statement and its rows share one transaction
        execute("CREATE TABLE items_copy (PRIMARY KEY (id)) SELECT id, sku FROM items")
        execute("UPDATE items SET qty = 20 WHERE id = 2")
        execute("DELETE FROM items WHERE id = 1")
        execute("INSERT INTO items_copy VALUES (10, 'ten')")
        execute("CREATE TABLE not_captured (id INT PRIMARY KEY)")  # outside the pattern
        execute("INSERT INTO not_captured VALUES (1)")
        # a shadow table swapped in (gh-ost's cut-over): the new name comes with a RENAME
        execute("CREATE TABLE _items_gho (id INT PRIMARY KEY, label TEXT)")
        execute("INSERT INTO _items_gho VALUES (7, 'seven')")
        execute("RENAME TABLE _items_gho TO items_swapped")
        execute("INSERT INTO items_swapped VALUES (8, 'eight')")

    run_until_caught_up(pipeline, mariadb, create_tables)
    assert pipeline.query is query, "the pipeline restarted its query"
    for table in ("orders", "audit", "items", "items_copy", "items_swapped"):
        assert delta(spark, scratch, orders, table) == table_state(mariadb, orders, table), table
    assert not (scratch / "lake" / orders / "not_captured").exists()
    assert snapshot_rows(pipeline, "orders") == 2000, "orders was snapshotted again"
    verdicts = verify_tables(
        spark, pipeline.definition, pipeline.sink, pipeline.targets, pipeline.probe.handle
    )
    assert {v.table.table: v.status for v in verdicts} == dict.fromkeys(
        ("audit", "items", "items_copy", "items_swapped", "orders"), "equal"
    )

    # a restart continues the tables added while running from the checkpoint
    again = run(spark, scratch, mariadb, f"{orders}.(orders|audit|items.*)")
    run_until_caught_up(
        again,
        mariadb,
        lambda: mariadb.execute("UPDATE items_copy SET sku = 'TEN' WHERE id = 10", database=orders),
    )
    assert delta(spark, scratch, orders, "items_copy") == table_state(mariadb, orders, "items_copy")
    assert sum(snapshot_rows(again, t) for t in ("items", "items_copy", "items_swapped")) == 0

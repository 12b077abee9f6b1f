"""``scan.newly-added-table.enabled`` in a MariaDB -> Delta pipeline: tables added to the
pattern between restarts (one that existed all along, one created while the pipeline was
stopped) are snapshotted while the captured table continues from the checkpoint without
a second snapshot; a table taken out of the pattern is forgotten and its target kept."""

from __future__ import annotations

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
    verdicts = verify_tables(spark, second.definition, second.sink, second.targets)
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

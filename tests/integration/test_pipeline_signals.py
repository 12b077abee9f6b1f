"""Re-reads on demand in a MariaDB -> Delta pipeline: a damaged target is repaired by
``sparkcdc snapshot`` (a signal in the pipeline's signal file) while the log keeps flowing,
for a key range and then the whole table under random concurrent writes; the signal is
executed once, not again by the restart that follows (docs/signals.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sparkcdc.cli.main import main
from sparkcdc.core.identifiers import quoted
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.runner import PipelineRun, prepare
from sparkcdc.verify.run import verify_tables
from tests.integration.test_mysql_source import orders
from tests.support.mariadb_writes import mariadb_writer, table_state
from tests.support.pipelines import pipeline_file, run_until_caught_up, wait_read_again

__all__ = ["orders"]  # the fixture, re-used


def delta(spark: Any, path: Path) -> dict[Any, tuple[Any, ...]]:
    return {r[0]: tuple(r) for r in spark.read.format("delta").load(str(path)).collect()}


def reread_rows(run: PipelineRun) -> int:
    return sum(c.reread_rows for b in run.batches for c in b.counts.values())


def test_a_damaged_target_is_read_again_on_demand_once(
    spark: Any, mariadb: EmbeddedMariaDB, orders: str, scratch: Path
) -> None:
    path = pipeline_file(
        scratch, mariadb, f"{orders}.orders", "type: delta\npath: lake", max_rows=2000
    )
    target = scratch / "lake" / orders / "orders"

    def run() -> PipelineRun:
        return prepare(load_pipeline(path), spark=spark)

    run_until_caught_up(run(), mariadb, lambda: None)
    assert delta(spark, target) == table_state(mariadb, orders, "orders")

    # the target is damaged behind the pipeline's back: rows lost, values wrong
    table = f"delta.{quoted(str(target))}"
    spark.sql(f"DELETE FROM {table} WHERE id < 300 OR id >= 5700")
    spark.sql(f"UPDATE {table} SET qty = -1 WHERE id >= 1500 AND id < 1800")

    # while the pipeline runs: a key range (ids below 3000 come back, the damage above
    # stays), then the whole table under random writes (key moves, deletes, inserts)
    running = run()
    running.start()
    try:
        assert main(["snapshot", str(path), "--table", f"{orders}.orders", "--to", "3000"]) == 0
        wait_read_again(running, mariadb)
        source, copy = table_state(mariadb, orders, "orders"), delta(spark, target)
        assert {k: r for k, r in copy.items() if k < 3000} == {
            k: r for k, r in source.items() if k < 3000
        }
        assert not [k for k in copy if k >= 5700] and [k for k in source if k >= 5700]
        assert reread_rows(running) == 1000  # ids 0, 3, ..., 2997, each once

        writer = mariadb_writer(mariadb, orders, seed=11, key_space=7000)
        writer.limit = 1000
        writer.start()
        try:
            assert main(["snapshot", str(path), "--table", f"{orders}.orders", "--id", "all"]) == 0
            wait_read_again(running, mariadb, writer)
        finally:
            writer.stop()
    finally:
        running.stop()
    assert writer.transactions > 0
    assert delta(spark, target) == table_state(mariadb, orders, "orders")
    verdicts = verify_tables(
        spark, running.definition, running.sink, running.targets, running.probe.handle
    )
    assert [v.status for v in verdicts] == ["equal"]
    lines = running.definition.signal_file.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["execute-snapshot"] * 2

    # a restart from the checkpoint does not execute either signal again
    restarted = run()
    run_until_caught_up(
        restarted,
        mariadb,
        lambda: mariadb.execute("UPDATE orders SET qty = 7 WHERE id = 3", database=orders),
    )
    assert reread_rows(restarted) == 0
    assert delta(spark, target) == table_state(mariadb, orders, "orders")

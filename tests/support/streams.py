"""Running a source stream in tests (``mysql-cdc`` unless told): availableNow into
foreachBatch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_available_now(
    spark: Any,
    options: dict[str, str],
    checkpoint: Path,
    each: Callable[[Any, int], None],
    format: str = "mysql-cdc",
) -> None:
    """Run the stream until it has caught up (Trigger.AvailableNow); raise its failure."""
    query = (
        spark.readStream.format(format)
        .options(**options)
        .load()
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(600)
    if query.exception():
        raise query.exception()


def collect_stream(spark: Any, options: dict[str, str], checkpoint: Path) -> list[dict[str, Any]]:
    """Every row the stream emits until it has caught up."""
    rows: list[dict[str, Any]] = []

    def each(batch: Any, _: int) -> None:
        rows.extend(r.asDict() for r in batch.collect())

    run_available_now(spark, options, checkpoint, each)
    return rows

"""A stand-alone streaming driver for restart tests: run it, SIGKILL it, run it again.

Usage: python -m tests.support.cdc_driver FORMAT OPTIONS_JSON CHECKPOINT OUT_DIR MODE
(MODE: stream or available-now)

Each micro-batch is written to OUT_DIR/batch_<id>.parquet atomically (temp file + rename),
so a batch Spark replays after a crash replaces its earlier file: an idempotent sink.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def main() -> None:
    source_format, options = sys.argv[1], json.loads(sys.argv[2])
    from sparkcdc.spark.session import local_session

    spark = local_session("sparkcdc-restart-test")
    drive(spark, source_format, options, sys.argv[3], Path(sys.argv[4]), sys.argv[5])


def drive(
    spark: Any, source_format: str, options: dict[str, str], checkpoint: str, out: Path, mode: str
) -> None:
    """Run the stream into OUT_DIR until it ends (available-now) or the process is killed.
    Tests call it in their own session for the last, catching-up run: a warm JVM."""
    out.mkdir(parents=True, exist_ok=True)

    import pyarrow.parquet as pq

    def each(batch: Any, batch_id: int) -> None:
        table = batch.toArrow()
        tmp = out / f".batch_{batch_id}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, out / f"batch_{batch_id:06d}.parquet")

    writer = (
        spark.readStream.format(source_format)
        .options(**options)
        .load()
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", checkpoint)
    )
    if mode == "available-now":
        query = writer.trigger(availableNow=True).start()
    else:
        query = writer.trigger(processingTime="500 milliseconds").start()
    query.awaitTermination()
    if query.exception():
        raise SystemExit(f"query failed: {query.exception()}")


if __name__ == "__main__":
    main()

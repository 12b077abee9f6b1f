"""What one streaming batch costs the Delta sink, as the target grows.

    .venv/bin/python -m benchmarks.delta_merge [--sizes 1000000,4000000] [--changes 100]
                                              [--rounds 5] [-o deletion-vectors=false]

No database: this measures the sink alone. For each size, a target is made the way a
pipeline's snapshot makes it (``DeltaSink.open``, then appends of ``--append-rows`` rows
with ascending keys, two files each: the layout of snapshot batches), then per round three
batches of ``--changes`` changes go through ``DeltaSink.write`` (a MERGE each):

- ``tail inserts``: new keys above the table's last (an AUTO_INCREMENT table's inserts);
- ``hot updates``: updates of keys among the newest 1 % of rows (recent rows change most);
- ``random updates``: updates of keys anywhere in the table.

The baseline of the same run is a plain Delta append of the same number of rows (what a
commit costs at all). Besides times (median of the rounds) it prints, from the last
MERGE's commit, how long it scanned for the files to touch, how many files it rewrote and
how many rows it copied (rewrote unchanged): the figures that say whether the cost follows
the batch or the table.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import print_kv, spark_session
from sparkcdc.core.table import TableId
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.write_plan import plan_of

TABLE = TableId("bench", "orders")
#: The batches' pipeline id; a target the sink creates for it is marked as its own.
PIPELINE = "bench-merge"


def orders_schema() -> Any:
    from pyspark.sql.types import (
        DecimalType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    return StructType(
        [
            StructField("id", LongType(), False),
            StructField("order_time", TimestampType(), False),
            StructField("quantity", IntegerType(), False),
            StructField("product_id", IntegerType(), False),
            StructField("price", DecimalType(10, 2), False),
            StructField("purchaser", StringType(), False),
        ]
    )


def orders_rows(spark: Any, ids: Any, version: int) -> Any:
    """The orders columns for a DataFrame of ``id``s (values derived from the id)."""
    from pyspark.sql import functions as F

    return ids.select(
        F.col("id").cast("long").alias("id"),
        F.timestamp_seconds(F.lit(1_577_836_800) + F.col("id") * 7919 % 126_230_400).alias(
            "order_time"
        ),
        (F.lit(1) + F.col("id") % 10 + F.lit(version % 7)).cast("int").alias("quantity"),
        (F.lit(100) + F.col("id") % 5000).cast("int").alias("product_id"),
        (F.col("id") * 37 % 1_000_000 / 100).cast("decimal(10,2)").alias("price"),
        F.concat(F.lit("purchaser-"), (F.col("id") * 13 % 100_000).cast("string")).alias(
            "purchaser"
        ),
    )


def as_changes(rows: Any, change_type: str, batch_id: int) -> Any:
    """``rows`` as changes of ``change_type`` (the change columns a batch carries)."""
    from pyspark.sql import functions as F

    return rows.select(
        "*",
        F.lit(change_type).alias("_change_type"),
        F.lit(1_000_000 + batch_id).cast("long").alias("_commit_version"),
        F.current_timestamp().alias("_commit_timestamp"),
    )


class Target:
    """One target table of ``size`` rows and the batches written into it."""

    def __init__(
        self,
        spark: Any,
        folder: Path,
        size: int,
        append_rows: int,
        options: dict[str, str],
        pipeline_id: str | None = None,
    ) -> None:
        self.spark = spark
        self.size = size
        self.next_id = size + 1
        self.batch_id = 0
        self.sink = DeltaSink(
            DeltaSinkConfig.from_options(
                {"path": str(folder), "table-name": f"t{size}", **options}
            ),
            pipeline_id,
        )
        self.table = SinkTable(TABLE, orders_schema(), ("id",))
        self.sink.open(spark, [self.table])
        self.path = self.sink.target_path(TABLE)
        started = time.perf_counter()
        for first in range(1, size + 1, append_rows):
            last = min(size, first + append_rows - 1)
            ids = spark.range(first, last + 1, numPartitions=2)
            rows = orders_rows(spark, ids, 0)
            if not self.sink.upsert:  # a history: its rows are changes
                rows = as_changes(rows, "insert", 0)
            rows.write.format("delta").mode("append").save(self.path)
        self.load_seconds = time.perf_counter() - started

    def write(self, ids: list[int], change_type: str) -> float:
        """One batch of ``change_type`` changes of ``ids`` through the sink; its seconds."""

        self.batch_id += 1
        frame = self.spark.createDataFrame([(i,) for i in ids], "id long")
        rows = as_changes(orders_rows(self.spark, frame, self.batch_id), change_type, self.batch_id)
        rows = rows.cache()
        rows.count()
        batch = plan_of(
            pipeline=PIPELINE,
            batch_id=self.batch_id,
            changes={TABLE: rows},
            rows={TABLE: len(ids)},
        )
        started = time.perf_counter()
        self.sink.write(batch)
        seconds = time.perf_counter() - started
        rows.unpersist()
        return seconds

    def last_merge(self) -> dict[str, str]:
        """operationMetrics of the table's last commit."""
        (metrics,) = (
            self.spark.sql(f"DESCRIBE HISTORY delta.`{self.path}` LIMIT 1")
            .select("operationMetrics")
            .first()
        )
        return dict(metrics or {})

    def files(self) -> int:
        return int(self.spark.sql(f"DESCRIBE DETAIL delta.`{self.path}`").first()["numFiles"])


def append_baseline(spark: Any, folder: Path, changes: int, rounds: int) -> float:
    """Median seconds of a plain Delta append of ``changes`` rows (a commit's floor)."""
    path = str(folder / "append-baseline")
    times = []
    for round_ in range(rounds + 1):
        frame = spark.createDataFrame([(i,) for i in range(changes)], "id long")
        rows = orders_rows(spark, frame, round_).cache()
        rows.count()
        started = time.perf_counter()
        rows.write.format("delta").mode("append").save(path)
        if round_:  # the first creates the table
            times.append(time.perf_counter() - started)
        rows.unpersist()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,4000000")
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--append-rows", type=int, default=80_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--history",
        action="store_true",
        help="history targets ('changelog-mode: append'): appends with and without "
        "Delta transaction ids instead of MERGEs",
    )
    parser.add_argument(
        "-o",
        dest="options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a delta sink option, e.g. -o deletion-vectors=false",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    options = dict(o.split("=", 1) for o in args.options)

    spark, _ = spark_session(args.cores)
    spark.sparkContext.setLogLevel("ERROR")
    pick = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="sparkcdc-merge-bench-") as tmp:
        folder = Path(tmp)
        baseline = append_baseline(spark, folder, args.changes, args.rounds)
        print_kv(
            f"Baseline: plain Delta append of {args.changes} rows",
            [("median seconds", f"{baseline:.3f}")],
        )
        for size in sizes:
            if args.history:
                rows = measure_history(spark, folder, size, args, options, baseline)
                print_kv(
                    f"History target of {size:,} rows; batches of {args.changes} changes "
                    f"appended, median of {args.rounds}",
                    rows,
                )
                continue
            target = Target(spark, folder, size, args.append_rows, options)
            rows = measure(target, pick, args.changes, args.rounds, baseline)
            rows.append(("target files after", str(target.files())))
            print_kv(
                f"Target of {size:,} rows (loaded in {target.load_seconds:.1f} s); "
                f"batches of {args.changes} changes, median of {args.rounds}",
                rows,
            )
    spark.stop()


def measure(
    target: Target, pick: random.Random, changes: int, rounds: int, baseline: float
) -> list[tuple[str, str]]:
    """Rounds of the three workloads on ``target``: one report line per workload."""
    size = target.size
    kinds: dict[str, tuple[Callable[[], list[int]], str]] = {
        "tail inserts": (lambda: target_tail(target, changes), "insert"),
        "hot updates": (
            lambda: pick.sample(range(max(1, size - size // 100), size + 1), changes),
            "update_postimage",
        ),
        "random updates": (lambda: pick.sample(range(1, size + 1), changes), "update_postimage"),
    }
    times: dict[str, list[float]] = {k: [] for k in kinds}
    metrics: dict[str, dict[str, str]] = {}
    target.write(target_tail(target, changes), "insert")  # warm-up
    for _ in range(rounds):
        for kind, (ids, change_type) in kinds.items():
            times[kind].append(target.write(ids(), change_type))
            metrics[kind] = target.last_merge()
    rows = []
    for kind in kinds:
        median = statistics.median(times[kind])
        m = metrics[kind]
        rows.append(
            (
                kind,
                f"{median:.3f} s ({median / baseline:.1f}x append) · scan "
                f"{m.get('scanTimeMs', '?')} ms · files rewritten "
                f"{m.get('numTargetFilesRemoved', '?')} · rows copied "
                f"{m.get('numTargetRowsCopied', '?')}",
            )
        )
    return rows


def measure_history(
    spark: Any,
    folder: Path,
    size: int,
    args: argparse.Namespace,
    options: dict[str, str],
    baseline: float,
) -> list[tuple[str, str]]:
    """Batches appended to two history targets of ``size`` rows, alternated: one the sink
    created for the pipeline (its appends carry no transaction id; a replay is told from
    the pipeline's commits) and one it did not (Delta's ``txnAppId``/``txnVersion``)."""
    history = {**options, "changelog-mode": "append"}
    targets = {
        "own target, no transaction id": Target(
            spark, folder / "own", size, args.append_rows, history, PIPELINE
        ),
        "other target, transaction ids": Target(
            spark, folder / "ids", size, args.append_rows, history
        ),
    }
    times: dict[str, list[float]] = {k: [] for k in targets}
    for target in targets.values():
        target.write(target_tail(target, args.changes), "insert")  # warm-up
    for round_ in range(args.rounds):
        order = list(targets.items())
        for kind, target in order if round_ % 2 else order[::-1]:
            times[kind].append(target.write(target_tail(target, args.changes), "insert"))
    rows = []
    for kind, seconds in times.items():
        median = statistics.median(seconds)
        rows.append((kind, f"{median:.3f} s ({median / baseline:.1f}x plain append)"))
    return rows


def target_tail(target: Target, count: int) -> list[int]:
    ids = list(range(target.next_id, target.next_id + count))
    target.next_id += count
    return ids


if __name__ == "__main__":
    main()

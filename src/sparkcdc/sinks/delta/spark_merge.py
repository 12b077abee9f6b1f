"""Spark's Delta MERGE of a batch's last change per key into one target (``writer:
spark``), bounded by the batch's keys (sinks/delta/pruning.py).

A small target is rewritten rather than given deletion vectors: writing them costs a MERGE
~1.2 s more (four more SQL executions) whatever the table's size, while rewriting every
file of a table under :data:`REWRITE_BELOW_BYTES` costs less (benchmarks/delta_merge.py,
docs/pipelines.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sparkcdc.core.changes import UNCHANGED
from sparkcdc.core.identifiers import quoted, sql_string
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta.pruning import key_bounds
from sparkcdc.sinks.reduce import DELETED, REREAD

log = logging.getLogger(__name__)

_MERGE_DELETION_VECTORS = "spark.databricks.delta.merge.deletionVectors.persistent"
#: A target smaller than this is rewritten by a MERGE (copy-on-write) even where it has
#: deletion vectors.
REWRITE_BELOW_BYTES = 4 * 1024 * 1024


def spark_merge(
    spark: Any,
    path: str,
    table: SinkTable,
    changes: Any,
    last: Any,
    kept: tuple[tuple[str, ...], ...],
) -> None:
    """Spark's MERGE of ``last`` (each key's last change; ``changes`` bound the keys) into
    the Delta table at ``path``. The caller sets the commit's transaction id."""
    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    matches = F.expr(" AND ".join(f"t.{quoted(k)} <=> s.{quoted(k)}" for k in table.key))
    small = size_in_bytes(spark, path) < REWRITE_BELOW_BYTES
    if not small:  # a small target's few files are read whole: a bound spares nothing
        first = table.key[0]
        bounds = key_bounds(changes, first, table.schema[first].dataType)
        if bounds is not None:
            matches = matches & bounds
    values: dict[str, Any] = {quoted(c): f"s.{quoted(c)}" for c in table.columns}
    updates = values
    if UNCHANGED in last.columns:  # absent values: the target keeps its own
        updates = {
            quoted(c): kept_if_absent(c, "s", "t") if c not in table.key else value
            for c, value in zip(table.columns, values.values(), strict=True)
        }
    target = DeltaTable.forPath(spark, path)
    merge = target.alias("t").merge(last.alias("s"), matches)
    merge = merge.whenMatchedDelete(condition=f"s.{DELETED}")
    for kind, columns_kept in enumerate(kept):
        if columns_kept:
            reread: dict[str, Any] = {
                quoted(c): f"s.{quoted(c)}" for c in table.columns if c not in columns_kept
            }
            merge = merge.whenMatchedUpdate(
                condition=f"NOT s.{DELETED} AND s.{REREAD} = {kind}", set=reread
            )
    merge = merge.whenMatchedUpdate(condition=f"NOT s.{DELETED}", set=updates)
    merge = merge.whenNotMatchedInsert(condition=f"NOT s.{DELETED}", values=values)
    with session_setting(spark, _MERGE_DELETION_VECTORS, "false" if small else None):
        merge.execute()


def kept_if_absent(column: str, source: str, target: str) -> str:
    """A matched update's value of ``column``: the target's where the source row lacks it
    (``_unchanged`` names it: PostgreSQL's changelog-mode upsert), else the source's."""
    name = quoted(column)
    return (
        f"CASE WHEN array_contains({source}.{quoted(UNCHANGED)}, {sql_string(column)}) "
        f"THEN {target}.{name} ELSE {source}.{name} END"
    )


def size_in_bytes(spark: Any, path: str) -> float:
    """The target's size as the checksum file of Delta's last known snapshot of it says
    (Delta writes one with each commit; read without a job, ~10 ms), else as that
    snapshot's state says, or infinity where this Delta's log is not reachable (another
    Delta build, e.g. Databricks'): then the MERGE keeps the table's own deletion-vector
    setting. Not ``Snapshot.sizeInBytes``, which computes the state (three jobs, ~1 s a
    MERGE on a warm 2-core machine) even when the checksum has the size."""
    from py4j.protocol import Py4JError

    try:
        jvm = spark.sparkContext._jvm
        delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
        snapshot = delta_log.unsafeVolatileSnapshot()
        checksum = snapshot.checksumOpt()
        if checksum.isDefined():
            return float(checksum.get().tableSizeBytes())
        return float(snapshot.sizeInBytes())
    except (Py4JError, AttributeError) as exc:  # a class or method this Delta lacks
        log.debug("delta sink: no size of %s (%s); the MERGE keeps its setting", path, exc)
        return float("inf")


@contextmanager
def session_setting(spark: Any, key: str, value: str | None) -> Iterator[None]:
    """``key`` set to ``value`` meanwhile (nothing when None), then back to what it was:
    a user's own setting of it in ``spark-conf`` outlives the write."""
    if value is None:
        yield
        return
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)

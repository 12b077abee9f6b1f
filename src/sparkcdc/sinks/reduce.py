"""Collapsing a batch's changelog to the last state of each key.

Upsert targets need only where each key ended up in a batch: its last image, or that it
is gone. Order is ``_commit_version``; an update's pre- and post-image share a version, so
within a version the post-image (and an insert) wins over a pre-image (and a delete). A
key whose last change is a delete or the pre-image of a primary-key update ends deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION
from sparkcdc.core.identifiers import quoted

DELETED = "_deleted"
#: A flag column sinks carry through the reduction: the key's last change is a row read
#: again (``MicroBatch.is_reread_row``), which leaves the target's kept columns alone.
REREAD = "_sparkcdc_reread"
GONE = "_sparkcdc_gone"


def change_rank(change_type: Any) -> Any:
    """A Spark column: 0 for images that remove a key's row, 1 for images that set it."""
    from pyspark.sql import functions as F

    return F.when(change_type.isin("insert", "update_postimage"), F.lit(1)).otherwise(F.lit(0))


def last_change_per_key(
    changes: Any,
    key: Sequence[str],
    columns: Sequence[str],
    kept: Sequence[str] = (),
    reread: Any = None,
) -> Any:
    """One row per key: the table's ``columns``, ``_commit_version`` of the key's last change
    and ``_deleted`` (true when that change removed the key). Works on batch DataFrames.

    With ``kept`` (target columns the rows carry as NULL, ``MicroBatch.kept_columns``) and
    ``reread`` (a Spark column: the row was read again, ``MicroBatch.is_reread_row``), a
    row also says in :data:`REREAD` whether the target's values of ``kept`` stay: a row
    read again knows nothing of them. When the key also changed in the log earlier in the
    batch, that change said what they hold (its value, NULL after a delete), and the row
    carries it instead, written as any row."""
    from pyspark.sql import functions as F

    rank = change_rank(F.col(CHANGE_TYPE))
    order = F.struct(F.col(COMMIT_VERSION), rank.alias("rank"))
    fields = [F.col(quoted(c)) for c in columns]
    if kept:
        fields.append(reread.alias(REREAD))
    image = F.struct(*fields, F.col(COMMIT_VERSION), (rank == 0).alias(DELETED))
    keys = [F.col(quoted(k)) for k in key]
    found = [F.max_by(image, order).alias("_last")]
    if kept:
        # the key's last change before the re-read (max_by skips NULL orderings)
        before = F.struct(*[F.col(quoted(c)) for c in kept], (rank == 0).alias(GONE))
        found.append(F.max_by(before, F.when(~reread, order)).alias("_before"))
    last = changes.groupBy(*keys).agg(*found)
    if not kept:
        return last.select("_last.*")
    logged = F.col("_before").isNotNull()
    after_log = F.col(f"_last.{REREAD}") & logged
    picked = []
    for c in columns:
        value = F.col("_last")[c]
        if c in kept:
            earlier = F.when(~F.col("_before")[GONE], F.col("_before")[c])
            value = F.when(after_log, earlier).otherwise(value)
        picked.append(value.alias(c))
    return last.select(
        *picked,
        F.col(f"_last.{COMMIT_VERSION}"),
        F.col(f"_last.{DELETED}"),
        (F.col(f"_last.{REREAD}") & ~logged).alias(REREAD),
    )

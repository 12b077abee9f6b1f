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


def change_rank(change_type: Any) -> Any:
    """A Spark column: 0 for images that remove a key's row, 1 for images that set it."""
    from pyspark.sql import functions as F

    return F.when(change_type.isin("insert", "update_postimage"), F.lit(1)).otherwise(F.lit(0))


def last_change_per_key(changes: Any, key: Sequence[str], columns: Sequence[str]) -> Any:
    """One row per key: the table's ``columns``, ``_commit_version`` of the key's last change
    and ``_deleted`` (true when that change removed the key). Works on batch DataFrames."""
    from pyspark.sql import functions as F

    order = F.struct(F.col(COMMIT_VERSION), change_rank(F.col(CHANGE_TYPE)).alias("rank"))
    image = F.struct(
        *[F.col(quoted(c)) for c in columns],
        F.col(COMMIT_VERSION),
        (change_rank(F.col(CHANGE_TYPE)) == 0).alias(DELETED),
    )
    keys = [F.col(quoted(k)) for k in key]
    last = changes.groupBy(*keys).agg(F.max_by(image, order).alias("_last"))
    return last.select("_last.*")

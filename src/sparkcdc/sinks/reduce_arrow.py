"""Collapsing a batch's changelog to the last state of each key, on Arrow tables.

The same reduction as :func:`sparkcdc.sinks.reduce.last_change_per_key` (the order is
``_commit_version``, then an image that sets the key over one that removes it), for rows
that are in the driver's memory already: the Delta sink's native writer gets a batch's
rows as Arrow in one Spark action for every target (spark/arrow_fetch.py), and
reducing them there spares each target a Spark aggregation (a shuffle, so a job or two
of its own). Rows read again that leave kept columns alone are still reduced by Spark
(``reduce.py``): that case is rare and its rules are many.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION
from sparkcdc.sinks.reduce import DELETED

#: Change types that set a key's row (rank 1); every other removes it (rank 0).
SETTING = ("insert", "update_postimage")
_POSITION = "_sparkcdc_position"


def last_change_per_key(rows: Any, key: Sequence[str], columns: Sequence[str]) -> Any:
    """One row per key of ``rows`` (Arrow: ``columns`` and the change columns): the key's
    last change's ``columns``, its ``_commit_version`` and ``_deleted`` (true when that
    change removed the key). Ties (same version and rank) go to the later row. NULL keys
    are one key, as Spark's ``groupBy`` has them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    setting = pc.is_in(rows.column(CHANGE_TYPE), value_set=pa.array(SETTING))
    rank = pc.fill_null(setting, False).cast(pa.int8())
    order = pa.table(
        {
            "v": rows.column(COMMIT_VERSION),
            "r": rank,
            "i": pa.array(range(rows.num_rows), pa.int64()),
        }
    )
    ordered = pc.sort_indices(
        order,
        sort_keys=[("v", "ascending", "at_start"), ("r", "ascending"), ("i", "ascending")],
    )
    images = rows.select([*columns, COMMIT_VERSION]).append_column(DELETED, pc.equal(rank, 0))
    images = images.take(ordered)
    positioned = images.select(list(key)).append_column(
        _POSITION, pa.array(range(images.num_rows), pa.int64())
    )
    lasts = positioned.group_by(list(key), use_threads=False).aggregate([(_POSITION, "max")])
    picked = pc.sort_indices(lasts.column(f"{_POSITION}_max"))
    return images.take(pc.take(lasts.column(f"{_POSITION}_max"), picked))


def snapshot_rows(rows: Any, snapshot_version: int | None) -> Any:
    """A boolean Arrow array: which of ``rows`` are the batch's snapshot rows (inserts at
    the batch end's version: ``WritePlan.is_snapshot_row``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if snapshot_version is None:
        return pa.array([False] * rows.num_rows, pa.bool_())
    inserts = pc.equal(rows.column(CHANGE_TYPE), "insert")
    at_end = pc.equal(rows.column(COMMIT_VERSION), snapshot_version)
    return pc.fill_null(pc.and_(inserts, at_end), False)

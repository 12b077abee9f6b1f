"""Collapsing a batch's changelog to the last state of each key, on Arrow tables.

The same reduction as :func:`sparkcdc.sinks.reduce.last_change_per_key` (the order is
``_commit_version``, then an image that sets the key over one that removes it), for rows
that are in the driver's memory already: the Delta sink's native writer gets a batch's
rows as Arrow in one Spark action for every target (spark/arrow_fetch.py), and
reducing them there spares each target a Spark aggregation (a shuffle, so a job or two
of its own). Rows read again that leave kept columns alone are still reduced by Spark
(``reduce.py``): that case is rare and its rules are many.

Absent values (``_unchanged``, PostgreSQL's ``changelog-mode: upsert``) are folded as
``reduce.py`` does: a key's value of a column is its latest setting change's where that
change has it; ``_unchanged`` of the result names the columns no change of the key in the
batch has (the target keeps its stored value). Only batches with absent values pay for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION, UNCHANGED
from sparkcdc.sinks.reduce import DELETED

#: Change types that set a key's row (rank 1); every other removes it (rank 0).
SETTING = ("insert", "update_postimage")
_POSITION = "_sparkcdc_position"


def last_change_per_key(rows: Any, key: Sequence[str], columns: Sequence[str]) -> Any:
    """One row per key of ``rows`` (Arrow: ``columns`` and the change columns): the key's
    last change's ``columns``, its ``_commit_version`` and ``_deleted`` (true when that
    change removed the key). Ties (same version and rank) go to the later row. NULL keys
    are one key, as Spark's ``groupBy`` has them. Where ``rows`` has ``_unchanged``, so
    does the result, absent values folded (the module's docstring)."""
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
    absent = UNCHANGED in rows.column_names
    carried = [*columns, COMMIT_VERSION, *([UNCHANGED] if absent else [])]
    images = rows.select(carried).append_column(DELETED, pc.equal(rank, 0))
    images = images.take(ordered)
    positions = pa.array(range(images.num_rows), pa.int64())
    positioned = images.select(list(key)).append_column(_POSITION, positions)
    lacked = _absent_names(images) if absent else []
    folded = [c for c in lacked if c in columns and c not in key]  # the target's columns
    setting_rows = pc.invert(images.column(DELETED))
    for i, name in enumerate(folded):  # the latest position where the key has the value
        has = pc.and_(setting_rows, pc.invert(_lacks(images.column(UNCHANGED), name)))
        positioned = positioned.append_column(
            f"_p{i}", pc.if_else(has, positions, pa.scalar(None, pa.int64()))
        )
    wanted = [(_POSITION, "max"), *((f"_p{i}", "max") for i in range(len(folded)))]
    lasts = positioned.group_by(list(key), use_threads=False).aggregate(wanted)
    picked = pc.sort_indices(lasts.column(f"{_POSITION}_max"))
    last = images.take(pc.take(lasts.column(f"{_POSITION}_max"), picked))
    if not folded:
        return last
    sources = [pc.take(lasts.column(f"_p{i}_max"), picked) for i in range(len(folded))]
    for name, source in zip(folded, sources, strict=True):
        at = last.schema.get_field_index(name)
        last = last.set_column(at, name, images.column(name).take(source))
    lacking = [pc.is_null(s).to_pylist() for s in sources]
    names = [
        [n for n, m in zip(folded, marks, strict=True) if m] or None
        for marks in zip(*lacking, strict=True)
    ]
    at = last.schema.get_field_index(UNCHANGED)
    return last.set_column(at, UNCHANGED, pa.array(names, pa.list_(pa.string())))


def _absent_names(images: Any) -> list[str]:
    """The columns some row of ``images`` lacks (``_unchanged``), in first-seen order."""
    import pyarrow.compute as pc

    flat = pc.list_flatten(images.column(UNCHANGED))
    return list(dict.fromkeys(v for v in flat.to_pylist() if v is not None))


def _lacks(lists: Any, name: str) -> Any:
    """A boolean Arrow array: which rows' ``_unchanged`` lists hold ``name``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    flat = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists)
    hits = pc.filter(parents, pc.fill_null(pc.equal(flat, name), False))
    return pc.is_in(pa.array(range(len(lists)), pa.int64()), value_set=hits.cast(pa.int64()))


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

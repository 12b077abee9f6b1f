"""Comparing two DataFrames of the same table by key chunks, then narrowing to keys.

A table without a primary key is compared as a multiset instead (:func:`compare_multisets`).

Both sides are split into the same chunks (buckets of the primary key's hash, so the split
does not depend on either side's physical order or key type), and each chunk is summarised
by a row count and a sum of row hashes. Only chunks whose summaries differ are compared key
by key. Equal tables cost two aggregations; a few differing rows cost one more join over
their chunks only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.identifiers import quoted

#: How many differing keys to list per table (all are counted).
SAMPLE_KEYS = 20


@dataclass(frozen=True)
class Comparison:
    source_rows: int
    target_rows: int
    chunks: int
    mismatched_chunks: int
    differing_keys: int
    #: Up to SAMPLE_KEYS differing keys: (key values, what differs).
    samples: list[tuple[tuple[Any, ...], str]] = field(default_factory=list)
    #: Changes a history target holds more than once (``TargetSnapshot.repeated_changes``).
    repeated_changes: int = 0

    @property
    def equal(self) -> bool:
        return self.mismatched_chunks == 0 and self.repeated_changes == 0


def compare_tables(
    source: Any,
    target: Any,
    key: Sequence[str],
    columns: Sequence[str],
    chunks: int = 64,
    read: Callable[[str, Any], None] | None = None,
) -> Comparison:
    """Compare ``target`` with ``source`` (Spark DataFrames holding ``columns``).

    The target's columns are cast to the source's types first, so a target that stores a
    value in a wider type (a JDBC database, say) compares by value. ``read(side, frame)``,
    when given, reads each side (``source``, then ``target``) into Spark's cache as a job
    of its own (``frame.count()``), so its progress can be told apart (verify/progress.py);
    the comparison then works from the cache. Without it, one job reads both.
    """
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in source.schema.fields}
    target = target.select(*[F.col(quoted(c)).cast(types[c]).alias(c) for c in columns])
    source = source.select(*[F.col(quoted(c)) for c in columns])
    key_cols = [F.col(quoted(k)) for k in key]

    def hashed(frame: Any) -> Any:
        return frame.select(
            *key_cols,
            F.pmod(F.xxhash64(*key_cols), F.lit(chunks)).alias("_chunk"),
            F.xxhash64(*[F.col(quoted(c)) for c in columns]).alias("_hash"),
        ).persist()

    left, right = hashed(source), hashed(target)
    try:
        if read is not None:
            read("source", left)
            read("target", right)
        source_rows, target_rows, bad = _chunk_summaries(left, right)
        if not bad:
            return Comparison(source_rows, target_rows, chunks, 0, 0)
        count, samples = _differing_keys(left, right, key, bad)
        return Comparison(source_rows, target_rows, chunks, len(bad), count, samples)
    finally:
        left.unpersist()
        right.unpersist()


def compare_multisets(source: Any, target: Any, columns: Sequence[str]) -> Comparison:
    """Compare a table without a primary key: both sides as multisets of rows (each row
    value with its number of copies), so a duplicate row missing or extra is a difference.
    Samples name the row (as JSON) and both counts."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in source.schema.fields}
    target = target.select(*[F.col(quoted(c)).cast(types[c]).alias(c) for c in columns])
    source = source.select(*[F.col(quoted(c)) for c in columns])

    def counted(frame: Any, side: str) -> Any:
        row = F.to_json(F.struct(*[F.col(quoted(c)) for c in columns]))
        return frame.select(row.alias("_row")).groupBy("_row").agg(F.count(F.lit(1)).alias(side))

    joined = (
        counted(source, "_s")
        .join(counted(target, "_t"), "_row", "full_outer")
        .select(
            "_row", F.coalesce("_s", F.lit(0)).alias("_s"), F.coalesce("_t", F.lit(0)).alias("_t")
        )
        .persist()
    )
    try:
        totals = joined.agg(F.sum("_s"), F.sum("_t")).first()
        differing = joined.where(F.col("_s") != F.col("_t"))
        count = differing.count()
        samples = [
            ((r["_row"],), f"{r['_s']} in source, {r['_t']} in target")
            for r in differing.orderBy("_row").limit(SAMPLE_KEYS).collect()
        ]
    finally:
        joined.unpersist()
    return Comparison(int(totals[0] or 0), int(totals[1] or 0), 1, int(count > 0), count, samples)


def _chunk_summaries(left: Any, right: Any) -> tuple[int, int, list[Any]]:
    """Each side's rows, and the chunks whose row count or hash sum differ between the
    hashed ``left`` (source) and ``right`` (target): one aggregation of each side."""
    from pyspark.sql import functions as F

    def summary(frame: Any, side: str) -> Any:
        return frame.groupBy("_chunk").agg(
            F.count(F.lit(1)).alias(f"{side}_rows"),
            F.sum(F.col("_hash").cast("decimal(38,0)")).alias(f"{side}_sum"),
        )

    rows = summary(left, "s").join(summary(right, "t"), "_chunk", "full_outer").collect()
    source_rows = sum(r["s_rows"] or 0 for r in rows)
    target_rows = sum(r["t_rows"] or 0 for r in rows)
    bad = [
        r["_chunk"]
        for r in rows
        if (r["s_rows"] or 0) != (r["t_rows"] or 0) or r["s_sum"] != r["t_sum"]
    ]
    return source_rows, target_rows, bad


def _differing_keys(
    left: Any, right: Any, key: Sequence[str], bad: list[Any]
) -> tuple[int, list[tuple[tuple[Any, ...], str]]]:
    """How many keys of the ``bad`` chunks differ (missing on a side, or other values),
    and the first :data:`SAMPLE_KEYS` of them in key order with what differs."""
    from pyspark.sql import functions as F

    names = list(key)
    key_cols = [F.col(quoted(k)) for k in key]
    lhs = left.where(F.col("_chunk").isin(bad)).select(*key_cols, F.col("_hash").alias("_s"))
    rhs = right.where(F.col("_chunk").isin(bad)).select(*key_cols, F.col("_hash").alias("_t"))
    differing = lhs.join(rhs, names, "full_outer").where(~F.col("_s").eqNullSafe(F.col("_t")))
    count = differing.count()
    samples = [
        (tuple(r[n] for n in names), _difference(r["_s"], r["_t"]))
        for r in differing.orderBy(*names).limit(SAMPLE_KEYS).collect()
    ]
    return count, samples


def _difference(source_hash: Any, target_hash: Any) -> str:
    if target_hash is None:
        return "missing in target"
    if source_hash is None:
        return "not in source"
    return "values differ"

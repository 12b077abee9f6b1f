"""Bounding a MERGE by the batch's keys, so its cost follows the batch, not the table.

Delta finds the files a MERGE touches by joining the batch with the target; only
predicates on the target alone (literals) let it skip files by their min/max statistics
first. Without one, a batch of 100 changes reads every file of a 4M-row table. So the
sink adds a bound on the batch's first key column: a target row outside it cannot match
any batch row (rows match on equal keys), so the result is the same MERGE.

Delta's file skipping takes an ``IN`` list as the range from its least to its greatest
value, but an ``OR`` leg by leg. So the bound is the ranges the batch's keys cluster in,
for key types with a distance (integers, decimals, dates; ``t.k BETWEEN a AND b OR t.k
BETWEEN c AND d``, at most :data:`MOST_RANGES`), else one range from the least key to
the greatest; a batch that deletes the oldest rows, updates recent ones and inserts new
ones reads the files at both ends of the table, not all of them. A batch of few keys
also lists them (``t.k IN (...)``), which filters the rows of the files read.

Only where the bound is exact: key types whose values come back from Spark to Python and
into a literal unchanged (integers, decimals, strings, dates). Timestamps are left out (a
Python datetime loses which of a daylight-saving fall-back's two hours it was), as are
batches with a NULL key (``<=>`` matches NULL with NULL, which a range excludes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from decimal import Decimal
from itertools import pairwise
from typing import Any, TypeVar

from sparkcdc.core.identifiers import quoted

K = TypeVar("K")

#: Up to this many distinct keys, the bound lists them (``IN``), else gives their ranges.
LISTED_KEYS = 64
#: A batch of up to this many rows brings its keys to the driver (one light job); a
#: bigger one is aggregated instead (a heavier job, small next to that batch's MERGE).
COLLECTED_ROWS = 1000
#: At most this many ranges bound a batch of more keys than are listed.
MOST_RANGES = 16
#: A batch too big to collect is summed up in this many buckets of equal width (each
#: its least and greatest key), where the gaps between clusters of keys show.
BUCKETS = 1024
#: Spark type names (``simpleString`` prefixes) whose literals round-trip exactly, and
#: whose Python order is Spark's (strings: code point order is UTF-8 byte order).
_EXACT_TYPES = ("tinyint", "smallint", "int", "bigint", "decimal", "string", "varchar", "date")
#: Of those, the types whose keys have a distance (the others get one range).
_SPACED_TYPES = ("tinyint", "smallint", "int", "bigint", "decimal", "date")


def key_bounds(changes: Any, key: str, data_type: Any, alias: str = "t") -> Any | None:
    """A Spark column over ``alias`` (the MERGE's target) true for every target row whose
    ``key`` equals one in ``changes`` (a batch DataFrame), or None when no exact bound
    applies. One or two small Spark jobs over the (cached) batch."""
    from pyspark.sql import functions as F

    kind = data_type.simpleString()
    if not kind.startswith(_EXACT_TYPES):
        return None
    spaced = kind.startswith(_SPACED_TYPES)
    column = F.col(quoted(key))
    rows = changes.select(column).limit(COLLECTED_ROWS + 1).collect()
    if len(rows) <= COLLECTED_ROWS:  # every row of the batch
        keys = {row[0] for row in rows}
        if None in keys or not keys:
            return None
        ordered = sorted(keys)
        ranges = split_at_gaps([(k, k) for k in ordered], _distance, MOST_RANGES)
    else:
        ((low, high, nulls),) = changes.agg(
            F.min(column), F.max(column), F.count(F.lit(1)) - F.count(column)
        ).collect()
        if nulls or low is None:
            return None
        ordered = []
        ranges = _bucket_ranges(changes, column, low, high) if spaced else [(low, high)]
    target = F.col(f"{alias}.{quoted(key)}")

    def literal(value: Any) -> Any:
        return F.lit(value).cast(data_type)

    bound = _any([target.between(literal(a), literal(b)) for a, b in ranges])
    if ordered and len(ordered) <= LISTED_KEYS:
        return target.isin([literal(k) for k in ordered]) & bound
    return bound


def split_at_gaps(
    spans: Sequence[tuple[K, K]], distance: Callable[[K, K], float], most: int
) -> list[tuple[K, K]]:
    """``spans`` (sorted, disjoint ``(least, greatest)`` pairs of keys) as at most
    ``most`` ranges that hold every one: cut at the widest gaps between neighbours, of
    those wider than a ``most``-th of all the keys span (so keys spread evenly stay one
    range, and a few keys far apart are a range each)."""
    if len(spans) < 2 or most < 2:
        return [(spans[0][0], spans[-1][1])]
    least = distance(spans[0][0], spans[-1][1]) / most
    gaps = [(distance(a[1], b[0]), i) for i, (a, b) in enumerate(pairwise(spans))]
    wide = sorted((g for g in gaps if g[0] > least), reverse=True)[: most - 1]
    ranges, first = [], 0
    for i in sorted(i for _, i in wide):
        ranges.append((spans[first][0], spans[i][1]))
        first = i + 1
    ranges.append((spans[first][0], spans[-1][1]))
    return ranges


def _distance(a: Any, b: Any) -> float:
    """How far apart two keys of a spaced type are (strings: none, one range)."""
    if isinstance(a, date):
        return float((b - a).days)
    if isinstance(a, int | Decimal):
        return float(b - a)
    return 0.0


def _bucket_ranges(changes: Any, column: Any, low: Any, high: Any) -> list[tuple[Any, Any]]:
    """The ranges of a batch too big to collect: its keys summed up in :data:`BUCKETS`
    buckets of equal width between ``low`` and ``high`` (one aggregation), split where
    the buckets show gaps. Each bucket's least and greatest key are the batch's own, so
    the ranges hold every key whatever the buckets' rounding."""
    from pyspark.sql import functions as F

    if low == high:
        return [(low, high)]
    if isinstance(low, date):
        number = F.unix_date(column)
        start = float((low - date(1970, 1, 1)).days)
    else:
        number, start = column.cast("double"), float(low)
    bucket = F.floor((number - F.lit(start)) * F.lit(BUCKETS / _distance(low, high)))
    summed = changes.groupBy(bucket.alias("bucket")).agg(
        F.min(column).alias("least"), F.max(column).alias("greatest")
    )
    spans = sorted((row.least, row.greatest) for row in summed.collect())
    return split_at_gaps(_coalesced(spans), _distance, MOST_RANGES)


def _coalesced(spans: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Sorted spans with overlapping ones joined (disjoint, as :func:`split_at_gaps` needs)."""
    joined = [spans[0]]
    for least, greatest in spans[1:]:
        if least <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], greatest))
        else:
            joined.append((least, greatest))
    return joined


def _any(conditions: Sequence[Any]) -> Any:
    """The OR of ``conditions``, as a balanced tree (Delta's skipping walks it
    recursively)."""
    if len(conditions) == 1:
        return conditions[0]
    half = len(conditions) // 2
    return _any(conditions[:half]) | _any(conditions[half:])

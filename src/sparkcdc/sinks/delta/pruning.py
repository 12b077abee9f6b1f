"""Bounding a MERGE by the batch's keys, so its cost follows the batch, not the table.

Delta finds the files a MERGE touches by joining the batch with the target; only
predicates on the target alone (literals) let it skip files by their min/max statistics
first. Without one, a batch of 100 changes reads every file of a 4M-row table. So the
sink adds the range of the batch's first key column, ``t.k BETWEEN min AND max``, and, when
the batch has few keys, their list (``t.k IN (...)``): a target row outside them cannot
match any batch row (rows match on equal keys), so the result is the same MERGE.

Only where the bound is exact: key types whose values come back from Spark to Python and
into a literal unchanged (integers, decimals, strings, dates). Timestamps are left out (a
Python datetime loses which of a daylight-saving fall-back's two hours it was), as are
batches with a NULL key (``<=>`` matches NULL with NULL, which a range excludes).
"""

from __future__ import annotations

from typing import Any

from sparkcdc.core.identifiers import quoted

#: Up to this many distinct keys, the bound lists them (``IN``), else gives their range.
LISTED_KEYS = 64
#: A batch of up to this many rows brings its keys to the driver (one light job); a
#: bigger one is aggregated instead (a heavier job, small next to that batch's MERGE).
COLLECTED_ROWS = 1000
#: Spark type names (``simpleString`` prefixes) whose literals round-trip exactly, and
#: whose Python order is Spark's (strings: code point order is UTF-8 byte order).
_EXACT_TYPES = ("tinyint", "smallint", "int", "bigint", "decimal", "string", "varchar", "date")


def key_bounds(changes: Any, key: str, data_type: Any, alias: str = "t") -> Any | None:
    """A Spark column over ``alias`` (the MERGE's target) true for every target row whose
    ``key`` equals one in ``changes`` (a batch DataFrame), or None when no exact bound
    applies. One small Spark job over the (cached) batch."""
    from pyspark.sql import functions as F

    if not data_type.simpleString().startswith(_EXACT_TYPES):
        return None
    column = F.col(quoted(key))
    rows = changes.select(column).limit(COLLECTED_ROWS + 1).collect()
    if len(rows) <= COLLECTED_ROWS:  # every row of the batch
        keys = {row[0] for row in rows}
        if None in keys or not keys:
            return None
        low, high = min(keys), max(keys)
    else:
        ((low, high, nulls),) = changes.agg(
            F.min(column), F.max(column), F.count(F.lit(1)) - F.count(column)
        ).collect()
        if nulls or low is None:
            return None
        keys = set()
    target = F.col(f"{alias}.{quoted(key)}")
    if keys and len(keys) <= LISTED_KEYS:
        return target.isin([F.lit(k).cast(data_type) for k in sorted(keys)])
    return target.between(F.lit(low).cast(data_type), F.lit(high).cast(data_type))

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
#: Spark type names (``simpleString`` prefixes) whose literals round-trip exactly.
_EXACT_TYPES = ("tinyint", "smallint", "int", "bigint", "decimal", "string", "varchar", "date")


def key_bounds(changes: Any, key: str, data_type: Any, alias: str = "t") -> Any | None:
    """A Spark column over ``alias`` (the MERGE's target) true for every target row whose
    ``key`` equals one in ``changes`` (a batch DataFrame), or None when no exact bound
    applies. One small Spark job over the (cached) batch."""
    from pyspark.sql import functions as F

    if not data_type.simpleString().startswith(_EXACT_TYPES):
        return None
    column = F.col(quoted(key))
    ((low, high, nulls, keys),) = changes.agg(
        F.min(column),
        F.max(column),
        F.count(F.lit(1)) - F.count(column),
        F.slice(F.collect_set(column), 1, LISTED_KEYS + 1),
    ).collect()
    if nulls or low is None:
        return None
    target = F.col(f"{alias}.{quoted(key)}")
    if len(keys) <= LISTED_KEYS:
        return target.isin([F.lit(k).cast(data_type) for k in keys])
    return target.between(F.lit(low).cast(data_type), F.lit(high).cast(data_type))

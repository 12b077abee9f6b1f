"""Collapsing a batch's changelog to the last state of each key.

Upsert targets need only where each key ended up in a batch: its last image, or that it
is gone. Order is ``_commit_version``; an update's pre- and post-image share a version, so
within a version the post-image (and an insert) wins over a pre-image (and a delete). A
key whose last change is a delete or the pre-image of a primary-key update ends deleted.

Absent values (``_unchanged``: PostgreSQL's ``changelog-mode: upsert``, TOASTed values an
UPDATE left unchanged) are folded in the same order: a key's value of a column is that of
its latest change that sets the key and has the value (an insert then an update in one
batch is a whole row); the result's ``_unchanged`` names the columns no such change has,
whose stored values the target keeps (docs/design.md, "Without REPLICA IDENTITY FULL").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION, UNCHANGED
from sparkcdc.core.identifiers import quoted

DELETED = "_deleted"
#: A column sinks carry through the reduction: when the key's last change is a row read
#: again (``WritePlan.is_reread_row``), the index of its kind of row in
#: ``TargetWrite.kept_columns`` (NULL otherwise): the target's columns it leaves alone.
REREAD = "_sparkcdc_reread"
#: In a target whose tables' rows keep different columns (``TargetWrite.kept_columns`` has
#: more than one set), each row says which set is its own.
KEPT_SET = "_sparkcdc_kept_set"
GONE = "_sparkcdc_gone"


def change_rank(change_type: Any) -> Any:
    """A Spark column: 0 for images that remove a key's row, 1 for images that set it."""
    from pyspark.sql import functions as F

    return F.when(change_type.isin("insert", "update_postimage"), F.lit(1)).otherwise(F.lit(0))


def last_change_per_key(
    changes: Any,
    key: Sequence[str],
    columns: Sequence[str],
    kept: Sequence[Sequence[str]] = (),
    reread: Any = None,
) -> Any:
    """One row per key: the table's ``columns``, ``_commit_version`` of the key's last change
    and ``_deleted`` (true when that change removed the key). Works on batch DataFrames.

    With ``kept`` (per kind of row, the target columns it carries as NULL,
    ``TargetWrite.kept_columns``; rows say their kind in :data:`KEPT_SET` when there are
    several) and ``reread`` (a Spark column: the row was read again,
    ``WritePlan.is_reread_row``), a row also says in :data:`REREAD` which kept columns'
    target values stay: a row read again knows nothing of them. When the key also changed
    in the log earlier in the batch, that change said what they hold (its value, NULL after
    a delete), and the row carries it instead, written as any row. A key's rows are all of
    one kind (the tables of a target do not share keys). ``_unchanged``: the module's doc."""
    from pyspark.sql import functions as F

    union = list(dict.fromkeys(c for columns_kept in kept for c in columns_kept))
    rank = change_rank(F.col(CHANGE_TYPE))
    order = F.struct(F.col(COMMIT_VERSION), rank.alias("rank"))
    absent = UNCHANGED in changes.columns
    folded = _may_be_absent(changes, columns, key) if absent else []
    fields = [F.col(quoted(c)) for c in columns]
    if union:
        kind = F.col(KEPT_SET) if len(kept) > 1 else F.lit(0)
        fields.append(F.when(reread, kind).alias(REREAD))
    image = F.struct(*fields, F.col(COMMIT_VERSION), (rank == 0).alias(DELETED))
    keys = [F.col(quoted(k)) for k in key]
    found = [F.max_by(image, order).alias("_last")]
    if union:
        # the key's last change before the re-read (max_by skips NULL orderings)
        before = F.struct(*[F.col(quoted(c)) for c in union], (rank == 0).alias(GONE))
        found.append(F.max_by(before, F.when(~reread, order)).alias("_before"))
    found += _latest_values(folded, rank, order)
    last = changes.groupBy(*keys).agg(*found)
    if not union and not absent:
        return last.select("_last.*")
    logged = F.col("_before").isNotNull() if union else F.lit(False)
    kind_read = F.col(f"_last.{REREAD}") if union else F.lit(None)
    has_value = {c: F.col(f"_has{i}") for i, c in enumerate(folded)}
    picked = []
    for c in columns:
        value = has_value[c]["v"] if c in has_value else F.col("_last")[c]
        if c in union:
            mine = [i for i, columns_kept in enumerate(kept) if c in columns_kept]
            earlier = F.when(~F.col("_before")[GONE], F.col("_before")[c])
            value = F.when(logged & kind_read.isin(mine), earlier).otherwise(value)
        picked.append(value.alias(c))
    ends = [F.col(f"_last.{COMMIT_VERSION}"), F.col(f"_last.{DELETED}")]
    ends += [_still_absent(has_value)] if absent else []
    if not union:
        return last.select(*picked, *ends)
    keeping = [i for i, columns_kept in enumerate(kept) if columns_kept]
    return last.select(
        *picked, *ends, F.when(~logged & kind_read.isin(keeping), kind_read).alias(REREAD)
    )


#: Spark types of PostgreSQL's fixed-length types, whose values are never TOASTed (only a
#: varlena value can be sent as unchanged): their columns need no fold.
_FIXED_LENGTH = (
    "ByteType",
    "ShortType",
    "IntegerType",
    "LongType",
    "FloatType",
    "DoubleType",
    "BooleanType",
    "DateType",
    "TimestampType",
    "TimestampNTZType",
)


def _may_be_absent(changes: Any, columns: Sequence[str], key: Sequence[str]) -> list[str]:
    """The non-key ``columns`` an update can leave absent: those of a type that may be
    TOASTed (text, bytea, jsonb, numeric, arrays...); each costs the reduction one more
    aggregate, so integers and timestamps are left out."""
    types = {f.name: type(f.dataType).__name__ for f in changes.schema.fields}
    return [c for c in columns if c not in key and types.get(c) not in _FIXED_LENGTH]


def _latest_values(folded: Sequence[str], rank: Any, order: Any) -> list[Any]:
    """Aggregates ``_has<i>``: per column of ``folded``, the key's latest change that sets
    the key and has the column's value (``_unchanged`` does not name it), as a struct
    ``v`` (NULL when none has it: the target keeps its stored value)."""
    from pyspark.sql import functions as F

    found = []
    for i, c in enumerate(folded):
        has = (rank == 1) & ~F.coalesce(F.array_contains(F.col(UNCHANGED), c), F.lit(False))
        value = F.struct(F.col(quoted(c)).alias("v"))
        found.append(F.max_by(value, F.when(has, order)).alias(f"_has{i}"))
    return found


def _still_absent(has_value: dict[str, Any]) -> Any:
    """The result's ``_unchanged``: the columns no change of the key has (NULL if none)."""
    from pyspark.sql import functions as F

    if not has_value:
        return F.lit(None).cast("array<string>").alias(UNCHANGED)
    lacking = F.filter(
        F.array(*[F.when(has.isNull(), F.lit(c)) for c, has in has_value.items()]),
        lambda name: name.isNotNull(),
    )
    return F.when(F.size(lacking) > 0, lacking).alias(UNCHANGED)

"""A Delta target read back for ``verify``: a history target (``changelog-mode: append``)
replayed into the table it describes.

A history target holds every change with its ``_change_type`` and ``_commit_version``, so
the source table it mirrors is, per key, its last change unless that is a delete. The last
is the highest version; an update's two images share one, and the post-image comes after
the pre-image (as does an insert after a delete of the same version). A change held twice
(the same key, version and change type: a batch appended twice) leaves that replay
unchanged, so it is counted on its own: an equal replay with repeated changes still means
the history is wrong for anyone who reads it as a history.

A table without a primary key (docs/design.md, "Tables without a primary key") has no key to
take the last change of: its rows are a multiset, and its history replays as one, each
insert and post-image adding a copy of its row and each delete and pre-image taking one
away. There a repeated insert cannot be told from two equal rows the snapshot read (they
share a version), so only repeated removals count, with removals of copies the history
never added.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION, ChangeType
from sparkcdc.core.identifiers import quoted
from sparkcdc.sinks.base import SinkTable, TargetSnapshot

#: Change types after which the key is gone, or about to get its next image.
_GONE = (ChangeType.DELETE.value, ChangeType.UPDATE_PREIMAGE.value)


def replayed(history: Any, key: Sequence[str], columns: Sequence[str]) -> Any:
    """The rows ``history`` (a DataFrame of changes) leaves: per key its last change that
    is not a delete, with ``columns`` only."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    images_last = F.when(F.col(CHANGE_TYPE).isin(*_GONE), 0).otherwise(1)
    order = Window.partitionBy(*[F.col(quoted(k)) for k in key]).orderBy(
        F.col(COMMIT_VERSION).desc(), images_last.desc()
    )
    last = history.withColumn("_sparkcdc_last", F.row_number().over(order))
    kept = last.where((F.col("_sparkcdc_last") == 1) & ~F.col(CHANGE_TYPE).isin(*_GONE))
    return kept.select(*[F.col(quoted(c)) for c in columns])


def replayed_multiset(history: Any, columns: Sequence[str]) -> tuple[Any, int]:
    """The rows a keyless table's ``history`` leaves (each row value as many times as it
    was added and not removed), and how many changes it holds that cannot be: removals
    repeated (the same row, version and change type) or of copies it never added."""
    from pyspark.sql import functions as F

    cols = [F.col(quoted(c)) for c in columns]
    sign = F.when(F.col(CHANGE_TYPE).isin(*_GONE), -1).otherwise(1)
    net = history.groupBy(*cols).agg(F.sum(sign).alias("_sparkcdc_copies"))
    copies = F.col("_sparkcdc_copies")
    rows = net.where(copies > 0).select(
        *cols, F.explode(F.array_repeat(F.lit(0), copies.cast("int"))).alias("_sparkcdc_copy")
    )
    (negative,) = net.where(copies < 0).agg(F.coalesce(F.sum(-copies), F.lit(0))).first()
    removals = history.where(F.col(CHANGE_TYPE).isin(*_GONE))
    repeated = repeated_changes(removals, columns)
    return rows.select(*cols), int(negative) + repeated


def repeated_changes(history: Any, key: Sequence[str]) -> int:
    """How many changes ``history`` holds more than once (each extra copy counts)."""
    from pyspark.sql import functions as F

    identity = [F.col(quoted(k)) for k in key] + [F.col(COMMIT_VERSION), F.col(CHANGE_TYPE)]
    copies = history.groupBy(*identity).count().where(F.col("count") > 1)
    (extra,) = copies.agg(F.coalesce(F.sum(F.col("count") - 1), F.lit(0))).first()
    return int(extra)


def read_back(
    spark: Any, path: str, table: SinkTable, upsert: bool, pipeline: str | None
) -> TargetSnapshot:
    """The target at ``path`` as of its newest version and the offset of ``pipeline``'s
    last commit (any sparkcdc commit's when not known; for ``verify``); a history target's
    changes replayed, with the changes it holds more than once counted."""
    history = (
        spark.sql(f"DESCRIBE HISTORY delta.{quoted(path)}")
        .select("version", "userMetadata")
        .orderBy("version", ascending=False)
        .limit(1000)
        .collect()
    )
    # the table as it is now (a write by anyone else after our last commit is a
    # difference verify must see), and the offset of the pipeline's last commit
    latest = history[0][0]
    offsets = [o for _, m in history if (o := recorded_offset(m, pipeline))]
    offset = offsets[0] if offsets else None
    rows = spark.read.format("delta").option("versionAsOf", latest).load(path)
    if not upsert and not table.key:
        multiset, wrong = replayed_multiset(rows, table.columns)
        return TargetSnapshot(multiset, offset, wrong)
    if not upsert:
        return TargetSnapshot(
            replayed(rows, table.key, table.columns), offset, repeated_changes(rows, table.key)
        )
    return TargetSnapshot(rows.select(*[quoted(c) for c in table.columns]), offset)


def recorded_offset(metadata: str | None, pipeline: str | None = None) -> str | None:
    """The source offset a commit's ``userMetadata`` records (:func:`_metadata`), or None
    when it records none: anyone may write to a Delta table, and another writer's
    ``userMetadata`` is any text, invalid JSON or JSON of another shape included. With
    ``pipeline`` known, only that pipeline's commits count."""
    if not metadata or not metadata.startswith("{"):
        return None
    try:
        parsed = json.loads(metadata)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict) or (
        pipeline is not None and parsed.get("pipeline") != pipeline
    ):
        return None
    offset = parsed.get("source_offset")
    return offset if isinstance(offset, str) and offset else None

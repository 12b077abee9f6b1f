"""A history target (``changelog-mode: append``) replayed into the table it describes, for
``verify``.

A history target holds every change with its ``_change_type`` and ``_commit_version``, so
the source table it mirrors is, per key, its last change unless that is a delete. The last
is the highest version; an update's two images share one, and the post-image comes after
the pre-image (as does an insert after a delete of the same version). A change held twice
(the same key, version and change type: a batch appended twice) leaves that replay
unchanged, so it is counted on its own: an equal replay with repeated changes still means
the history is wrong for anyone who reads it as a history.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sparkcdc.core.changes import CHANGE_TYPE, COMMIT_VERSION, ChangeType
from sparkcdc.core.identifiers import quoted

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


def repeated_changes(history: Any, key: Sequence[str]) -> int:
    """How many changes ``history`` holds more than once (each extra copy counts)."""
    from pyspark.sql import functions as F

    identity = [F.col(quoted(k)) for k in key] + [F.col(COMMIT_VERSION), F.col(CHANGE_TYPE)]
    copies = history.groupBy(*identity).count().where(F.col("count") > 1)
    (extra,) = copies.agg(F.coalesce(F.sum(F.col("count") - 1), F.lit(0))).first()
    return int(extra)

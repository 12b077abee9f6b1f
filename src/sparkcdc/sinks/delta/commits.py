"""What a Delta sink commit records besides its rows: the batch it belongs to, for
``verify`` and for the replay checks, and (Spark's writer) the settings that make Delta
skip a replayed batch.

Every commit stores the pipeline, the batch and the batch's source offset as the target
records it in ``userMetadata`` (:func:`commit_metadata`; sinks/delta/history.py reads it
back). Spark's writer takes Delta's transaction id (``txnAppId``/``txnVersion``) as writer
options for an append and as session settings for a MERGE or DELETE, which take no
options (:func:`commit_options`); delta-rs takes both as commit properties
(sinks/delta/native.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.sinks.delta.appended import SNAPSHOT_ROWS
from sparkcdc.sinks.write_plan import WritePlan

#: The transaction app id suffix of a batch's truncate.
TRUNCATE_APP = ":truncate"
_TXN_APP = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def commit_metadata(
    batch: WritePlan, target: TableId, offset: bool, snapshot_rows: bool = False
) -> str:
    """A commit's ``userMetadata``: the pipeline, the batch and (``offset``) its source
    offset as ``target`` records it (:meth:`WritePlan.offset_of`), which ``verify``
    reads back; a MERGE that carries the batch's snapshot rows says so
    (sinks/delta/appended.py)."""
    metadata: dict[str, Any] = {
        "pipeline": batch.pipeline,
        "batch_id": batch.batch_id,
        "source_offset": batch.offset_of(target) if offset else None,
    }
    if snapshot_rows:
        metadata[SNAPSHOT_ROWS] = True
    return json.dumps(metadata)


def write_options(batch: WritePlan, target: TableId) -> dict[str, str]:
    """A history append's writer options that make it idempotent and record the offset:
    what :func:`commit_options` sets for a MERGE, as options of the one write (no session
    setting, which writes of other targets in other threads would see)."""
    return {
        "txnAppId": batch.pipeline,
        "txnVersion": str(batch.batch_id),
        "userMetadata": commit_metadata(batch, target, offset=True),
    }


@contextmanager
def commit_options(
    spark: Any,
    batch: WritePlan,
    target: TableId,
    app: str = "",
    offset: bool = True,
    snapshot_rows: bool = False,
) -> Iterator[None]:
    """Session settings that make the next Delta commit idempotent and record the offset.

    Delta reads them for MERGE and DELETE, which take no writer options; they are unset
    right after, so no other commit picks them up by accident, and ``spark`` is the
    session of one thread's writes (spark/concurrent_writes.py). ``app`` suffixes the
    transaction's app id: a batch's truncate and its MERGE are two commits, each skipped
    on replay.
    """
    spark.conf.set(_TXN_APP, batch.pipeline + app)
    spark.conf.set(_TXN_VERSION, str(batch.batch_id))
    spark.conf.set(_USER_METADATA, commit_metadata(batch, target, offset, snapshot_rows))
    try:
        yield
    finally:
        for key in (_TXN_APP, _TXN_VERSION, _USER_METADATA):
            spark.conf.unset(key)

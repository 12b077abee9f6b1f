"""Batches written in one pass: the snapshot rows of one table and nothing else.

The runner caches every batch, counts it in one job, then hands it to the sink: a batch
may be read more than once (a target per table, a MERGE reads its source twice), and a
chunk read twice is two reads of the database. For a batch that is only one table's
chunks, into a target that appends them (sinks/base.py, ``Sink.writes_snapshot_once``),
the cache and the count cost a third of the batch (docs/pipelines.md, "One
micro-batch"): the rows go straight from the source to the target, and they are
counted on the way (Spark's ``Observation`` of the write, or of the rows a JDBC
target's ``COPY`` read, :func:`observed`).

Which batches those are, the offsets tell alone (no row is looked at). A batch from
offset A to B holds the log's changes in ``(A.log, B.log]`` of keys A had emitted, and
the chunks between A's and B's cursors, read as of B (docs/design.md, "One micro-batch,
from offset A to offset B"). So it holds snapshot rows of one table only when one
table's cursor moved, no re-read runs in it, and no log change can be in it: the log did
not move, or A had emitted no key of any table (the first batch of a snapshot from
scratch: the ``initial`` and ``snapshot`` startup modes start with every table not
started).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.progress import TableProgress

log = logging.getLogger(__name__)


def chunks_of_one_table(
    previous: SourceOffset[Any] | None, offset: SourceOffset[Any], from_scratch: bool = False
) -> TableId | None:
    """The table whose chunks are the whole batch from ``previous`` to ``offset`` (the
    end offsets of the batch before and of this one), or None. ``previous`` None: the
    stream's first batch, whose start Spark does not keep; ``from_scratch`` says it
    started with every table not started, each with its columns only (so a drop in it,
    which marks its table done, is told by its ``schema`` entry's marks: such batches are
    refused)."""
    new = offset.tables
    if any(progress.again is not None for progress in new.values()):
        return None  # a re-read emits updates, not snapshot inserts
    if previous is None:
        if not from_scratch or any(_marked(offset, table) for table in new):
            return None  # a column change, truncate or drop in it
        moved = [table for table, progress in new.items() if progress.started]
        return moved[0] if len(moved) == 1 else None
    old = previous.tables
    if old.keys() != new.keys():  # a table created or dropped
        return None
    if any(progress.started for progress in old.values()):
        if _rest(previous) != _rest(offset):  # the log moved (changes of emitted keys), a pause
            return None
    elif dataclasses.replace(_rest(previous), log=None) != dataclasses.replace(
        _rest(offset), log=None
    ):
        return None
    moved = [table for table in new if _read(new[table]) != _read(old[table])]
    if len(moved) != 1:
        return None
    was, now = old[moved[0]], new[moved[0]]
    if was.done or was.schema != now.schema:
        return None  # a mark on a done table (truncate, drop); a change of its columns
    return moved[0]


def _rest(offset: SourceOffset[Any]) -> SourceOffset[Any]:
    """The offset without its tables: the log position, the signals, a pause."""
    return dataclasses.replace(offset, tables={})


def _read(progress: TableProgress) -> TableProgress:
    """A table's entry without its span of chunks read (``chunks``): a span that shrinks
    or goes while nothing else of the entry changes reads no row of the table."""
    return dataclasses.replace(progress, chunks=None)


def _marked(offset: SourceOffset[Any], table: TableId) -> bool:
    """Whether a table's ``schema`` entry holds more than its columns: the statement of a
    column change, a truncate's or a drop's mark."""
    schema = offset.schema_of(table)
    return schema is not None and schema.marked


def observed(
    observation: Any,
    recount: Callable[[], Any],
    read_frames: Sequence[Any] = (),
    *,
    wait_seconds: float = 3.0,
) -> Any:
    """The row of ``observation`` once the write that carried it has run, or
    ``recount()`` when it never ran: a sink that finds the batch in its target already
    (a replay after a crash) skips the write, and the rows are counted by reading them
    again, which only replays pay. Spark filled it before the write returned in every
    measured batch; the short wait is a margin.

    A sink that read the rows with ``toLocalIterator`` names what it read in
    ``read_frames`` (``WritePlan.read_through``): the observation completed empty as
    that read began, so the row comes from the last frame's plan, whose jobs have all
    run (Spark merges a task's metrics before its partition reaches the driver). A last
    entry None: the rows were read in parts, or not at all (a replay the sink skipped)."""
    if read_frames:
        row = metrics_in(read_frames[-1], observation)
        if row is None:
            log.debug("the batch was not read in one piece: counting it again")
            return recount()
        return row
    deadline = time.monotonic() + wait_seconds
    try:
        future = observation._jo.future()  # Spark's own, not in PySpark's API
        while not future.isCompleted():
            if time.monotonic() > deadline:
                log.debug("the write ran no job that observed the batch: counting it again")
                return recount()
            time.sleep(0.01)
        return observation.get
    except Exception:  # the write is committed: count the rows, never fail here
        log.debug("the batch's observation could not be read: counting it again", exc_info=True)
        return recount()


def metrics_in(frame: Any, observation: Any) -> dict[str, Any] | None:
    """``observation``'s metrics as ``frame``'s executed plan holds them (Spark's
    ``QueryExecution.observedMetrics``, not in PySpark's API), as ``Observation.get``
    gives them; None when ``frame`` is None, its plan has none of that name, or they
    cannot be read (the rows are then counted again, never failing a written batch)."""
    from pyspark.serializers import CPickleSerializer

    if frame is None:
        return None
    try:
        found = frame._jdf.queryExecution().observedMetrics().get(observation._jo.name())
        if found.isEmpty():
            return None
        jvm = frame.sparkSession._jvm
        utils = getattr(jvm, "org.apache.spark.sql.api.python.PythonSQLUtils")
        serializer: Any = CPickleSerializer()  # untyped in PySpark
        row = serializer.loads(utils.toPyRow(found.get()))
        return dict(row.asDict(recursive=False))
    except Exception:
        log.debug("the metrics of the rows read could not be read", exc_info=True)
        return None

"""Writes of one batch into several targets at once, each thread with a session of its own.

A Delta append or MERGE of a few rows costs seconds, most of it the driver's own work
(reading the target's log, planning, committing) and the latency of small jobs, not the
executors' (benchmarks/many_tables.py). A batch that changes many tables would pay that
sum one table after another; Spark runs jobs from several threads at once, so the batch
pays roughly the sum divided by the threads, as far as the driver's cores go.

Each thread writes through a clone of the batch's session: Delta takes a commit's
transaction id and metadata from the session's settings (``txnAppId``, ``txnVersion``,
``userMetadata``: what makes a replayed batch a no-op), and two threads setting them on
one session would commit each other's. A clone has the session's settings and shares its
SparkContext and cached data. The threads inherit the batch thread's Spark job group
(``inheritable_thread_target``), so stopping the query cancels their jobs too.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

log = logging.getLogger(__name__)

Item = TypeVar("Item")


def session_clone(spark: Any) -> Any | None:
    """A new session with ``spark``'s settings, sharing its SparkContext and cache; None
    when the session cannot be cloned (Spark Connect)."""
    try:
        from pyspark.sql import SparkSession

        return SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())
    except Exception as exc:  # no clone: the caller writes one at a time
        log.debug("no session clone (%s): targets are written one at a time", exc)
        return None


class SessionClones:
    """Clones of one session, made when first needed and kept for every later batch: a
    session registers listeners with the SparkContext that go only when it is garbage, so
    clones made per batch would pile up in a long run. The pipeline sets no session
    settings while it runs (commit settings are set and unset around each commit), so a
    clone made at the first batch has what a clone made now would have."""

    def __init__(self) -> None:
        self._of: Any = None
        self._clones: list[Any] = []

    def of(self, spark: Any, count: int) -> list[Any]:
        """``count`` clones of ``spark`` (fewer, maybe none, if it cannot be cloned)."""
        if self._of is not spark:
            self._of, self._clones = spark, []
        while len(self._clones) < count:
            clone = session_clone(spark)
            if clone is None:
                break
            self._clones.append(clone)
        return self._clones[:count]


def write_concurrently(
    spark: Any,
    items: Sequence[Item],
    threads: int,
    write: Callable[[Any, Item], None],
    clones: SessionClones,
) -> None:
    """``write(session, item)`` for every item, up to ``threads`` at once, each thread
    with its own clone of ``spark`` (from ``clones``); one item or one thread: in this
    thread, with ``spark``. Returns when every started write has ended. The first item
    (in the given order) whose write failed raises its error, and items not started then
    are not started: a batch fails as a whole, and its replay skips what was committed."""
    sessions_now = clones.of(spark, min(threads, len(items))) if len(items) > 1 else []
    if len(sessions_now) <= 1:
        for item in items:
            write(spark, item)
        return
    sessions: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for session in sessions_now:
        sessions.put(session)

    def run(item: Item) -> None:
        session = sessions.get()  # as many sessions as threads: one is always free
        try:
            write(session, item)
        finally:
            sessions.put(session)

    from pyspark.util import inheritable_thread_target

    # the job group and local properties of this (the batch's) thread, and its tags
    target = inheritable_thread_target(spark)(run)
    with ThreadPoolExecutor(len(sessions_now), thread_name_prefix="sparkcdc-write") as pool:
        futures: list[Future[None]] = [pool.submit(target, item) for item in items]
        _, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for future in pending:
            future.cancel()
        wait(futures)
    for future in futures:
        error = None if future.cancelled() else future.exception()
        if error is not None:
            raise error

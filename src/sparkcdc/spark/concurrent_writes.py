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
(``inheritable_thread_target``), so stopping the query cancels their running jobs too, and
a stopping run starts no further write.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

from sparkcdc.core.errors import SparkCdcError

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
    clones made per batch would pile up in a long run. The session is told by its JVM
    object: PySpark hands each batch of a stream a new Python object of the stream's one
    session. The pipeline sets no session settings while it runs (commit settings are set
    and unset around each commit), so a clone made at the first batch has what a clone
    made now would have."""

    def __init__(self) -> None:
        self._of: Any = None
        self._clones: list[Any] = []

    def of(self, spark: Any, count: int) -> list[Any]:
        """``count`` clones of ``spark`` (fewer, maybe none, if it cannot be cloned)."""
        session = getattr(spark, "_jsparkSession", None)
        if self._of is None or session is None or not self._of.equals(session):
            self._of, self._clones = session, []
        while len(self._clones) < count:
            clone = session_clone(spark)
            if clone is None:
                break
            self._clones.append(clone)
        return self._clones[:count]


class WritesStopped(SparkCdcError):
    """The run is stopping: the batch's writes not started yet are not started."""


def write_concurrently(
    spark: Any,
    items: Sequence[Item],
    threads: int,
    write: Callable[[Any, Item], None],
    clones: SessionClones,
    stopping: Callable[[], bool] | None = None,
) -> None:
    """``write(session, item)`` for every item, up to ``threads`` at once, each thread
    with its own clone of ``spark`` (from ``clones``); one item or one thread: in this
    thread, with ``spark``. Returns when every started write has ended. The first item
    (in the given order) whose write failed raises its error, and items not started then
    are not started: a batch fails as a whole, and its replay skips what was committed.
    Once ``stopping()`` says so, no further item starts (a stop cancels the running
    writes' Spark jobs; this thread, not a worker, is the one the stop interrupts)."""
    many = threads > 1 and len(items) > 1
    sessions_now = clones.of(spark, min(threads, len(items))) if many else []
    if len(sessions_now) <= 1:
        for item in items:
            write(spark, item)
        return
    sessions: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for session in sessions_now:
        sessions.put(session)

    def run(item: Item) -> None:
        if stopping is not None and stopping():
            raise WritesStopped("the run is stopping: this batch's other targets are not written")
        session = sessions.get()  # as many sessions as threads: one is always free
        try:
            write(session, item)
        finally:
            sessions.put(session)

    from pyspark.util import inheritable_thread_target

    def inheriting(item: Item) -> Callable[[], None]:
        """``run(item)`` with this (the batch's) thread's job group, local properties and
        tags, copied for the item: writes at once must not share one set of properties
        (Spark keeps the running SQL execution's id among them)."""
        target: Callable[[], None] = inheritable_thread_target(spark)(lambda: run(item))
        return target

    with ThreadPoolExecutor(len(sessions_now), thread_name_prefix="sparkcdc-write") as pool:
        futures: list[Future[None]] = [pool.submit(inheriting(item)) for item in items]
        _, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for future in pending:
            future.cancel()
        wait(futures)
    for future in futures:
        error = None if future.cancelled() else future.exception()
        if error is not None:
            raise error

"""Counts that happen in Spark tasks (the source's retries), sent back to the driver.

A partition's read runs in an executor's Python worker, which the driver's metrics cannot
see. A Spark accumulator is the channel: the worker sends its updates when the task ends
and Spark adds them to the driver's value when the task succeeds (a task or stage run
again counts again; a failed task's count is lost, its failure says enough).

The accumulator must reach the reader on the executor, and that reader is unpickled from
the planner's process, not from the driver's: it can only travel inside the data source
class Spark pickles. :func:`counting_sources` makes, per SparkSession, subclasses of the
registered data sources that carry it and are not importable by name, so they are pickled
by value (their accumulator with them). Spark Connect has no accumulators: nothing is
counted there.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from sparkcdc.snapshot.retry import retries_taken

T = TypeVar("T")

#: The retry accumulator of each SparkContext sparkcdc was registered on.
_ACCUMULATORS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def counting_sources(spark: Any, sources: Sequence[type[Any]]) -> list[type[Any]]:
    """``sources`` as classes carrying ``spark``'s retry accumulator (``read_counter``),
    or unchanged where the session has none (Spark Connect)."""
    accumulator = _accumulator(spark)
    if accumulator is None:
        return list(sources)
    return [
        type(
            source.__name__,
            (source,),
            {
                "read_counter": accumulator,
                "__module__": source.__module__,
                # no attribute of that module has this name: pickled by value
                "__qualname__": f"{source.__qualname__}.counting",
            },
        )
        for source in sources
    ]


def counted(counter: Any, read: Callable[[], Iterator[T]]) -> Iterator[T]:
    """The rows of ``read()``, adding the retries this process took while opening and
    reading them to ``counter`` (a Spark accumulator; None: not counted). A Python worker
    runs one task at a time, so the difference is this read's."""
    if counter is None:
        yield from read()
        return
    before = retries_taken()
    try:
        yield from read()
    finally:
        taken = retries_taken() - before
        if taken:
            counter.add(taken)


def source_retries(spark: Any) -> Callable[[], int]:
    """The source's retries in ``spark``'s tasks from now on (0 without an accumulator)."""
    accumulator = _ACCUMULATORS.get(_context(spark))
    if accumulator is None:
        return lambda: 0
    base = int(accumulator.value)
    return lambda: int(accumulator.value) - base


def _accumulator(spark: Any) -> Any:
    context = _context(spark)
    if context is None:
        return None
    found = _ACCUMULATORS.get(context)
    if found is None:
        found = _ACCUMULATORS[context] = context.accumulator(0)
    return found


def _context(spark: Any) -> Any:
    """``spark``'s SparkContext; None on Spark Connect (no accumulators)."""
    try:
        return spark.sparkContext
    except Exception:  # Spark Connect sessions refuse sparkContext
        return None

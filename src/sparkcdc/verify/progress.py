"""What a Spark job of ``verify`` is at, said while it runs: partitions read of how many.

Reading a large source table as of a log position takes minutes, all of it inside one
Spark action the calling thread waits on. Spark knows how far it is: each partition of the
source read is one task of the job's first stage (a partition is a group of the source's
key-range chunks, ``rows-per-partition`` rows: snapshot/partitions.py). So the action
runs in a job group of its own, and a thread beside it asks Spark's status tracker for
that stage's finished tasks every ``interval`` and reports each new count; the last count
is reported once the action returns, so the final "N of N" is always said.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Spark's local property naming the job group (what ``setJobGroup`` sets).
_JOB_GROUP = "spark.jobGroup.id"
_JOB_DESCRIPTION = "spark.job.description"
_INTERRUPT = "spark.job.interruptOnCancel"
_PROPERTIES = (_JOB_GROUP, _JOB_DESCRIPTION, _INTERRUPT)
_groups = itertools.count(1)


def first_stage(tracker: Any, group: str) -> tuple[int, int] | None:
    """(finished tasks, tasks) of the first stage of ``group``'s jobs, the one that reads
    the action's input (later stages aggregate it); None before Spark submitted it."""
    stages = [s for job in tracker.getJobIdsForGroup(group) for s in _stages(tracker, job)]
    if not stages:
        return None
    first = tracker.getStageInfo(min(stages))
    if first is None:
        return None
    return int(first.numCompletedTasks), int(first.numTasks)


def _stages(tracker: Any, job: int) -> list[int]:
    info = tracker.getJobInfo(job)
    return [] if info is None else list(info.stageIds)


def tracked(
    spark: Any,
    description: str,
    action: Callable[[], T],
    report: Callable[[int, int], None],
    interval: float = 1.0,
) -> T:
    """``action()`` (a Spark action), reporting ``(finished, total)`` tasks of its first
    stage each time they change, and once more at the end if the last report was not
    the final count. ``description`` names the job in Spark's UI."""
    context = spark.sparkContext
    group = f"sparkcdc-verify-{next(_groups)}"
    before = {name: context.getLocalProperty(name) for name in _PROPERTIES}
    said: list[tuple[int, int]] = []

    def say(now: tuple[int, int] | None) -> None:
        if now is not None and (not said or now != said[-1]):
            said.append(now)
            report(*now)

    done = threading.Event()

    def watch() -> None:
        tracker = context.statusTracker()
        while not done.wait(interval):
            say(first_stage(tracker, group))

    context.setJobGroup(group, description)
    watcher = threading.Thread(target=watch, name="sparkcdc-verify-progress", daemon=True)
    watcher.start()
    try:
        result = action()
    finally:
        done.set()
        watcher.join()
        for name, value in before.items():  # the caller's group (a running pipeline's)
            context.setLocalProperty(name, value)
    say(first_stage(context.statusTracker(), group))
    return result


__all__ = ["first_stage", "tracked"]

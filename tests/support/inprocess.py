"""Drive a source (snapshot/driver.py) the way Spark does (offsets, partitions, pickled
specs, read), in process and without a SparkSession: fast tests of the source logic on a real
server."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from sparkcdc.snapshot.driver import IncrementalSource, Offset


def run_batches(
    source: IncrementalSource[Any, Any],
    start: Offset | None,
    on_batch: Callable[[list[dict[str, Any]]], None],
    *,
    max_rows: int | None = None,
    between: Callable[[int], None] | None = None,
    write_batches: int = 25,
    max_batches: int = 1_000,
    ends: list[Offset] | None = None,
    batches: int | None = None,
    after_planning: Callable[[int], None] | None = None,
) -> Offset:
    """Run micro-batches until the source has nothing new; return the last offset.

    ``between(n)`` runs after each of the first ``write_batches`` batches (e.g. to write
    to the source while it is read); after that the source must catch up. ``ends`` gets
    each batch's end offset once the batch is read (what Spark would have committed when
    the next planning fails). ``after_planning(n)`` runs between planning batch ``n`` and
    reading it, for its first ``write_batches`` batches (writes then land in the chunks'
    log windows, which the reads must normalise). ``batches``: stop after that many (as a
    stopped query would), caught up or not.
    """
    offset = start if start is not None else source.initial_offset()
    shipped = pickle.dumps(source)  # what executors get: no connection, no caches
    for n in range(max_batches):
        end = source.latest_offset(offset, max_rows)
        if end == offset:
            return offset
        if after_planning is not None and n < write_batches:
            after_planning(n)
        rows: list[dict[str, Any]] = []
        for spec in source.partitions(offset, end):
            executor = pickle.loads(shipped)
            for batch in executor.read(pickle.loads(pickle.dumps(spec))):
                rows.extend(pa.Table.from_batches([batch]).to_pylist())
        on_batch(rows)
        offset = end
        if ends is not None:
            ends.append(end)
        if between is not None and n < write_batches:
            between(n)
        if batches is not None and n + 1 >= batches:
            return offset
    raise AssertionError("the source never caught up")

"""Several DataFrames' rows brought to the driver as Arrow in one Spark action.

``DataFrame.toArrow`` per DataFrame is a Spark job each: planned, analysed, scheduled and
collected on its own, a fixed cost of the driver's that a batch of a 1000-table pipeline
pays per table it changes (issue 62). The frames here have different schemas, so they
cannot be unioned as they are: each is first packed on the executors
(``mapInArrow``) into rows of ``(frame index, Arrow IPC stream of one record batch)``,
the packed frames are unioned (one plan, one job: the frames a sink fetches are narrow
over the batch's cached rows), coalesced to as many tasks as Spark has cores (one task per
frame cost ~20 % more of a 100-frame fetch, measured under load) and collected with one
``toArrow``, and the driver unpacks
each frame's streams into one Arrow table. The unpacked tables share the collected
buffers (no copy), so the memory held is the batch's rows as Arrow, about once.

The caller bounds that memory by what it fetches at once: :func:`fetch_groups` cuts a
batch's frames into groups of at most :data:`ROWS_PER_FETCH` counted rows (a frame with
more, or with no count, is a group of its own), one action per group.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

#: At most this many rows (as the pipeline counted them) are fetched in one action: the
#: driver holds one group's rows as Arrow at a time.
ROWS_PER_FETCH = 500_000
#: The packed rows' schema: which frame, one Arrow IPC stream of its rows.
PACKED = "frame INT, part BINARY"


def fetch_groups(counts: Sequence[int | None], limit: int = ROWS_PER_FETCH) -> list[list[int]]:
    """The indexes of ``counts`` (rows per frame, None: unknown) cut into consecutive groups
    of at most ``limit`` rows; a frame of more rows or of an unknown count is a group
    alone."""
    groups: list[list[int]] = []
    current: list[int] = []
    total = 0
    for index, count in enumerate(counts):
        if count is None or count > limit:
            if current:
                groups.append(current)
                current, total = [], 0
            groups.append([index])
            continue
        if current and total + count > limit:
            groups.append(current)
            current, total = [], 0
        current.append(index)
        total += count
    if current:
        groups.append(current)
    return groups


class _Packer:
    """The executors' half (``mapInArrow``): each record batch of frame ``index`` as one
    row holding its Arrow IPC stream. A class, not a closure: pickled by reference."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            if batch.num_rows:
                yield packed(self.index, batch)


def packed(index: int, batch: Any) -> Any:
    """One row of :data:`PACKED`: ``batch`` (Arrow) as an IPC stream, tagged with the frame
    ``index`` it belongs to (also spark/envelope_fetch.py's)."""
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return pa.RecordBatch.from_arrays(
        [pa.array([index], pa.int32()), pa.array([sink.getvalue().to_pybytes()], pa.binary())],
        names=["frame", "part"],
    )


def unpacked(collected: Any, count: int) -> list[list[Any]]:
    """The Arrow tables of each of ``count`` frames in ``collected`` (rows of
    :data:`PACKED`), in the order collected; they share its buffers (no copy)."""
    import pyarrow as pa

    parts: list[list[Any]] = [[] for _ in range(count)]
    indexes = collected.column("frame").to_pylist()
    streams = collected.column("part")
    for row, index in enumerate(indexes):
        parts[index].append(pa.ipc.open_stream(streams[row].as_buffer()).read_all())
    return parts


def to_arrow(frames: Sequence[Any]) -> list[Any]:
    """Each of ``frames`` (Spark DataFrames) as an Arrow table, in one Spark action."""
    if not frames:
        return []
    if len(frames) == 1:
        return [frames[0].toArrow()]
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    packs = _union([f.mapInArrow(_Packer(i), PACKED) for i, f in enumerate(frames)])
    # as many tasks as the cores, not one per frame's partition: a task's fixed cost (its
    # scheduling, the union's whole plan deserialised, a Python worker's round trip) was
    # most of a many-table batch's job (issue 62)
    cores = max(1, packs.sparkSession.sparkContext.defaultParallelism)
    parts = unpacked(packs.coalesce(cores).toArrow(), len(frames))
    tables = []
    for frame, own in zip(frames, parts, strict=True):
        if own:
            tables.append(pa.concat_tables(own))
        else:
            tables.append(to_arrow_schema(frame.schema).empty_table())
    return tables


def _union(frames: Sequence[Any]) -> Any:
    """The frames unioned pairwise (a plan as deep as log2 of their number: a left-deep
    union of a thousand frames is a thousand nested plan nodes for the analyser)."""
    level = list(frames)
    while len(level) > 1:
        paired = [a.unionAll(b) for a, b in zip(level[::2], level[1::2], strict=False)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]

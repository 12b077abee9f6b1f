"""How many Spark tasks one table's rows of a many-table batch are written with.

A batch of many tables is one DataFrame in as many partitions as the source read it in
(small tables share a task), kept in memory while the sinks write it. Each table's
DataFrame is that batch filtered to the table, so, left as it is, every table's write runs
a task per partition of the whole batch: a batch of 1000 tables in ~30 partitions ran
~30,000 tasks for 100,000 rows, most of them finding no row of their table. Coalesced to
the partitions its own rows need, a table's write runs one task per :data:`ROWS_PER_TASK`
rows, which reads several of the cached batch's partitions in turn. Measured into Delta
(docs/pipelines.md): the snapshot's first batch of 300 tables x 100 rows took 93-96 s
instead of 148-150 s, and of 1000 such tables 369 s instead of 15-18 minutes (the rate of
a run stopped after 185 of them).
"""

from __future__ import annotations

#: Rows worth a Spark task of their own in a table's write: below this, one task's fixed
#: cost (scheduling, deserialising the write's closure and configuration) outweighs the
#: rows' own work.
ROWS_PER_TASK = 100_000


def tasks_for(rows: int) -> int:
    """The tasks a table's ``rows`` (an upper bound) of a batch are written with: at least
    one, one more per :data:`ROWS_PER_TASK` started. A coalesce to more partitions than the
    batch has leaves it as it is."""
    return max(1, -(-rows // ROWS_PER_TASK))

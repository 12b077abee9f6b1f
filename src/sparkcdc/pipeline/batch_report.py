"""What one micro-batch of a pipeline did: the facts metrics, the console and the run state
are built from (docs/operations.md).

Counted on the driver in the runner's one aggregate job per batch; times are the driver's
wall clock (seconds since the epoch), so lags compare them with the source's commit times.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.table import TableId

#: A table's state, from the batch's end offset (snapshot/progress.py).
PENDING, SNAPSHOTTING, STREAMING = "pending", "snapshotting", "streaming"

#: The runner's steps of a batch, in order (``BatchReport.steps``): its offsets read and
#: table events applied; split and counted (the count job); its write plan made; the sink's
#: write returned; its cached rows released; its metrics and run state recorded.
OFFSETS, COUNTED, PLANNED, WRITTEN, RELEASED, RECORDED = (
    "offsets",
    "counted",
    "planned",
    "written",
    "released",
    "recorded",
)


@dataclass(frozen=True)
class TableCounts:
    """One table's changes in a batch (or summed over batches). Snapshot rows are not
    counted as inserts, nor rows read again on demand (a signal) as updates; an update
    counts once although the changelog has two images."""

    snapshot_rows: int = 0
    inserts: int = 0
    updates: int = 0
    deletes: int = 0
    reread_rows: int = 0

    @property
    def changes(self) -> int:
        """Log changes (inserts, updates, deletes)."""
        return self.inserts + self.updates + self.deletes

    @property
    def changelog_rows(self) -> int:
        """Rows in a typed changelog: an update is two (its images)."""
        return (
            self.snapshot_rows + self.inserts + 2 * self.updates + self.deletes + self.reread_rows
        )

    def __add__(self, other: TableCounts) -> TableCounts:
        return TableCounts(
            self.snapshot_rows + other.snapshot_rows,
            self.inserts + other.inserts,
            self.updates + other.updates,
            self.deletes + other.deletes,
            self.reread_rows + other.reread_rows,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "snapshot_rows": self.snapshot_rows,
            "inserts": self.inserts,
            "updates": self.updates,
            "deletes": self.deletes,
            "reread_rows": self.reread_rows,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TableCounts:
        return cls(
            int(data.get("snapshot_rows", 0)),
            int(data.get("inserts", 0)),
            int(data.get("updates", 0)),
            int(data.get("deletes", 0)),
            int(data.get("reread_rows", 0)),
        )


@dataclass
class BatchReport:
    """What one micro-batch did.

    ``row_counts`` are changelog rows per table (an update is two), what sinks are told;
    ``counts`` split them by kind. ``newest_commit`` is the newest commit time of the
    batch's log changes (None: only snapshot rows, or nothing)."""

    batch_id: int
    row_counts: dict[TableId, int]
    source_offset: str | None
    counts: dict[TableId, TableCounts] = field(default_factory=dict)
    newest_commit: float | None = None
    started: float = 0.0  #: foreachBatch was called
    fetched: float = 0.0  #: the batch was read and counted (cached)
    written: float = 0.0  #: the sink's write returned
    #: When each of the runner's steps of the batch ended (``OFFSETS`` ... ``RECORDED``,
    #: the driver's wall clock), filled as they end: where a batch's seconds go on the
    #: driver (``benchmarks.soak --breakdown``). A step the batch skipped is absent.
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def snapshot_rows(self) -> int:
        return sum(c.snapshot_rows for c in self.counts.values())

    @property
    def changes(self) -> int:
        return sum(c.changes for c in self.counts.values())

    @property
    def fetch_lag(self) -> float | None:
        """Flink's ``currentFetchEventTimeLag`` for this batch, in seconds."""
        return None if self.newest_commit is None else max(0.0, self.fetched - self.newest_commit)

    @property
    def emit_lag(self) -> float | None:
        """Flink's ``currentEmitEventTimeLag`` (Debezium's ``MilliSecondsBehindSource``)."""
        return None if self.newest_commit is None else max(0.0, self.written - self.newest_commit)

    @property
    def table_states(self) -> dict[TableId, str]:
        return table_states(self.source_offset)


def table_states(offset: str | None) -> dict[TableId, str]:
    """Each table's state in a source offset (JSON text): ``pending`` (nothing read yet),
    ``snapshotting`` (a chunk cursor), ``streaming`` (its snapshot is done)."""
    from sparkcdc.snapshot.offset import SourceOffset

    if offset is None:
        return {}
    return {
        table: STREAMING if p.done else SNAPSHOTTING if p.started else PENDING
        for table, p in SourceOffset.parse(offset).tables.items()
    }

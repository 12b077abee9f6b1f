"""Changes of a table's columns while its snapshot runs, driven through the real driver
over the fake dialect (docs/design.md, "Chunks read after a change").

A batch's chunks are read after its end P was planned (here: at any S between P and the
log's end then), so an ALTER can land between P and a chunk's read; such a chunk emits
nothing, and the change's own batch has its key range read again. Invariants:
* no key is inserted twice (a chunk read before the change is re-read as upserts);
* every change batch is empty, and the batch before one reads no chunk across it;
* at the end, an upsert consumer of the changelog equals every table.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.driver import IncrementalSource
from tests.support.fake_dialect import FakeDatabase, FakeSettings

from .test_incremental_snapshot_protocol import A, B, interleaved, read_on_executor
from .test_normalize import histories

Consumer = dict[TableId, dict[Any, Row]]


def upsert(consumer: Consumer, rows: list[dict[str, Any]]) -> None:
    """Apply an envelope batch as an upsert target does; inserts must be of new keys."""
    for r in sorted(rows, key=lambda r: (r["_commit_version"], r["after"] is not None)):
        state = consumer.setdefault(TableId(r["database_name"], r["table_name"]), {})
        before = tuple(json.loads(r["before"]).values()) if r["before"] else None
        after = tuple(json.loads(r["after"]).values()) if r["after"] else None
        if r["_change_type"] == "insert":
            assert after is not None and after[0] not in state, f"insert of held key {after}"
        if before is not None:
            state.pop(before[0], None)
        if after is not None:
            state[after[0]] = after


def with_alters(data: st.DataObject, log: list[RowChange]) -> list[RowChange]:
    """``log`` with ALTERs of A and B (changes without images) at random places."""
    out: list[RowChange] = []
    for change in [*log, None]:
        for _ in range(data.draw(st.integers(0, 2), label="alters here")):
            table = A if data.draw(st.booleans(), label="alter A") else B
            out.append(RowChange(table, None, None, 0, 0))
        if change is not None:
            out.append(change)
    return out


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(histories(), histories(), st.data())
def test_chunks_read_after_a_change_are_read_again_and_nothing_is_lost_or_doubled(
    first: tuple[list[dict[int, Row]], list[RowChange]],
    second: tuple[list[dict[int, Row]], list[RowChange]],
    data: st.DataObject,
) -> None:
    log = with_alters(data, interleaved(data, first[1], second[1]))
    config = FakeSettings(
        chunk_size=data.draw(st.integers(1, 8), label="chunk size"),
        rows_per_partition=data.draw(st.integers(1, 16), label="rows per partition"),
        rows_per_batch=data.draw(st.integers(1, 40), label="rows per batch"),
    )
    db = FakeDatabase(log, {A: first[0][0], B: second[0][0]}, config)
    # chunks are read after their batch was planned: at P or later, up to the log's end now
    db.snapshot_at = lambda target, now: data.draw(st.integers(target, now), label="S")
    max_rows = data.draw(st.none() | st.integers(1, 12), label="maxRowsPerTrigger")
    source = IncrementalSource(db)
    offset = source.initial_offset()
    consumer: Consumer = {}
    for _ in range(2_000):
        db.now = data.draw(st.integers(db.now, len(log)), label="writes before planning")
        end = source.latest_offset(offset, max_rows)
        if data.draw(st.booleans(), label="stopped before the batch ran"):
            source = IncrementalSource(db)  # a new run plans from the committed offset again
            end = source.latest_offset(offset, max_rows)
        if end == offset:
            typed = source.parse_offset(offset)
            if (
                db.now == len(log)
                and not typed.snapshotting
                and not any(p.reading for p in typed.tables.values())
            ):
                break
            db.now = min(db.now + 1, len(log))
            continue
        planner = IncrementalSource(db) if data.draw(st.booleans(), label="replan") else source
        specs = planner.partitions(offset, end)
        db.now = data.draw(st.integers(db.now, len(log)), label="writes while reading")
        upsert(consumer, read_on_executor(source, specs))
        offset = end
    else:
        raise AssertionError("the source never caught up")
    for table in (A, B):
        assert consumer.get(table, {}) == db.state(table, len(log)), table

"""The whole Spark-shaped incremental snapshot, simulated on the pure building blocks.

Each micro-batch moves the log position from P_i to P_{i+1}, emits log changes for keys
below each table's cursor as of P_i, and snapshots a few new chunks normalised to P_{i+1}
from random snapshot positions S (before or after P_{i+1}). Invariant from ARCHITECTURE.md:
replaying the emitted changelog from empty gives exactly the source table at every batch
boundary, with no duplicate insert and every pre-image/delete matching the emitted row.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.snapshot.chunks import Chunk, KeyStats, plan_chunks
from sparkcdc.snapshot.emit import changes_to_emit
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.normalize import apply_overrides, backward_overrides, forward_overrides
from sparkcdc.snapshot.progress import TableProgress

from .test_normalize import histories, key_of


def replay(state: dict[Any, Row], kind: ChangeType, row: Row) -> None:
    key = key_of(row)
    if kind in (ChangeType.INSERT, ChangeType.UPDATE_POSTIMAGE):
        assert key not in state, f"duplicate insert of {key}"
        state[key] = row
    else:
        assert state.get(key) == row, f"{kind.value} of {row} does not match {state.get(key)}"
        del state[key]


@settings(max_examples=300)
@given(histories(), st.data())
def test_replayed_changelog_equals_source_at_every_batch(
    history: tuple[list[dict[int, Row]], list[RowChange]], data: st.DataObject
) -> None:
    states, changes = history
    order = KeyOrder()
    progress = TableProgress()
    position = data.draw(st.integers(0, len(changes)), label="start position")
    consumer: dict[Any, Row] = {}
    chunk_size = data.draw(st.integers(1, 8), label="chunk size")
    while True:
        if progress.done:  # once snapshotted, the stream catches up with the log
            target = len(changes)
        else:
            target = data.draw(st.integers(position, len(changes)), label="batch end")
        # 1. log changes in (P_i, P_{i+1}] for keys emitted as of P_i
        at_start = progress

        def emitted(row: Row, at_start: TableProgress = at_start) -> bool:
            return order.emitted(row[0], at_start)

        for change in changes[position:target]:
            for kind, row in changes_to_emit(change, emitted):
                replay(consumer, kind, row)
        # 2. new chunks, split on the data the driver sees when planning (position target)
        if not progress.done:
            keys = sorted(states[target])
            stats = KeyStats(keys[0] if keys else None, keys[-1] if keys else None, len(keys))

            def next_end(lo: Any, size: int, keys: list[int] = keys) -> Any:
                above = [k for k in keys if lo is None or k >= lo]
                return above[size] if len(above) > size else None

            chunks = plan_chunks(
                progress.cursor,
                progress.started,
                stats,
                chunk_size,
                data.draw(st.integers(1, 3), label="chunks per batch"),
                None,
                next_end,
            )
            for chunk in chunks:
                s = data.draw(st.integers(0, len(changes)), label="snapshot position S")
                window = (
                    forward_overrides(changes[s:target], key_of)
                    if s <= target
                    else backward_overrides(changes[target:s], key_of)
                )
                snapshot_rows = [r for k, r in states[s].items() if order.in_chunk(k, chunk)]

                def in_range(row: Row, chunk: Chunk = chunk) -> bool:
                    return order.in_chunk(row[0], chunk)

                for row in apply_overrides(snapshot_rows, window, key_of, in_range):
                    replay(consumer, ChangeType.INSERT, row)
            last = chunks[-1]
            progress = (
                TableProgress.finished()
                if last.is_last
                else TableProgress(started=True, cursor=last.hi)
            )
        position = target
        expected = {k: r for k, r in states[position].items() if order.emitted(k, progress)}
        assert consumer == expected
        if progress.done and position == len(changes):
            break
    assert consumer == states[-1]


def test_plan_chunks_even_steps_cover_the_range() -> None:
    stats = KeyStats(1, 100, 100)
    chunks = plan_chunks(None, False, stats, 30, 10, 30, lambda lo, n: None)
    assert chunks == [Chunk(None, 31), Chunk(31, 61), Chunk(61, 91), Chunk(91, None)]


def test_plan_chunks_empty_table_is_one_open_chunk() -> None:
    assert plan_chunks(None, False, KeyStats(None, None, 0), 10, 5, None, lambda lo, n: 1) == [
        Chunk(None, None)
    ]

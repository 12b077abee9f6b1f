"""The Spark-shaped incremental snapshot, driven through the real driver over a fake dialect.

Each micro-batch asks the driver (snapshot/driver.py) for its end offset, plans its
partitions and reads them as Spark would (pickled specs on an executor copy of the source):
log changes for keys below each table's cursor, and new chunks normalised to the batch's end
from random snapshot positions S (before or after it). Writes arrive between and during
batches. Invariant (docs/design.md): replaying the emitted changelog from empty gives exactly
the source tables at every batch boundary, with no duplicate insert and every pre-image or
delete matching the emitted row; ``_commit_version`` orders the changes of a key.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.chunks import Chunk, KeyStats, plan_chunks
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.partitions import (
    ChunkRead,
    LogRead,
    SmallReads,
    chunk_partitions,
    widened,
)
from tests.support.fake_dialect import Count, FakeDatabase, FakeSettings, FakeTable

from .test_normalize import histories

A, B = TableId("db", "a"), TableId("db", "b")
Consumer = dict[TableId, dict[Any, Row]]


def interleaved(
    data: st.DataObject, first: list[RowChange], second: list[RowChange]
) -> list[RowChange]:
    """Table A's and table B's changes merged into one log in a random order."""
    a = [RowChange(A, c.before, c.after, 0, 0) for c in first]
    b = [RowChange(B, c.before, c.after, 0, 0) for c in second]
    merged: list[RowChange] = []
    while a or b:
        take_a = bool(a) and (not b or data.draw(st.booleans()))
        merged.append((a if take_a else b).pop(0))
    return merged


def replay(
    consumer: Consumer, rows: list[dict[str, Any]], envelope: bool, typed: TableId = A
) -> None:
    """Apply one batch's changelog rows in ``_commit_version`` order, as sinks do (a
    stream that is not an envelope has the rows of table ``typed``)."""
    images = []
    for r in rows:
        if envelope:
            table = TableId(r["database_name"], r["table_name"])
            before = tuple(json.loads(r["before"]).values()) if r["before"] else None
            after = tuple(json.loads(r["after"]).values()) if r["after"] else None
            kinds = {"insert": [("+", after)], "delete": [("-", before)]}
            for sign, row in kinds.get(r["_change_type"], [("-", before), ("+", after)]):
                images.append((r["_commit_version"], sign == "+", table, row))
        else:
            row = (r["k"], r["v"])
            plus = r["_change_type"] in ("insert", "update_postimage")
            images.append((r["_commit_version"], plus, typed, row))
    # a key's pre-image/delete sorts before its post-image/insert of the same version
    for _, plus, table, row in sorted(images, key=lambda i: (i[0], i[1])):
        assert row is not None
        state = consumer.setdefault(table, {})
        if plus:
            assert row[0] not in state, f"duplicate insert of {row} in {table}"
            state[row[0]] = row
        else:
            assert state.get(row[0]) == row, f"delete of {row} does not match {state.get(row[0])}"
            del state[row[0]]


def read_on_executor(source: IncrementalSource[Any, Any], specs: list[Any]) -> list[Any]:
    """The batch's rows, each partition read from a pickled copy of its spec (as Spark
    ships it to an executor)."""
    return [
        row
        for spec in specs
        for batch in source.read(pickle.loads(pickle.dumps(spec)))
        for row in pa.Table.from_batches([batch]).to_pylist()
    ]


def check_emitted(
    source: IncrementalSource[Any, Any], db: FakeDatabase, consumer: Consumer, offset: Any
) -> list[TableId]:
    """The invariant at a batch boundary: every table's replay equals its rows as of the
    offset's log position, for the keys the offset says were emitted. Returns the
    offset's tables."""
    typed = source.parse_offset(offset)
    order = source.dialect.key_order(FakeTable(A))
    for table, progress in typed.tables.items():
        state = db.state(table, typed.log.n)
        expected = {k: r for k, r in state.items() if order.emitted(k, progress)}
        assert consumer.get(table, {}) == expected, f"{table} at {typed.log}"
    return list(typed.tables)


@settings(max_examples=200, deadline=None)
@given(histories(), histories(), st.data())
def test_replayed_changelog_equals_source_at_every_batch(
    first: tuple[list[dict[int, Row]], list[RowChange]],
    second: tuple[list[dict[int, Row]], list[RowChange]],
    data: st.DataObject,
) -> None:
    two = data.draw(st.booleans(), label="two tables (envelope)")
    log = interleaved(data, first[1], second[1] if two else [])
    initial = {A: first[0][0]} | ({B: second[0][0]} if two else {})
    config = FakeSettings(
        chunk_size=data.draw(st.integers(1, 8), label="chunk size"),
        rows_per_partition=data.draw(st.integers(1, 16), label="rows per partition"),
        rows_per_batch=data.draw(st.integers(1, 40), label="rows per batch"),
    )
    db = FakeDatabase(log, initial, config, now=data.draw(st.integers(0, len(log))))
    db.readers = data.draw(st.none() | st.integers(1, 6), label="readers told apart")
    # tables read as one chunk (a keyless table with no chunk key column): the same rule
    db.one_chunk = frozenset(t for t in initial if data.draw(st.booleans(), label=f"{t} one chunk"))
    db.snapshot_at = lambda target, now: data.draw(st.integers(0, now), label="snapshot at S")
    max_rows = data.draw(st.none() | st.integers(1, 12), label="maxRowsPerTrigger")
    source = IncrementalSource(db)
    offset = source.initial_offset()
    consumer: Consumer = {}
    for _ in range(1_000):
        db.now = data.draw(st.integers(db.now, len(log)), label="writes before planning")
        end = source.latest_offset(offset, max_rows)
        if end == offset:  # nothing new: Spark runs no batch
            if db.now == len(log):
                break
            db.now += 1  # the next write arrives
            continue
        # the partitions are planned again in another process (or after a restart)
        planner = IncrementalSource(db) if data.draw(st.booleans(), label="replan") else source
        specs = planner.partitions(offset, end)
        if db.readers is not None:  # log pieces take at most as many readers themselves
            chunk_reads = [s for s in specs if not isinstance(s, LogRead)]
            assert len(chunk_reads) <= max(1, db.readers - (len(specs) - len(chunk_reads)))
        db.now = data.draw(st.integers(db.now, len(log)), label="writes while reading")
        rows = read_on_executor(source, specs)
        replay(consumer, rows, envelope=two)
        offset = end
        check_emitted(source, db, consumer, offset)
    else:
        raise AssertionError("the source never caught up")
    for table in initial:
        assert consumer.get(table, {}) == db.state(table, len(log))


def test_a_position_sorts_between_the_changes_around_it() -> None:
    assert Count(3).version > 2 * 2 + 1 and Count(3).version < 2 * 3 + 1


def test_plan_chunks_even_steps_cover_the_range() -> None:
    stats = KeyStats(1, 100, 100)
    chunks = plan_chunks(None, False, stats, 30, 10, 30, lambda lo, n: None)
    assert chunks == [Chunk(None, 31), Chunk(31, 61), Chunk(61, 91), Chunk(91, None)]


def test_plan_chunks_empty_table_is_one_open_chunk() -> None:
    assert plan_chunks(None, False, KeyStats(None, None, 0), 10, 5, None, lambda lo, n: 1) == [
        Chunk(None, None)
    ]


@settings(max_examples=150, deadline=None)
@given(histories(), histories(), st.data())
def test_a_table_added_between_restarts_is_snapshotted_while_the_other_goes_on(
    first: tuple[list[dict[int, Row]], list[RowChange]],
    second: tuple[list[dict[int, Row]], list[RowChange]],
    data: st.DataObject,
) -> None:
    """``scan.newly-added-table.enabled``: B exists (and changes) all along but matches the
    options only after a restart; from that restart it is snapshotted while A continues
    from the checkpoint, and both replay to their tables at every batch boundary. A later
    restart that no longer matches A drops A from the offset and B goes on."""
    log = interleaved(data, first[1], second[1])
    config = FakeSettings(
        chunk_size=data.draw(st.integers(1, 8), label="chunk size"),
        rows_per_batch=data.draw(st.integers(1, 40), label="rows per batch"),
        newly_added_tables=True,
    )
    db = FakeDatabase(log, {A: first[0][0], B: second[0][0]}, config, hidden=frozenset({B}))
    db.snapshot_at = lambda target, now: data.draw(st.integers(0, now), label="snapshot at S")
    max_rows = data.draw(st.none() | st.integers(1, 12), label="maxRowsPerTrigger")
    restarts = sorted(data.draw(st.lists(st.integers(0, 12), min_size=2, max_size=2)))
    source = IncrementalSource(db)
    offset = source.initial_offset()
    consumer: Consumer = {}
    for number in range(1_000):
        if number == restarts[0] and db.hidden:  # B matches from now on
            db.hidden = frozenset()
            source = IncrementalSource(db)
        elif number == restarts[1] and not db.hidden and len(log) % 2:  # A no longer does
            db.hidden = frozenset({A})
            source = IncrementalSource(db)
            consumer.pop(A, None)
        db.now = data.draw(st.integers(db.now, len(log)), label="writes before planning")
        end = source.latest_offset(offset, max_rows)
        if end == offset:
            if db.now == len(log) and number > restarts[1]:
                break
            db.now = min(db.now + 1, len(log))
            continue
        specs = source.partitions(offset, end)
        db.now = data.draw(st.integers(db.now, len(log)), label="writes while reading")
        rows = read_on_executor(source, specs)
        replay(consumer, rows, source.envelope, next(iter(source.tables)))
        offset = end
        assert set(check_emitted(source, db, consumer, offset)) == set(source.tables)
    else:
        raise AssertionError("the source never caught up")
    for table in source.tables:
        assert consumer.get(table, {}) == db.state(table, len(log))


@settings(max_examples=200, deadline=None)
@given(histories(), histories(), st.data())
def test_a_table_created_while_streaming_is_captured_from_the_batch_that_sees_it(
    first: tuple[list[dict[int, Row]], list[RowChange]],
    second: tuple[list[dict[int, Row]], list[RowChange]],
    data: st.DataObject,
) -> None:
    """``scan.newly-added-table.enabled`` in the envelope: B is created at a random point
    of the log while A streams. The batch whose range holds its creation discovers it and
    snapshots it from that batch's start, with no restart; reads run on an executor copy
    of the source made before B existed. Both replay to their tables at every boundary."""
    log = interleaved(data, first[1], second[1])
    config = FakeSettings(
        chunk_size=data.draw(st.integers(1, 8), label="chunk size"),
        rows_per_batch=data.draw(st.integers(1, 40), label="rows per batch"),
        newly_added_tables=True,
        envelope=True,
    )
    created = data.draw(st.integers(1, max(1, len(log))), label="B created at")
    db = FakeDatabase(log, {A: first[0][0], B: second[0][0]}, config, created={B: created})
    db.snapshot_at = lambda target, now: data.draw(st.integers(0, now), label="snapshot at S")
    max_rows = data.draw(st.none() | st.integers(1, 12), label="maxRowsPerTrigger")
    source = IncrementalSource(db)
    offset = source.initial_offset()
    # what Spark ships to executors when the query starts (the fake database itself,
    # with its generated draws, cannot be pickled)
    executor = IncrementalSource.__new__(IncrementalSource)
    executor.__setstate__({**source.__getstate__(), "_tables": dict(source.tables)})
    consumer: Consumer = {}
    for _ in range(1_000):
        db.now = data.draw(st.integers(db.now, len(log)), label="writes before planning")
        end = source.latest_offset(offset, max_rows)
        if end == offset:
            if db.now == len(log) and (B in source.tables or created > len(log)):
                break
            db.now = min(db.now + 1, len(log))
            continue
        specs = source.partitions(offset, end)
        db.now = data.draw(st.integers(db.now, len(log)), label="writes while reading")
        replay(consumer, read_on_executor(executor, specs), envelope=True)
        offset = end
        assert set(check_emitted(source, db, consumer, offset)) == set(source.tables)
    else:
        raise AssertionError("the source never caught up")
    assert set(source.tables) == ({A, B} if created <= len(log) else {A})
    for table in source.tables:
        assert consumer.get(table, {}) == db.state(table, len(log))


def test_without_the_option_new_tables_are_left_out_and_missing_ones_fail() -> None:
    rows = {1: (1, 1)}
    db = FakeDatabase([], {A: rows, B: rows}, FakeSettings(), hidden=frozenset({B}))
    offset = IncrementalSource(db).initial_offset()
    db.hidden = frozenset()
    grown = IncrementalSource(db)
    assert set(grown.parse_offset(offset).tables) == {A}  # warned, not captured
    db.hidden = frozenset({A})
    with pytest.raises(SchemaError, match=r"scan\.newly-added-table\.enabled"):
        IncrementalSource(db).parse_offset(offset)


def test_while_the_pause_file_exists_nothing_is_planned_then_the_stream_goes_on(
    tmp_path: Path,
) -> None:
    """``pause.file``: with the file there, a source with a snapshot and writes waiting
    plans no batch (Spark then runs none, so a stop can wait for an idle query); without
    it, the batches pick up where they were and replay to the table."""
    pause = tmp_path / "pause"
    initial = {k: (k, 0) for k in range(10)}
    log = [RowChange(A, None, (k, 1), 0, 0) for k in range(10, 20)]
    db = FakeDatabase(
        log,
        {A: initial},
        FakeSettings(chunk_size=2, rows_per_batch=2, pause_file=str(pause)),
        now=5,
    )
    source = IncrementalSource(db)
    offset = source.initial_offset()
    consumer: Consumer = {}
    for step in range(100):
        if step == 2:
            pause.touch()
        if step == 4:
            db.now = len(log)  # the rest is written while paused
        if step == 6:
            pause.unlink()
        end = source.latest_offset(offset, None)
        if pause.exists():
            assert end == offset
            continue
        if end == offset:
            if step > 6:
                break
            continue
        replay(consumer, read_on_executor(source, source.partitions(offset, end)), False)
        offset = end
    assert consumer[A] == db.state(A, len(log))


def test_small_tables_share_a_partition_and_big_ones_keep_their_own() -> None:
    """Chunks of several small tables go into one partition (a Spark task costs more than
    reading them); full groups of a big table's chunks keep partitions of their own."""
    small = {k: (k, 0) for k in range(3)}
    big = {k: (k, 0) for k in range(40)}
    tables = {TableId("db", f"s{i}"): small for i in range(5)} | {A: big}
    config = FakeSettings(chunk_size=4, rows_per_partition=16)  # 4 chunks per partition
    source = IncrementalSource(FakeDatabase([], tables, config))
    start = source.initial_offset()
    specs = source.partitions(start, source.latest_offset(start, None))
    shapes = [
        [(p.table.table_id.table, len(p.chunks)) for p in s.parts]
        if isinstance(s, SmallReads)
        else [(s.table.table_id.table, len(s.chunks))]
        for s in specs
        if isinstance(s, SmallReads | ChunkRead)
    ]
    # a: 10 chunks -> two partitions of 4, its rest of 2 packed with s0 and s1
    assert shapes == [
        [("a", 4)],
        [("a", 4)],
        [("a", 2), ("s0", 1), ("s1", 1)],
        [("s2", 1), ("s3", 1), ("s4", 1)],
    ]
    assert [s.reader for s in specs] == [0, 1, 2, 3]
    rows = read_on_executor(source, specs)
    assert len(rows) == 40 + 5 * 3


def test_a_batch_never_has_more_chunk_readers_than_the_database_tells_apart() -> None:
    """MySQL tells concurrent binlog readers apart by server id; two under one id knock
    each other off. A batch's chunk partitions grow instead (at scale: 65 partitions of
    a 10^8-row batch against 64 ids)."""
    big = {k: (k, 0) for k in range(400)}
    tables = {TableId("db", f"s{i}"): {0: (0, 0)} for i in range(7)} | {A: big}
    config = FakeSettings(chunk_size=4, rows_per_partition=4)  # 1 chunk per partition
    for readers in (None, 1, 3, 16, 200):
        source = IncrementalSource(FakeDatabase([], tables, config, readers=readers))
        start = source.initial_offset()
        specs = source.partitions(start, source.latest_offset(start, None))
        assert len(specs) == (107 if readers is None or readers >= 107 else readers)
        assert [s.reader for s in specs] == list(range(len(specs)))
        assert len(read_on_executor(source, specs)) == 400 + 7


@settings(max_examples=300)
@given(st.lists(st.integers(0, 50), max_size=12), st.integers(1, 8), st.integers(1, 20))
def test_widened_partitions_fit_the_readers(counts: list[int], chunks: int, readers: int) -> None:
    wider = widened(chunks, counts, readers)
    assert wider >= chunks
    assert chunk_partitions(counts, wider) <= readers
    if chunk_partitions(counts, chunks) <= readers:  # nothing to widen
        assert wider == chunks

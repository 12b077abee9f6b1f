"""Keyless chunks normalised as multisets (``snapshot/multiset.py``), checked with hypothesis.

Histories run over *physical* rows (ids the log never shows): inserts, deletes and updates
of one row, with tiny value domains so identical rows are common, and updates that move a
row's chunk key across chunk bounds. The log only carries images. A chunk read at any
position and normalised to any other must equal the table there, restricted to the chunk,
as a multiset.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Hashable, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.keys import PartitionKeys
from sparkcdc.snapshot.multiset import (
    MultisetDelta,
    apply_delta,
    as_counter,
    backward_delta,
    forward_delta,
    row_identity,
    visibility_delta,
    window_touches,
)
from sparkcdc.snapshot.window import apply_window, fold_window

TABLE = TableId("db", "t")


def build_history(
    seed: int, initial: int, steps: int
) -> tuple[list[dict[int, Row]], list[tuple[int, RowChange]]]:
    """States after each change (``states[i]``: after ``i`` changes, by physical row id) and
    the changes with the physical row each touched."""
    rng = random.Random(seed)
    state: dict[int, Row] = {i: (rng.randrange(4), rng.randrange(2)) for i in range(initial)}
    states, changes, next_id = [dict(state)], [], initial
    for version in range(steps):
        kind = rng.choice(["insert", "delete", "update", "update"]) if state else "insert"
        if kind == "insert":
            row_id, next_id = next_id, next_id + 1
            state[row_id] = (rng.randrange(4), rng.randrange(2))
            change = RowChange(TABLE, None, state[row_id], version, 0)
        else:
            row_id = rng.choice(sorted(state))
            before = state.pop(row_id)
            after = None
            if kind == "update":
                after = (rng.randrange(4), rng.randrange(2))
                state[row_id] = after
            change = RowChange(TABLE, before, after, version, 0)
        changes.append((row_id, change))
        states.append(dict(state))
    return states, changes


def chunk_of(state: Mapping[int, Row], lo: int, hi: int) -> list[Row]:
    return [r for r in state.values() if lo <= r[0] < hi]


def in_range(lo: int, hi: int):  # type: ignore[no-untyped-def]
    return lambda row: lo <= row[0] < hi


histories = st.tuples(
    st.integers(0, 2**32), st.integers(0, 8), st.integers(0, 30), st.randoms(use_true_random=False)
)


@settings(max_examples=400, deadline=None)
@given(histories, st.integers(0, 4), st.integers(1, 5))
def test_forward_and_backward_reach_the_target(
    history: tuple[int, int, int, random.Random], lo: int, width: int
) -> None:
    seed, initial, steps, rng = history
    states, changes = build_history(seed, initial, steps)
    s, p = rng.randrange(steps + 1), rng.randrange(steps + 1)
    snapshot = chunk_of(states[s], lo, lo + width)
    rng.shuffle(snapshot)  # a chunk's rows come in any order
    window = [c for _, c in changes]
    if s <= p:
        delta = forward_delta(window[s:p], in_range(lo, lo + width))
    else:
        delta = backward_delta(window[p:s], in_range(lo, lo + width))
    got = as_counter(apply_delta(snapshot, delta))
    assert got == as_counter(chunk_of(states[p], lo, lo + width))


@settings(max_examples=300, deadline=None)
@given(histories, st.lists(st.integers(1, 3), min_size=1, max_size=4))
def test_chunks_read_at_different_positions_make_the_table(
    history: tuple[int, int, int, random.Random], widths: list[int]
) -> None:
    """Rows whose chunk key changes while the chunks are read (each at its own position)
    are neither lost nor doubled: every chunk equals the table at P in its range."""
    seed, initial, steps, rng = history
    states, changes = build_history(seed, initial, steps)
    window = [c for _, c in changes]
    p = rng.randrange(steps + 1)
    bounds = [-1]
    for width in widths:
        bounds.append(bounds[-1] + width)
    bounds.append(10)
    got: Counter[Hashable] = Counter()
    for lo, hi in itertools.pairwise(bounds):
        s = rng.randrange(steps + 1)
        if s <= p:
            delta = forward_delta(window[s:p], in_range(lo, hi))
        else:
            delta = backward_delta(window[p:s], in_range(lo, hi))
        got.update(as_counter(apply_delta(chunk_of(states[s], lo, hi), delta)))
    assert got == as_counter(states[p].values())


@settings(max_examples=400, deadline=None)
@given(histories, st.integers(0, 4), st.integers(1, 5))
def test_visibility_sets_reach_the_target(
    history: tuple[int, int, int, random.Random], lo: int, width: int
) -> None:
    """A snapshot sees a set of changes closed per physical row (a change of a row waits for
    the one before it to be visible); the target takes a prefix in log order."""
    seed, initial, steps, rng = history
    states, changes = build_history(seed, initial, steps)
    p = rng.randrange(steps + 1)
    blocked: set[int] = set()
    seen = []
    for row_id, _ in changes:
        visible = row_id not in blocked and rng.random() < 0.6
        if not visible:
            blocked.add(row_id)
        seen.append(visible)
    snapshot_state = dict(states[0])
    for (row_id, change), visible in zip(changes, seen, strict=True):
        if visible:
            if change.after is None:
                del snapshot_state[row_id]
            else:
                snapshot_state[row_id] = change.after
    flagged = [(c, v, i < p) for i, ((_, c), v) in enumerate(zip(changes, seen, strict=True))]
    delta = visibility_delta(flagged, in_range(lo, lo + width))
    got = as_counter(apply_delta(chunk_of(snapshot_state, lo, lo + width), delta))
    assert got == as_counter(chunk_of(states[p], lo, lo + width))


@settings(max_examples=300, deadline=None)
@given(histories)
def test_a_table_read_as_one_chunk_reaches_the_target(
    history: tuple[int, int, int, random.Random],
) -> None:
    """A keyless table with no chunk key column (``PartitionKeys.of_one_chunk``): its one
    chunk holds every row and every image of the window, read at S and folded to P through
    the readers' own ``fold_window``/``apply_window``, forward or backward."""
    seed, initial, steps, rng = history
    states, changes = build_history(seed, initial, steps)
    keys = PartitionKeys.of_one_chunk(lambda row: (), (Chunk(),))
    s, p = rng.randrange(steps + 1), rng.randrange(steps + 1)
    window = [c for _, c in changes]
    folded = fold_window(
        window[s:p] if s <= p else window[p:s], s <= p, keys.key_of, keys.in_partition, True
    )
    # the one chunk keeps every change of the window: its fold is the whole table's net
    # change from S to P, value by value (a change it dropped would be missing here)
    net = Counter(states[p].values())
    net.subtract(Counter(states[s].values()))
    assert isinstance(folded, MultisetDelta)
    assert {folded.rows[i]: n for i, n in folded.counts.items() if n} == {
        row: n for row, n in net.items() if n
    }
    snapshot = list(states[s].values())
    rng.shuffle(snapshot)
    got = as_counter(apply_window(snapshot, folded, keys.key_of, keys.in_partition))
    assert got == as_counter(states[p].values())
    with pytest.raises(AssertionError, match="read whole"):
        PartitionKeys.of_one_chunk(lambda row: (), (Chunk(None, 3),))


def test_deleting_one_of_two_identical_rows_leaves_one() -> None:
    row = (1, 0)
    delete = RowChange(TABLE, row, None, 1, 0)
    everything = in_range(0, 10)
    assert list(apply_delta([row, row], forward_delta([delete], everything))) == [row]
    update = RowChange(TABLE, row, (1, 1), 2, 0)
    assert Counter(apply_delta([row, row], forward_delta([update], everything))) == Counter(
        {row: 1, (1, 1): 1}
    )
    assert list(apply_delta([row], backward_delta([delete], everything))) == [row, row]


def test_a_removal_the_snapshot_cannot_hold_raises() -> None:
    delete = RowChange(TABLE, (1, 0), None, 1, 0)
    with pytest.raises(SparkCdcError, match=r"db\.t: the log removes a row"):
        list(apply_delta([(1, 1)], forward_delta([delete], in_range(0, 10)), "db.t"))


def test_row_identity_treats_equal_values_as_one_row() -> None:
    nan = float("nan")
    assert row_identity((nan, [1, {"b": 2, "a": [3]}])) == row_identity(
        (float("nan"), [1, {"a": [3], "b": 2}])
    )
    assert row_identity((bytearray(b"x"),)) == row_identity((b"x",))
    assert row_identity((1, None)) != row_identity((1, 0))
    delta = MultisetDelta()
    delta.add((nan,), -1)
    assert list(apply_delta([(float("nan"),), (1.0,)], delta)) == [(1.0,)]


def test_window_touches_only_the_chunks_range() -> None:
    move = RowChange(TABLE, (1, 0), (7, 0), 1, 0)
    assert window_touches([move], in_range(0, 2))
    assert window_touches([move], in_range(5, 8))
    assert not window_touches([move], in_range(2, 7))


@settings(max_examples=300, deadline=None)
@given(histories, st.lists(st.integers(1, 3), min_size=1, max_size=4))
def test_a_partitions_window_applied_chunk_by_chunk(
    history: tuple[int, int, int, random.Random], widths: list[int]
) -> None:
    """A partition's window is folded once for all its chunks (``snapshot/window.py``)
    and applied to each chunk's rows with ``within`` the chunk: the chunks together are
    the partition at the target, as the whole partition patched at once is."""
    seed, initial, steps, rng = history
    states, changes = build_history(seed, initial, steps)
    window = [c for _, c in changes]
    s, p = rng.randrange(steps + 1), rng.randrange(steps + 1)
    bounds = [0]
    for width in widths:
        bounds.append(bounds[-1] + width)
    partition = in_range(bounds[0], bounds[-1])
    forward = s <= p
    folded = fold_window(
        window[s:p] if forward else window[p:s], forward, lambda r: r, partition, True
    )
    by_chunk: Counter[Hashable] = Counter()
    for lo, hi in itertools.pairwise(bounds):
        chunk = in_range(lo, hi)
        by_chunk.update(as_counter(apply_window(chunk_of(states[s], lo, hi), folded, repr, chunk)))
    whole = apply_window(chunk_of(states[s], bounds[0], bounds[-1]), folded, repr, partition)
    expected = as_counter(chunk_of(states[p], bounds[0], bounds[-1]))
    assert by_chunk == expected
    assert as_counter(whole) == expected
    assert bool(folded) == (as_counter(chunk_of(states[s], bounds[0], bounds[-1])) != expected)

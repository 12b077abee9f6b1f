"""window_overrides: a chunk read at an unknown point inside a low/high watermark window
is normalised to any target, before, inside or after the window (random histories)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.normalize import apply_overrides, window_overrides

TABLE = TableId("db", "t")
KEYS = 6


def key_of(row: Row) -> Any:
    return row[0]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[list[RowChange]], list[dict[int, Row]]]:
    """Transactions of random inserts/updates/key moves/deletes, and the state after each.
    Change versions are 10 * transaction + i, so transaction boundary t has version 10 * t."""
    state: dict[int, Row] = {}
    states = [dict(state)]
    transactions: list[list[RowChange]] = []
    for t in range(draw(st.integers(0, 12))):
        changes: list[RowChange] = []
        for i in range(draw(st.integers(1, 3))):
            k = draw(st.integers(0, KEYS - 1))
            value = draw(st.integers(0, 9))
            version = 10 * (t + 1) + i
            if k not in state:
                after = (k, value)
                state[k] = after
                changes.append(RowChange(TABLE, None, after, version, 0))
            elif draw(st.booleans()):
                before = state.pop(k)
                changes.append(RowChange(TABLE, before, None, version, 0))
            else:
                before = state.pop(k)
                new_key = draw(st.integers(0, KEYS - 1))
                if new_key in state:
                    new_key = k
                after = (new_key, value)
                state[new_key] = after
                changes.append(RowChange(TABLE, before, after, version, 0))
        transactions.append(changes)
        states.append(dict(state))
    return transactions, states


@settings(max_examples=400, deadline=None)
@given(histories(), st.data())
def test_chunk_read_inside_the_window_normalises_to_any_target(
    history: tuple[list[list[RowChange]], list[dict[int, Row]]], data: st.DataObject
) -> None:
    transactions, states = history
    n = len(transactions)
    low = data.draw(st.integers(0, n))
    read_at = data.draw(st.integers(low, n))  # the SELECT saw this state; nobody knows which
    high = data.draw(st.integers(read_at, n))
    target = data.draw(st.integers(0, n))
    start, end = min(low, target), max(high, target)
    window = [c for t in transactions[start:end] for c in t]
    in_range = (lambda row: row[0] < 4) if data.draw(st.booleans()) else (lambda row: True)
    chunk = [r for r in states[read_at].values() if in_range(r)]

    overrides = window_overrides(window, key_of, 10 * (target + 1))
    result = sorted(apply_overrides(chunk, overrides, key_of, in_range))

    assert result == sorted(r for r in states[target].values() if in_range(r))

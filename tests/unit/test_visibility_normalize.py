"""Normalising a snapshot that saw a *set* of transactions (PostgreSQL) to a log position.

Random histories of committed transactions over a few keys (inserts, updates, key moves,
deletes), a random MVCC snapshot that saw some of them (writers of one key are visible in
commit order, as row locks and unique indexes make them) and a random target position:
the snapshot's rows with ``visibility_overrides`` applied must be exactly the rows at the
target.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.normalize import (
    apply_overrides,
    upsert_visibility_overrides,
    visibility_overrides,
)

T = TableId("s", "t")
KEYS = 6


def key_of(row: Row) -> Any:
    return row[0]


@st.composite
def histories(draw: st.DrawFn) -> tuple[dict[int, Row], list[list[RowChange]]]:
    """An initial table and transactions (each a list of changes) in commit order."""
    state: dict[int, Row] = {
        k: (k, 0) for k in draw(st.sets(st.integers(0, KEYS - 1), max_size=KEYS))
    }
    initial = dict(state)
    transactions: list[list[RowChange]] = []
    stamp = 1
    for _ in range(draw(st.integers(0, 8))):
        changes = []
        for _ in range(draw(st.integers(1, 3))):
            k = draw(st.integers(0, KEYS - 1))
            stamp += 1
            if k not in state:
                change = RowChange(T, None, (k, stamp), stamp, 0)
            else:
                op = draw(st.sampled_from(["update", "delete", "move"]))
                free = [j for j in range(KEYS) if j not in state]
                if op == "move" and free:
                    change = RowChange(T, state[k], (draw(st.sampled_from(free)), stamp), stamp, 0)
                elif op == "delete":
                    change = RowChange(T, state[k], None, stamp, 0)
                else:
                    change = RowChange(T, state[k], (k, stamp), stamp, 0)
            if change.before is not None:
                del state[key_of(change.before)]
            if change.after is not None:
                state[key_of(change.after)] = change.after
            changes.append(change)
        transactions.append(changes)
    return initial, transactions


def keys_of(transaction: list[RowChange]) -> set[Any]:
    return {key_of(r) for c in transaction for r in (c.before, c.after) if r is not None}


def replay(initial: dict[int, Row], transactions: list[list[RowChange]]) -> dict[int, Row]:
    rows = dict(initial)
    for transaction in transactions:
        for change in transaction:
            if change.before is not None:
                del rows[key_of(change.before)]
            if change.after is not None:
                rows[key_of(change.after)] = change.after
    return rows


@settings(max_examples=400, deadline=None)
@given(histories(), st.data())
def test_a_snapshot_of_visible_transactions_normalises_to_the_target(
    history: tuple[dict[int, Row], list[list[RowChange]]], data: st.DataObject
) -> None:
    initial, transactions = history
    # which transactions the snapshot saw: one that shares a key with an earlier unseen
    # transaction cannot have become visible first (it waited for that writer)
    seen: list[bool] = []
    for i, transaction in enumerate(transactions):
        blocked = any(
            not seen[j] and keys_of(transactions[j]) & keys_of(transaction) for j in range(i)
        )
        seen.append(False if blocked else data.draw(st.booleans()))
    target = data.draw(st.integers(0, len(transactions)))
    snapshot = replay(initial, [t for t, s in zip(transactions, seen, strict=True) if s])
    flagged = [
        (change, seen[i], i < target)
        for i, transaction in enumerate(transactions)
        for change in transaction
    ]
    overrides = visibility_overrides(flagged, key_of)
    rows = apply_overrides(sorted(snapshot.values()), overrides, key_of, lambda row: True)
    assert {key_of(r): r for r in rows} == replay(initial, transactions[:target])


def test_a_later_change_seen_without_an_earlier_one_fails_loudly() -> None:
    first = RowChange(T, None, (1, "a"), 1, 0)
    second = RowChange(T, (1, "a"), (1, "b"), 2, 0)
    with pytest.raises(SparkCdcError, match="cannot be normalised"):
        visibility_overrides([(first, False, True), (second, True, True)], key_of)


def upsert_form(change: RowChange) -> RowChange:
    """``change`` as PostgreSQL's ``changelog-mode: upsert`` decodes it: an update keeping
    its key is its new row alone, a key move and a delete carry the old key only."""
    if change.before is None:
        return change
    old_key = (key_of(change.before), None)
    if change.after is not None and key_of(change.after) == key_of(change.before):
        return RowChange(T, None, change.after, change.version, 0, upsert=True)
    return RowChange(T, old_key, change.after, change.version, 0)


def replay_by_key(rows: dict[int, Row], transactions: list[list[RowChange]]) -> dict[int, Row]:
    """What an upsert target does with changes: rows set by new rows, removed by keys."""
    rows = dict(rows)
    for transaction in transactions:
        for change in transaction:
            if change.before is not None:
                rows.pop(key_of(change.before), None)
            if change.after is not None:
                rows[key_of(change.after)] = change.after
    return rows


@settings(max_examples=400, deadline=None)
@given(histories(), st.data())
def test_upsert_mode_chunks_ahead_of_their_batch_are_exact_again_past_their_read(
    history: tuple[dict[int, Row], list[list[RowChange]]], data: st.DataObject
) -> None:
    """docs/design.md, "Without REPLICA IDENTITY FULL": the snapshot sees every
    transaction before the batch's end B (the planning's rule) and some after it; without
    old rows the chunk keeps what it saw, the log replays every change from B on by key,
    and at every batch end E the target is the table at E, except at ends before the
    snapshot's last transaction H, and there only for keys a transaction in [E, H) that
    the snapshot saw touched."""
    initial, transactions = history
    n = len(transactions)
    target = data.draw(st.integers(0, n))
    seen = [i < target for i in range(n)]
    for i in range(target, n):  # later ones become visible in commit order per key
        blocked = any(
            not seen[j] and keys_of(transactions[j]) & keys_of(transactions[i])
            for j in range(target, i)
        )
        seen[i] = False if blocked else data.draw(st.booleans())
    decoded = [[upsert_form(c) for c in t] for t in transactions]
    snapshot = replay(initial, [t for t, s in zip(transactions, seen, strict=True) if s])
    flagged = [(c, seen[i], i < target) for i, t in enumerate(decoded) for c in t]
    overrides = upsert_visibility_overrides(flagged, key_of)
    chunk = {
        key_of(r): r
        for r in apply_overrides(sorted(snapshot.values()), overrides, key_of, lambda r: True)
    }
    # never a made-up row (a key with NULLs): each is one the table had at some position
    states = {r for end in range(n + 1) for r in replay(initial, transactions[:end]).values()}
    assert set(chunk.values()) <= states
    last_seen = max((i + 1 for i in range(n) if seen[i]), default=0)
    for end in range(target, n + 1):
        held = replay_by_key(chunk, decoded[target:end])
        truth = replay(initial, transactions[:end])
        if end >= last_seen:
            assert held == truth
        else:
            ahead = set().union(*(keys_of(transactions[i]) for i in range(end, n) if seen[i]))
            assert {k for k in held.keys() | truth.keys() if held.get(k) != truth.get(k)} <= ahead

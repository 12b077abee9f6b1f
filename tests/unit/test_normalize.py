"""Normalising a chunk from its snapshot position to the batch position, forward and back."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.normalize import apply_overrides, backward_overrides, forward_overrides

T = TableId("db", "t")
KEYS = st.integers(min_value=0, max_value=30)


def key_of(row: Row) -> Any:
    return row[0]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[dict[int, Row]], list[RowChange]]:
    """A random table history: states[i] is the table after the first i changes."""
    table: dict[int, Row] = {k: (k, 0) for k in draw(st.sets(KEYS, max_size=15))}
    states = [dict(table)]
    changes: list[RowChange] = []
    for n in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["insert", "update", "move", "delete"]))
        free = [k for k in range(31) if k not in table]
        if kind == "insert" and free:
            k = draw(st.sampled_from(free))
            change = RowChange(T, None, (k, n), n, 0)
        elif table and kind in ("update", "delete", "move"):
            k = draw(st.sampled_from(sorted(table)))
            if kind == "update":
                change = RowChange(T, table[k], (k, n), n, 0)
            elif kind == "move" and free:
                change = RowChange(T, table[k], (draw(st.sampled_from(free)), n), n, 0)
            else:
                change = RowChange(T, table[k], None, n, 0)
        else:
            continue
        if change.before is not None:
            del table[key_of(change.before)]
        if change.after is not None:
            table[key_of(change.after)] = change.after
        changes.append(change)
        states.append(dict(table))
    return states, changes


def chunk_rows(state: dict[int, Row], chunk: Chunk) -> list[Row]:
    order = KeyOrder()
    return sorted(row for k, row in state.items() if order.in_chunk(k, chunk))


@settings(max_examples=400)
@given(histories(), st.data())
def test_normalised_chunk_equals_table_at_target(
    history: tuple[list[dict[int, Row]], list[RowChange]], data: st.DataObject
) -> None:
    states, changes = history
    s = data.draw(st.integers(0, len(changes)), label="snapshot position")
    p = data.draw(st.integers(0, len(changes)), label="target position")
    lo = data.draw(st.none() | KEYS, label="lo")
    hi = data.draw(st.none() | KEYS, label="hi")
    chunk = Chunk(lo, hi)
    order = KeyOrder()

    def in_range(row: Row) -> bool:
        return order.in_chunk(row[0], chunk)

    if s <= p:
        overrides = forward_overrides(changes[s:p], key_of)
    else:
        overrides = backward_overrides(changes[p:s], key_of)
    got = sorted(apply_overrides(chunk_rows(states[s], chunk), overrides, key_of, in_range))
    assert got == chunk_rows(states[p], chunk)


@settings(max_examples=400)
@given(histories(), st.data())
def test_a_chunk_placed_by_a_high_watermark_equals_the_table_at_target(
    history: tuple[list[dict[int, Row]], list[RowChange]], data: st.DataObject
) -> None:
    """Watermark chunks (docs/design.md): the snapshot sees every change up to the target
    p and none after the high watermark h, and any of those in between, so its row of a
    key changed in (p, h] may be anything; the window (p, h] read backwards still gives
    the table at p."""
    states, changes = history
    p = data.draw(st.integers(0, len(changes)), label="target position")
    h = data.draw(st.integers(p, len(changes)), label="high watermark")
    seen = data.draw(st.integers(p, h), label="what the snapshot saw")
    window = changes[p:h]
    touched = {key_of(r) for c in window for r in (c.before, c.after) if r is not None}
    snapshot = {k: row for k, row in states[seen].items() if k not in touched}
    for k in sorted(touched):  # whatever a partly visible window shows of these keys
        if data.draw(st.booleans(), label=f"key {k} present"):
            snapshot[k] = (k, data.draw(st.integers(-5, -1)))
    chunk = Chunk(data.draw(st.none() | KEYS, label="lo"), data.draw(st.none() | KEYS, label="hi"))
    order = KeyOrder()

    def in_range(row: Row) -> bool:
        return order.in_chunk(row[0], chunk)

    overrides = backward_overrides(window, key_of)
    got = sorted(apply_overrides(chunk_rows(snapshot, chunk), overrides, key_of, in_range))
    assert got == chunk_rows(states[p], chunk)

"""Re-reads on demand (signals), driven through the real driver over the fake dialect.

A consumer whose copy of a table was damaged (rows lost, values wrong) sends an
``execute-snapshot`` signal, for the whole table or a key range, at a random batch while
writes go on. Invariants (docs/design.md, "Snapshots on demand"):
* every re-read row is the key's row as of its batch's end (an upsert at that version);
* each key of the range is re-read at most once per signal, even across a stream stopped
  right after it read the signal (it reads it again) and partitions re-planned elsewhere;
* the log keeps flowing for every key, so after the re-read the damaged range equals the
  source again, and a restart from a later offset does not execute the signal again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.signal_file import append_signal
from tests.support.fake_dialect import FakeDatabase, FakeSettings

from .test_incremental_snapshot_protocol import A, B, interleaved, read_on_executor
from .test_normalize import histories

Consumer = dict[TableId, dict[Any, Row]]


def upsert_replay(consumer: Consumer, rows: list[dict[str, Any]]) -> list[tuple[Any, Row, int]]:
    """Apply an envelope batch as an upsert target does (a damaged copy cannot insist that
    deletes match); returns the re-read rows (key, row, version): updates without a
    ``before``."""
    again = []
    for r in sorted(rows, key=lambda r: (r["_commit_version"], r["after"] is not None)):
        table = TableId(r["database_name"], r["table_name"])
        state = consumer.setdefault(table, {})
        before = tuple(json.loads(r["before"]).values()) if r["before"] else None
        after = tuple(json.loads(r["after"]).values()) if r["after"] else None
        if r["_change_type"] == "insert":
            assert after is not None and after[0] not in state, f"insert of held key {after}"
        if before is not None:
            state.pop(before[0], None)
        if after is not None:
            state[after[0]] = after
        if r["_change_type"] == "update" and before is None:
            assert table == A and after is not None, "only A was signalled"
            again.append((after[0], after, r["_commit_version"]))
    return again


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(histories(), histories(), st.data())
def test_a_signalled_re_read_repairs_the_range_once_while_the_log_flows(
    tmp_path: Path,
    first: tuple[list[dict[int, Row]], list[RowChange]],
    second: tuple[list[dict[int, Row]], list[RowChange]],
    data: st.DataObject,
) -> None:
    log = interleaved(data, first[1], second[1])
    signals = tmp_path / f"signals-{data.draw(st.integers(0, 1 << 30))}.jsonl"
    config = FakeSettings(
        chunk_size=data.draw(st.integers(1, 8), label="chunk size"),
        rows_per_partition=data.draw(st.integers(1, 16), label="rows per partition"),
        rows_per_batch=data.draw(st.integers(1, 40), label="rows per batch"),
        signal_file=str(signals),
    )
    db = FakeDatabase(log, {A: first[0][0], B: second[0][0]}, config)
    db.snapshot_at = lambda target, now: data.draw(st.integers(0, now), label="snapshot at S")
    max_rows = data.draw(st.none() | st.integers(1, 12), label="maxRowsPerTrigger")
    lo = data.draw(st.none() | st.integers(0, 30), label="range from")
    hi = data.draw(st.none() | st.integers(lo or 0, 31).filter(lambda h: h > (lo or -1)))

    def in_range(k: int) -> bool:
        return (lo is None or k >= lo) and (hi is None or k < hi)

    source = IncrementalSource(db)
    offset = source.initial_offset()
    consumer: Consumer = {}
    signalled = False
    re_read: dict[Any, int] = {}
    for _ in range(1_000):
        db.now = data.draw(st.integers(db.now, len(log)), label="writes before planning")
        caught_up = source.parse_offset(offset).snapshotting is False
        if (
            not signalled
            and caught_up
            and (db.now == len(log) or data.draw(st.booleans(), label="signal now"))
        ):
            signalled = True
            damaged = consumer.setdefault(A, {})
            for k in [k for k in damaged if in_range(k)]:  # the target lost or garbled rows
                if data.draw(st.booleans(), label=f"damage {k}"):
                    if data.draw(st.booleans(), label="lose it"):
                        del damaged[k]
                    else:
                        damaged[k] = (k, -1)
            condition = {"from": lo, "to": hi}
            body: dict[str, Any] = {"data-collections": ["db.a"], "type": "incremental"}
            if lo is not None or hi is not None:
                body["additional-conditions"] = [
                    {
                        "data-collection": "db.a",
                        "key-range": {k: v for k, v in condition.items() if v is not None},
                    }
                ]
            append_signal(signals, {"id": "fix-a", "type": "execute-snapshot", "data": body})
        end = source.latest_offset(offset, max_rows)
        if data.draw(st.booleans(), label="stopped before the batch ran"):
            source = IncrementalSource(db)  # a new run plans from the committed offset again
            end = source.latest_offset(offset, max_rows)
        if end == offset:
            if db.now == len(log) and signalled and not source.parse_offset(offset).snapshotting:
                break
            db.now = min(db.now + 1, len(log))
            continue
        planner = IncrementalSource(db) if data.draw(st.booleans(), label="replan") else source
        specs = planner.partitions(offset, end)
        db.now = data.draw(st.integers(db.now, len(log)), label="writes while reading")
        at = source.parse_offset(end).log.n
        for key, row, version in upsert_replay(consumer, read_on_executor(source, specs)):
            assert in_range(key), f"{key} is outside the signalled range"
            assert key not in re_read, f"{key} re-read twice"
            assert version == 2 * at and db.state(A, at).get(key) == row
            re_read[key] = at
        offset = end
    else:
        raise AssertionError("the source never caught up")
    for table in (A, B):
        assert consumer.get(table, {}) == db.state(table, len(log))
    # a restart from the last offset does not execute the signal again
    restarted = IncrementalSource(db)
    after = restarted.parse_offset(restarted.latest_offset(offset, max_rows))
    assert all(p.again is None for p in after.tables.values())


def test_a_signal_naming_an_unknown_table_is_logged_and_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    signals = tmp_path / "signals.jsonl"
    db = FakeDatabase([], {A: {1: (1, 1)}}, FakeSettings(signal_file=str(signals)))
    source = IncrementalSource(db)
    offset = source.latest_offset(source.initial_offset(), None)
    append_signal(
        signals, {"id": "x", "type": "execute-snapshot", "data": {"data-collections": ["db.nope"]}}
    )
    signals.open("a").write("not json\n")
    end = source.latest_offset(offset, None)
    assert "not a captured table" in caplog.text and "not JSON" in caplog.text
    assert json.loads(json.dumps(end))["signals"] == {"file": signals.stat().st_size}
    assert "again" not in json.dumps(end)

"""A lost log (a purged binlog, a dropped slot) recovered by a ``recover-lost-log`` signal,
driven through the real driver over the fake dialect (docs/design.md, "A lost log").

A stream runs a random number of batches, stops, and while it is stopped the tables change
and the log up to a random point after its position is purged. Invariants:
* the restart fails with the lost position and the way out, and plans nothing;
* with the signal, the next batch reads nothing (its partitions are empty), moves the log
  to its position now, and marks exactly the tables whose rows the stream had emitted;
  planned again after a stop before the batch ran, it is the same recovery;
* a consumer that empties its copy of each marked table at the mark (what a pipeline's
  sink does) replays to the source tables at every batch boundary after, with no
  duplicate insert and every delete matching, and ends equal to them;
* a signal when nothing is lost changes nothing, and a stream without
  ``truncate.handling.mode: skip`` refuses the signal, saying why.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sparkcdc.core.errors import PositionLostError, SchemaError
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.recovery import LOG_LOST
from sparkcdc.snapshot.signal_file import append_signal
from tests.support.fake_dialect import FakeDatabase, FakeSettings

from .test_incremental_snapshot_protocol import A, B, check_emitted, interleaved, read_on_executor
from .test_incremental_snapshot_protocol import replay as strict_replay
from .test_normalize import histories

Consumer = dict[TableId, dict[Any, Row]]
RECOVER = {"id": "lost-1", "type": "recover-lost-log"}


def marked(offset: dict[str, Any]) -> set[TableId]:
    """The tables an offset marks as read again after a lost log."""
    return {
        TableId.from_key(name)
        for name, entry in offset["tables"].items()
        if LOG_LOST in (entry.get("schema") or {})
    }


def run_batches(
    source: IncrementalSource[Any, Any],
    db: FakeDatabase,
    consumer: Consumer,
    offset: dict[str, Any],
    data: st.DataObject,
    batches: int,
    until_caught_up: bool,
) -> dict[str, Any]:
    """Up to ``batches`` batches (or until caught up with the whole log), replayed into
    ``consumer`` and checked at every boundary; returns the last offset."""
    log = db.changes
    for _ in range(batches):
        db.now = data.draw(st.integers(db.now, len(log)), label="writes before planning")
        end = source.latest_offset(offset, None)
        if end == offset:
            if db.now == len(log):
                if until_caught_up:
                    return offset
                continue
            db.now += 1
            continue
        specs = source.partitions(offset, end)
        db.now = data.draw(st.integers(db.now, len(log)), label="writes while reading")
        strict_replay(consumer, read_on_executor(source, specs), envelope=True)
        offset = end
        check_emitted(source, db, consumer, offset)
    if until_caught_up:
        raise AssertionError("the source never caught up")
    return offset


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(histories(), histories(), st.data())
def test_a_recovered_lost_log_reads_the_touched_tables_again_and_loses_nothing(
    tmp_path: Path,
    first: tuple[list[dict[int, Row]], list[RowChange]],
    second: tuple[list[dict[int, Row]], list[RowChange]],
    data: st.DataObject,
) -> None:
    log = interleaved(data, first[1], second[1])
    signals = tmp_path / f"signals-{uuid.uuid4()}.jsonl"  # tmp_path outlives an example
    config = FakeSettings(
        chunk_size=data.draw(st.integers(1, 8), label="chunk size"),
        rows_per_batch=data.draw(st.integers(1, 40), label="rows per batch"),
        envelope=True,
        signal_file=str(signals),
        truncate_handling="skip",
    )
    db = FakeDatabase(log, {A: first[0][0], B: second[0][0]}, config)
    db.snapshot_at = lambda target, now: data.draw(st.integers(0, now), label="snapshot at S")
    consumer: Consumer = {}
    source = IncrementalSource(db)
    offset = source.initial_offset()
    before = data.draw(st.integers(0, 6), label="batches before the stop")
    offset = run_batches(source, db, consumer, offset, data, before, until_caught_up=False)
    # a batch Spark planned (its end offset in the checkpoint) but did not run: replayed
    # first by the restart, before anything is planned
    planned = source.latest_offset(offset, None)
    unrun = planned != offset and data.draw(st.booleans(), label="a batch planned, not run")

    # stopped: the tables change, and the log up to a point after the position is purged
    db.now = data.draw(
        st.integers(min(db.now + 1, len(log)), len(log)), label="writes while stopped"
    )
    if db.now == source.parse_offset(offset).log.n:
        event("nothing written while stopped")
        return  # nothing written after the position: nothing to purge
    db.purged = data.draw(
        st.integers(source.parse_offset(offset).log.n + 1, db.now), label="purged"
    )
    restarted = IncrementalSource(db)  # Spark's reader: replays, then plans (one process)
    skipped = False
    if unrun:
        try:
            specs = IncrementalSource(db).partitions(offset, planned)
        except PositionLostError as lost:
            assert "recover-lost-log" in str(lost)
            append_signal(signals, RECOVER)
            assert restarted.partitions(offset, planned) == []  # reads nothing
            skipped = True
            event("the batch planned before the stop read nothing")
        else:  # chunks only, normalised to a position still there
            strict_replay(consumer, read_on_executor(source, specs), envelope=True)
            event("the batch planned before the stop read its chunks")
        offset = planned
    stopped_at = source.parse_offset(offset)
    if not signals.exists():
        with pytest.raises(PositionLostError, match="recover-lost-log"):
            IncrementalSource(db).latest_offset(offset, None)
        append_signal(signals, RECOVER)

    recovery = restarted.latest_offset(offset, None)
    # planned again by another process: the same recovery, where the server tells the loss
    # (a replay that read nothing is known to its own process only)
    lost_at_stop = stopped_at.log.n < db.purged
    if data.draw(st.booleans(), label="stopped before the recovery ran") and lost_at_stop:
        assert IncrementalSource(db).latest_offset(offset, None) == recovery
    assert skipped or lost_at_stop
    source = IncrementalSource(db)
    assert source.partitions(offset, recovery) == []
    assert recovery["log"] == {"n": db.now}
    touched = {t for t, p in stopped_at.tables.items() if p.started or p.done}
    event(f"tables read again: {len(touched)}")
    assert marked(recovery) == touched
    for table in touched:  # what a pipeline's sink does at the mark
        consumer.pop(table, None)
    offset = recovery
    check_emitted(source, db, consumer, offset)

    offset = run_batches(source, db, consumer, offset, data, 1_000, until_caught_up=True)
    for table in (A, B):
        assert consumer.get(table, {}) == db.state(table, len(log))
    # a restart from a later offset does not recover again: the marks are the recovery's
    later = IncrementalSource(db).latest_offset(offset, None)["tables"]
    for name, entry in recovery["tables"].items():
        if LOG_LOST in entry["schema"]:
            assert later[name]["schema"][LOG_LOST] == entry["schema"][LOG_LOST]


def test_a_recovery_signal_is_refused_while_the_log_is_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Whoever may write a signal must not empty the targets: the server must say the log
    is gone. Refused, the signal is consumed and logged, and the stream goes on."""
    signals = tmp_path / "signals.jsonl"
    config = FakeSettings(signal_file=str(signals), truncate_handling="skip")
    db = FakeDatabase([RowChange(A, None, (2, 2), 0, 0)], {A: {1: (1, 1)}, B: {}}, config)
    source = IncrementalSource(db)
    offset = source.latest_offset(source.initial_offset(), None)
    append_signal(signals, RECOVER)
    db.now = 1
    end = IncrementalSource(db).latest_offset(offset, None)
    assert marked(end) == set()
    assert end["signals"] == {"file": signals.stat().st_size}  # consumed
    assert end["log"] == {"n": 1}  # the log goes on
    (refused,) = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refused.startswith("signal 'lost-1@file:") and (
        "(recover-lost-log) refused: the server still has the log from the stream's "
        "position Count(n=0), so nothing is lost and no target is emptied" in refused
    )


def test_a_recovery_signal_is_obeyed_after_a_replay_that_lost_its_log(tmp_path: Path) -> None:
    """A batch planned before a restart whose own log was lost reads nothing, and the log
    from its end may be there: the process that skipped it recovers."""
    signals = tmp_path / "signals.jsonl"
    config = FakeSettings(signal_file=str(signals), truncate_handling="skip", chunk_size=1)
    changes = [RowChange(A, None, (2, 2), 0, 0), RowChange(A, None, (3, 3), 0, 0)]
    db = FakeDatabase(changes, {A: {1: (1, 1)}, B: {}}, config)
    source = IncrementalSource(db)
    start = source.latest_offset(source.initial_offset(), None)
    db.now = 2
    planned = source.latest_offset(start, None)
    db.purged = 1  # the log from the replayed batch's start is gone, from its end not
    restarted = IncrementalSource(db)
    append_signal(signals, RECOVER)
    assert restarted.partitions(start, planned) == []
    end = restarted.latest_offset(planned, None)
    assert marked(end) == {A, B}
    assert restarted.partitions(planned, end) == []
    after = restarted.latest_offset(end, None)  # the mark stays, not new: nothing again
    assert [t["schema"] for t in after["tables"].values()] == [
        t["schema"] for t in end["tables"].values()
    ]


def test_a_stream_that_fails_at_truncates_refuses_the_recovery_saying_why(tmp_path: Path) -> None:
    signals = tmp_path / "signals.jsonl"
    db = FakeDatabase(
        [RowChange(A, None, (2, 2), 0, 0)], {A: {1: (1, 1)}}, FakeSettings(signal_file=str(signals))
    )
    source = IncrementalSource(db)
    offset = source.latest_offset(source.initial_offset(), None)
    db.now = db.purged = 1
    append_signal(signals, RECOVER)
    with pytest.raises(SchemaError, match=r"truncate\.handling\.mode"):
        IncrementalSource(db).latest_offset(offset, None)


def test_the_recovery_signal_names_no_tables() -> None:
    from sparkcdc.snapshot.signal import SignalError, parse_signal

    with pytest.raises(SignalError, match="no 'data-collections'"):
        parse_signal({**RECOVER, "data": {"data-collections": ["db.a"]}})
    assert parse_signal(json.loads(json.dumps(RECOVER))).type == "recover-lost-log"

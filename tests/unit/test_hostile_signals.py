"""Hostile signals through the real driver over the fake dialect: each is logged with its
reason and skipped in bounded time, the stream goes on, and a good signal after them is
taken (#63). Before, deep JSON and 5000-digit numbers raised out of the planner and a
backtracking pattern held it for ever."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.signal import received
from tests.support.fake_dialect import FakeDatabase, FakeSettings

A = TableId("db", "a")
#: A name on which re's backtracking over "(?:[\w.]+)+!" would take 2**60 steps.
LONG = TableId("db", "n" * 60)


def execute(sid: str, *names: str, **extra: object) -> str:
    data = {"data-collections": list(names), **extra}
    return json.dumps({"id": sid, "type": "execute-snapshot", "data": data})


def ranged(sid: str, lo: object, hi: object) -> str:
    conditions = [{"data-collection": "db.a", "key-range": {"from": lo, "to": hi}}]
    return execute(sid, "db.a", **{"additional-conditions": conditions})


HOSTILE = {
    "deep JSON": "[" * 100_000 + "]" * 100_000,
    "deep object": '{"id": "d", "data": ' * 50 + "1" + "}" * 50,
    "a 5000-digit number": '{"id": 1' + "0" * 5000 + ', "type": "stop-snapshot"}',
    "a 5000-digit key bound": ranged("big", 1, None).replace('"from": 1', '"from": ' + "9" * 5000),
    "a key bound beyond BIGINT": ranged("wide", 2**63, None),
    "a backtracking pattern": execute("bt", r"(?:[\w.]+)+!"),
    "a back-reference": execute("ref", r"(db)\.\1"),
    "a huge signal": execute("huge", "db.a", pad="x" * 100_000),
}


@pytest.mark.timeout(120)  # a fail-safe; each signal takes milliseconds
def test_hostile_signals_are_logged_skipped_and_the_stream_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    signals = tmp_path / "signals.jsonl"
    db = FakeDatabase(
        [], {A: {k: (k, 0) for k in range(40)}}, FakeSettings(signal_file=str(signals))
    )
    source = IncrementalSource(db)
    offset = source.latest_offset(source.initial_offset(), None)  # the snapshot, whole
    assert source.parse_offset(offset).tables[A].done
    with signals.open("w") as handle:
        for text in HOSTILE.values():
            handle.write(text + "\n")
        handle.write(ranged("good", 8, 24) + "\n")
    end = source.latest_offset(offset, None)
    again = source.parse_offset(end).tables[A].again
    assert again is not None and (again.lo, again.hi) == (8, 24)
    assert again.signal.startswith("good@")
    skipped = [r for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == len(HOSTILE)
    assert end["signals"] == {"file": signals.stat().st_size}


@pytest.mark.parametrize(
    "what", ["deep JSON", "deep object", "a 5000-digit number", "a huge signal"]
)
def test_a_signal_that_is_no_signal_gets_its_reason(what: str) -> None:
    got = received("here", "1", HOSTILE[what])
    assert got.signal is None and got.problem, what

"""Which offset verify reads a target at: its own last write's, or the last committed
batch's when that is as late."""

from __future__ import annotations

import json
from typing import Any

from sparkcdc.snapshot.handle import SourceHandle
from sparkcdc.snapshot.offset import LogJson, SourceOffset
from sparkcdc.verify import run
from tests.support.fake_dialect import FakeDatabase

#: A source handle over the fake database: positions are change counts.
_SOURCE = SourceHandle(FakeDatabase([], {}, now=20))


def _offset(pos: int, done: bool) -> dict[str, Any]:
    progress = {"done": True} if done else {"started": False}
    return {"log": {"n": pos}, "tables": {"db.t": progress}, "bounded": False}


def later_offset(source: Any, written: dict[str, Any], committed: str | None) -> Any:
    found = run.later_offset(source, SourceOffset.parse(json.dumps(written)), committed)
    assert isinstance(found.log, LogJson)
    return found.to_json()


def test_a_later_committed_batch_is_taken_and_an_earlier_one_is_not() -> None:
    written = _offset(10, done=False)
    assert later_offset(_SOURCE, written, json.dumps(_offset(12, True))) == _offset(12, True)
    assert later_offset(_SOURCE, written, json.dumps(_offset(8, True))) == written
    assert later_offset(_SOURCE, written, None) == written


def test_at_the_same_position_the_committed_batch_says_how_far_the_snapshot_is() -> None:
    """The batch that read an emptied table's last chunk wrote no row and did not move the
    log: its offset, not the target's own, says the table's snapshot is done."""
    written = _offset(10, done=False)
    assert later_offset(_SOURCE, written, json.dumps(_offset(10, True))) == _offset(10, True)

"""Planning a batch when the server drops the connection mid-way (a restart between the
planning connection's health check and one of its queries): the driver plans again under
the dialect's retry policy, so the stream rides through; retries spent, it stops with a
SourceUnavailableError that says what to do, not the driver's error and traceback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from sparkcdc.core.errors import SourceUnavailableError
from sparkcdc.core.rows import RowChange
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.chunks import Key, KeyStats
from sparkcdc.snapshot.driver import IncrementalSource
from sparkcdc.snapshot.retry import Retries
from tests.support.fake_dialect import FakeDatabase, FakeSettings, FakeTable

A = TableId("db", "a")


@dataclass
class DroppingDatabase(FakeDatabase):
    """A fake whose key queries (planning's, after the log position) fail ``drops`` times
    with ``failure``; two retries of ConnectionResetError, as a connector's policy."""

    drops: int = 0
    failure: type[Exception] = ConnectionResetError

    @property
    def retries(self) -> Retries:
        return Retries(2, lambda exc: isinstance(exc, ConnectionResetError), str)

    def _drop(self) -> None:
        if self.drops > 0:
            self.drops -= 1
            raise self.failure("server closed the connection unexpectedly")

    def key_stats(self, table: FakeTable) -> KeyStats:
        self._drop()
        return super().key_stats(table)

    def next_chunk_end(self, table: FakeTable, lo: Key, size: int) -> Key:
        self._drop()
        return super().next_chunk_end(table, lo, size)


def database(drops: int, failure: type[Exception] = ConnectionResetError) -> DroppingDatabase:
    rows = {k: (k, k * 10) for k in range(20)}
    log = [RowChange(A, None, (100 + n, n), n, 0) for n in range(5)]
    return DroppingDatabase(
        log, {A: rows}, FakeSettings(chunk_size=4), now=5, drops=drops, failure=failure
    )


@pytest.fixture(autouse=True)
def no_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sparkcdc.snapshot.retry.time.sleep", lambda seconds: None)


def plan(db: DroppingDatabase) -> dict[str, Any]:
    source = IncrementalSource(db)
    return source.latest_offset(source.initial_offset(), 8)


def test_a_connection_dropped_while_planning_is_planned_again() -> None:
    healthy = plan(database(drops=0))
    assert plan(database(drops=2)) == healthy  # two drops: two retries, the same batch


def test_a_connection_that_keeps_dropping_stops_with_what_to_do() -> None:
    with pytest.raises(SourceUnavailableError) as stopped:
        plan(database(drops=3))
    message = str(stopped.value)
    assert message.startswith("planning the next batch failed 3 times")
    assert "run again once it is back" in message and "'connect.max-retries'" in message


def test_other_failures_are_not_retried() -> None:
    db = database(drops=1, failure=ValueError)
    with pytest.raises(ValueError, match="closed the connection"):
        plan(db)
    assert db.drops == 0  # tried once

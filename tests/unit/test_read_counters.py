"""The count of a partition read's retries that travels to the driver (no Spark: the
accumulator's ``add`` is all a reader uses)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sparkcdc.snapshot.retry import Retries, count_retry, retries_taken
from sparkcdc.spark.read_counters import counted


class Accumulator:
    def __init__(self) -> None:
        self.added: list[int] = []

    def add(self, value: int) -> None:
        self.added.append(value)


def flaky_rows(failures: int) -> Iterator[int]:
    """Rows of a read whose connection drops ``failures`` times before it works."""
    policy = Retries(5, lambda exc: isinstance(exc, ConnectionError), str)
    attempt = 0
    while True:
        try:
            if attempt < failures:
                raise ConnectionError("lost")
            break
        except ConnectionError as exc:
            attempt = policy.pause(attempt, "a read", exc)
    yield from range(3)


def test_a_read_adds_the_retries_it_took_once_when_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sparkcdc.snapshot.retry.time.sleep", lambda seconds: None)
    counter = Accumulator()
    count_retry()  # taken before the read (another task of this worker): not its own
    assert list(counted(counter, lambda: flaky_rows(2))) == [0, 1, 2]
    assert counter.added == [2]


def test_a_read_without_retries_adds_nothing_and_none_counts_nothing() -> None:
    counter = Accumulator()
    assert list(counted(counter, lambda: iter([1, 2]))) == [1, 2]
    assert counter.added == []
    before = retries_taken()
    assert list(counted(None, lambda: iter([1]))) == [1]
    assert retries_taken() == before


def test_retries_taken_opening_a_read_that_then_fails_are_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sparkcdc.snapshot.retry.time.sleep", lambda seconds: None)
    counter = Accumulator()

    def read() -> Iterator[int]:
        count_retry()  # a reconnect while opening (the driver's own, counted all the same)
        raise RuntimeError("the read failed")

    with pytest.raises(RuntimeError):
        list(counted(counter, read))
    assert counter.added == [1]  # Spark drops a failed task's updates; the count is honest

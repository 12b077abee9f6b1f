"""The retry policy every connector shares (snapshot/retry.py): what is retried, how often,
and what a read says when its retries are spent."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sparkcdc.core.errors import SourceUnavailableError
from sparkcdc.snapshot import retry
from sparkcdc.snapshot.retry import Retries, lost_mid_read


class Lost(Exception):
    """A lost connection, as a driver reports it."""


def policy(retries: int) -> Retries:
    return Retries(retries, lambda exc: isinstance(exc, Lost), lambda exc: f"lost: {exc}")


def failing(times: int, calls: list[int]) -> Callable[[], str]:
    def action() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise Lost(f"try {len(calls)}")
        return "read"

    return action


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sparkcdc.snapshot.retry.time.sleep", lambda seconds: None)


def test_failures_are_retried_up_to_the_limit() -> None:
    calls: list[int] = []
    assert policy(3).run("reading", failing(3, calls)) == "read"
    assert len(calls) == 4


def test_spent_retries_of_a_read_say_what_to_do_and_keep_the_cause() -> None:
    calls: list[int] = []
    with pytest.raises(SourceUnavailableError) as spent:
        policy(2).run("binlog read a..b", failing(9, calls), final=True)
    text = str(spent.value)
    assert text.startswith("binlog read a..b failed 3 times, the last: lost: try 3.")
    assert "run again once it is back" in text and "'connect.max-retries'" in text
    assert isinstance(spent.value.__cause__, Lost)


def test_spent_retries_elsewhere_and_other_failures_raise_as_they_are() -> None:
    calls: list[int] = []
    with pytest.raises(Lost):  # opening a connection: its caller words the error
        policy(1).run("connecting", failing(9, calls))

    def denied() -> str:
        raise PermissionError("access denied")

    with pytest.raises(PermissionError):  # not worth a retry, even in a read
        policy(5).run("reading", denied, final=True)


def test_backoff_doubles_to_ten_seconds() -> None:
    assert [retry.backoff(n) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_a_read_cut_off_mid_rows_fails_saying_what_to_do() -> None:
    def rows(failure: Exception) -> Iterator[int]:
        yield 1
        raise failure

    read = lost_mid_read(policy(3), "reading chunks of db.t", rows(Lost("2013")))
    assert next(read) == 1
    with pytest.raises(SourceUnavailableError, match=r"^reading chunks of db\.t lost its conn"):
        next(read)
    other = lost_mid_read(policy(3), "reading", rows(ValueError("a bad value")))
    assert next(other) == 1
    with pytest.raises(ValueError):  # not a lost connection: as it is
        next(other)

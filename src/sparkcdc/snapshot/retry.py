"""Retrying what a lost connection interrupted: ``connect.max-retries`` times, with backoff.

Each connector says which failures are worth another try (a lost or refused connection,
not a wrong password) and how to show one without its secrets; the policy is the same
for every connector: wait 0.5 s, doubling up to 10 s, log each retry, give up loudly.
A read (``final``) gives up with :class:`SourceUnavailableError`, which says what to do;
opening a connection keeps the driver's error for its caller to word (it knows the host).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from sparkcdc.core.errors import SourceUnavailableError

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Every retry this process has taken (read with :func:`retries_taken`). A Spark task's
#: reader takes the difference over its read and reports it to the driver
#: (spark/read_counters.py): retries on executors are invisible to the driver otherwise.
_taken = 0
_taken_lock = threading.Lock()


def retries_taken() -> int:
    """How many retries this process has taken so far (of every policy)."""
    with _taken_lock:
        return _taken


def backoff(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (0.5 s doubling, at most 10 s)."""
    return min(0.5 * (1 << attempt), 10.0)


@dataclass(frozen=True)
class Retries:
    """``retries`` more tries of failures ``retryable`` accepts; ``describe`` shows a
    failure in the log (without secrets)."""

    retries: int
    retryable: Callable[[BaseException], bool]
    describe: Callable[[BaseException], str]

    def pause(self, attempt: int, what: str, failure: BaseException, final: bool = False) -> int:
        """After failure number ``attempt`` (0-based) of ``what``: re-raise it when it is
        not worth a retry or the retries are spent (``final``: the spent retries as a
        SourceUnavailableError), else log, wait and return the next attempt's number
        (call inside the ``except`` block)."""
        if not self.retryable(failure):
            raise failure
        if attempt >= self.retries:
            if final:
                raise SourceUnavailableError(
                    f"{what} failed {attempt + 1} times, the last: {self.describe(failure)}. "
                    "The server is unreachable or keeps dropping the connection: run again "
                    "once it is back (a stream resumes from its checkpoint); "
                    "'connect.max-retries' sets how often to retry"
                ) from failure
            raise failure
        delay = backoff(attempt)
        count_retry()
        log.warning(
            "%s failed (%s); retry %d/%d in %.1fs",
            what,
            self.describe(failure),
            attempt + 1,
            self.retries,
            delay,
        )
        time.sleep(delay)
        return attempt + 1

    def run(self, what: str, action: Callable[[], T], final: bool = False) -> T:
        """``action``, tried again after each failure worth a retry."""
        attempt = 0
        while True:
            try:
                return action()
            except Exception as exc:
                attempt = self.pause(attempt, what, exc, final)


def count_retry() -> None:
    """One more retry taken (by a policy of ours, or by a driver that reconnects itself)."""
    global _taken
    with _taken_lock:
        _taken += 1


def lost_mid_read(policy: Retries, what: str, rows: Iterator[T]) -> Iterator[T]:
    """``rows`` of a read that cannot go on in the same task after a lost connection (a
    chunk's rows stream through: some are already in Spark's hands). The task fails with
    a SourceUnavailableError that says what to do, not the driver's error."""
    try:
        yield from rows
    except Exception as exc:
        if not policy.retryable(exc):
            raise
        raise SourceUnavailableError(
            f"{what} lost its connection ({policy.describe(exc)}); a chunk's rows are not "
            "read again within its task. Run again once the server is back: a stream resumes "
            "from its checkpoint"
        ) from exc

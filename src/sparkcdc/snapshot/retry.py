"""Retrying what a lost connection interrupted: ``connect.max-retries`` times, with backoff.

Each connector says which failures are worth another try (a lost or refused connection,
not a wrong password) and how to show one without its secrets; the policy is the same
for every connector: wait 0.5 s, doubling up to 10 s, log each retry, give up loudly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


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

    def pause(self, attempt: int, what: str, failure: BaseException) -> int:
        """After failure number ``attempt`` (0-based) of ``what``: re-raise it when it is
        not worth a retry or the retries are spent, else log, wait and return the next
        attempt's number (call inside the ``except`` block)."""
        if not self.retryable(failure) or attempt >= self.retries:
            raise failure
        delay = backoff(attempt)
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

    def run(self, what: str, action: Callable[[], T]) -> T:
        """``action``, tried again after each failure worth a retry."""
        attempt = 0
        while True:
            try:
                return action()
            except Exception as exc:
                attempt = self.pause(attempt, what, exc)

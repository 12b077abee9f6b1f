"""``stopping_on_signals``: the first signal asks for a stop, the second hurries it; while
the pipeline starts (``quit_on_second``) the second quits at once."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from sparkcdc.cli.commands import stopping_on_signals


@pytest.fixture(autouse=True)
def handlers_restored() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    for s, handler in saved.items():
        signal.signal(s, handler)


def send(signum: int) -> None:
    """Call the installed handler as Python would on the signal."""
    handler = signal.getsignal(signum)
    assert callable(handler)
    handler(signum, None)


def test_a_first_signal_stops_a_second_hurries() -> None:
    stop, hurry = stopping_on_signals()
    send(signal.SIGTERM)
    assert stop.is_set() and not hurry.is_set()
    send(signal.SIGINT)
    assert hurry.is_set()


def test_while_starting_a_second_signal_quits_and_later_handlers_keep_the_events() -> None:
    stop, hurry = stopping_on_signals(quit_on_second=True)
    send(signal.SIGTERM)
    assert stop.is_set()
    with pytest.raises(SystemExit) as quit_:
        send(signal.SIGINT)
    assert quit_.value.code == 128 + signal.SIGINT
    # installed again once started (PySpark replaced SIGINT's): the same events
    again = stopping_on_signals(stop, hurry)
    assert again == (stop, hurry)
    send(signal.SIGINT)
    assert hurry.is_set()

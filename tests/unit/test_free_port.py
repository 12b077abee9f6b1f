"""The ports the embedded servers take: free, and outside the range outgoing connections
take their local ports from (so a restarted server finds its port still free)."""

from __future__ import annotations

import random
import socket

import pytest

from sparkcdc.embedded import process
from sparkcdc.embedded.process import free_port


def test_a_free_port_is_below_the_ephemeral_range_and_can_be_bound() -> None:
    first_ephemeral, _ = process._ephemeral_ports()
    for _ in range(20):
        port = free_port()
        assert port < first_ephemeral or first_ephemeral <= process._FIRST_PORT
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        busy = taken.getsockname()[1]

        class FirstTheBusyOne(random.Random):
            calls = 0

            def randrange(self, *args: int) -> int:  # type: ignore[override]
                self.calls += 1
                return busy if self.calls == 1 else super().randrange(*args)

        picker = FirstTheBusyOne()
        monkeypatch.setattr(process, "_PORTS", picker)
        assert free_port() != busy
        assert picker.calls == 2

"""``sigterm_shield``: a process started inside ignores SIGTERM (and does not have it
blocked); a SIGTERM sent to this process inside reaches its handler afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from sparkcdc.spark.sigterm_shield import sigterm_shield

SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def signal_masks(pid: int) -> tuple[int, int]:
    """(blocked, ignored) signal masks of a process, from /proc."""
    fields = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["SigBlk"], 16), int(fields["SigIgn"], 16)


def test_a_child_ignores_sigterm_and_a_sigterm_sent_meanwhile_arrives_after() -> None:
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        with sigterm_shield():
            # as PySpark starts its JVM: a subprocess with a preexec_fn
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(30)"],
                preexec_fn=lambda: None,  # PySpark launches its JVM with one
            )
            os.kill(os.getpid(), signal.SIGTERM)
            assert received == []
        assert received == [signal.SIGTERM]
        blocked, ignored = signal_masks(child.pid)
        assert ignored & SIGTERM_BIT and not blocked & SIGTERM_BIT
        assert signal.getsignal(signal.SIGTERM) is handler
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, set())
        child.kill()
        child.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)

"""``sigterm_shield``: a process started inside ignores SIGTERM, as PySpark starts its
JVM (a subprocess with a ``preexec_fn``); this process keeps its own handler meanwhile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sparkcdc.spark.sigterm_shield import sigterm_shield

SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def ignores_sigterm(pid: int) -> bool:
    fields = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return bool(int(fields["SigIgn"], 16) & SIGTERM_BIT)


def test_a_child_started_inside_ignores_sigterm_and_this_process_handles_it() -> None:
    received: list[int] = []

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)

    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    previous = signal.signal(signal.SIGTERM, handler)
    children = []
    try:
        with sigterm_shield():
            inside = subprocess.Popen(sleeper, preexec_fn=lambda: None)  # as PySpark's
            children.append(inside)
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 10
            while not received and time.monotonic() < deadline:
                time.sleep(0.01)
            assert received == [signal.SIGTERM]
        after = subprocess.Popen(sleeper, preexec_fn=lambda: None)
        children.append(after)
        time.sleep(0.5)  # both have exec'd by now
        assert ignores_sigterm(inside.pid)
        assert not ignores_sigterm(after.pid)
        assert signal.getsignal(signal.SIGTERM) is handler
    finally:
        signal.signal(signal.SIGTERM, previous)
        for child in children:
            child.kill()
            child.wait()

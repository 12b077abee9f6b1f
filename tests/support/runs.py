"""``sparkcdc run`` as a separate process, as users and schedulers run it (tests that kill it
or signal it need a process of its own), and never left running after its test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: ``sparkcdc run`` processes started by the current test (conftest stops what is left).
_STARTED: list[subprocess.Popen[bytes]] = []


def start_run(
    pipeline: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``sparkcdc run PIPELINE`` in its own process group, its output in ``run-<ns>.log``
    beside the pipeline file; ``env``: variables added to its environment only."""
    with open(pipeline.parent / f"run-{time.monotonic_ns()}.log", "wb") as log:  # the child's
        process = subprocess.Popen(
            [sys.executable, "-m", "sparkcdc.cli.main", "run", str(pipeline), *extra],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    _STARTED.append(process)
    return process


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the run's whole process group (its JVM and Python workers too)."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def kill_leftover_runs() -> None:
    """Kill what the test started and left running (a test that failed midway): a leftover
    pipeline and its JVM would keep the machine busy for the rest of the suite."""
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            kill(process)

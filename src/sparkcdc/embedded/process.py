"""Process plumbing shared by the embedded servers: ports, waiting, logs, shutdown."""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path


class ServiceError(RuntimeError):
    """An embedded server could not be started or stopped; the message carries its log tail."""


#: The lowest port :func:`free_port` hands out.
_FIRST_PORT = 10_000
_PORTS = random.Random()  # its own: tests seeding ``random`` must not make workers agree


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now, below the kernel's ephemeral range when
    there is room there: a port from that range is also what every outgoing connection
    takes as its local end, so one could take a server's port between this check and
    the server's bind, or while a server restarted on the same port is down."""
    first_ephemeral = _ephemeral_ports()[0]
    for _ in range(100):
        if first_ephemeral <= _FIRST_PORT:
            break
        port = _PORTS.randrange(_FIRST_PORT, first_ephemeral)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # the OS picks one
        sock.bind(("127.0.0.1", 0))
        picked: int = sock.getsockname()[1]
        return picked


def _ephemeral_ports() -> tuple[int, int]:
    """The kernel's range of local ports for outgoing connections (Linux's default when
    it cannot be read)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def process_state(process: subprocess.Popen[bytes] | None) -> str:
    """Whether a server process is running, for a failed test's report."""
    if process is None:
        return "not started (or stopped)"
    code = process.poll()
    return "running" if code is None else f"exited with code {code}"


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def log_tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log file, for error messages."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def require_binary(name: str, candidates: Sequence[str], hint: str) -> str:
    """Find an executable by name on PATH or at known locations, else explain how to install it."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise ServiceError(f"{name} not found (looked on PATH and in {list(candidates)}); {hint}")


def wait_until(
    ready: Callable[[], bool],
    *,
    timeout: float,
    process: subprocess.Popen[bytes] | None,
    what: str,
    log: Path,
) -> None:
    """Poll ``ready`` until true; fail early when the process dies, with its log tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if process is not None and process.poll() is not None:
            raise ServiceError(
                f"{what} exited with code {process.returncode} during start-up:\n{log_tail(log)}"
            )
        time.sleep(0.1)
    raise ServiceError(f"{what} not ready after {timeout:.0f}s:\n{log_tail(log)}")


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Ask Linux to SIGTERM this server when the process that started it dies, so a killed
    test run does not leave servers behind (PR_SET_PDEATHSIG). Linux sends the signal when
    the *thread* that started it ends, so servers started from other threads (a fault
    test's restart in the background) do not ask for it: they would die with that thread."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def start_process(
    argv: Sequence[str], log: Path, *, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a server in its own process group with stdout/stderr going to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    main = threading.current_thread() is threading.main_thread()
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent if main else None,
        )


def stop_process(process: subprocess.Popen[bytes] | None, timeout: float = 20.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it does not exit in time."""
    if process is None or process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        process.wait(timeout=timeout)

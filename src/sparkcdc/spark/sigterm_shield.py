"""Start the JVM with SIGTERM ignored, without losing a SIGTERM sent meanwhile.

A scheduler's SIGTERM goes to the whole process group. The pipeline's Python process
stops the stream cleanly on it; the JVM must not see it, or it would exit at once and
the Python side lose it mid-call. So the JVM starts with SIGTERM ignored, which a child
inherits only from a parent that ignores it too. Ignoring it in this process for the
seconds the JVM takes to start would drop a SIGTERM sent then, and the pipeline would run
on; so the signal is also blocked meanwhile: Linux keeps a blocked signal pending even
while it is ignored, and delivers it to the handler restored afterwards. Children forked
meanwhile unblock it again (the JVM's own children, PySpark's workers, must see the
SIGTERM the JVM sends them to stop)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_hooked = False


def _unblock_in_child() -> None:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


@contextmanager
def sigterm_shield() -> Iterator[None]:
    """Processes started meanwhile ignore SIGTERM; this one gets a SIGTERM sent meanwhile
    once the block ends. Only the main thread can change signal handling: elsewhere this
    does nothing."""
    global _hooked
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if not _hooked:
        # runs in children forked by os.fork or a subprocess with preexec_fn (PySpark's)
        os.register_at_fork(after_in_child=_unblock_in_child)
        _hooked = True
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

"""Start the JVM with SIGTERM ignored, while this process keeps handling it.

A scheduler's SIGTERM goes to the whole process group. The pipeline's Python process
stops the stream cleanly on it; the JVM must not see it, or it would exit at once and
the Python side lose it mid-call. A child ignores a signal from its start only if it
inherits "ignored"; ignoring SIGTERM in this process for the seconds the JVM takes to
start would drop a SIGTERM sent then (the pipeline would run on), and blocking it
meanwhile does not help once other threads run. So only the child ignores it: a hook
that runs in children forked meanwhile (PySpark starts the JVM through a subprocess with
a ``preexec_fn``, which runs Python's fork hooks before the exec) sets it there."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

_hooked = False
_shielding = False  #: copied into a forked child: whether it was forked meanwhile


def _ignore_in_child() -> None:
    if _shielding:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextmanager
def sigterm_shield() -> Iterator[None]:
    """Processes forked meanwhile (from Python) ignore SIGTERM; this one does not."""
    global _hooked, _shielding
    if not _hooked:
        os.register_at_fork(after_in_child=_ignore_in_child)
        _hooked = True
    _shielding = True
    try:
        yield
    finally:
        _shielding = False

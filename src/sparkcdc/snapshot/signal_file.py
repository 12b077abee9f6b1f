"""The file signal channel: one JSON signal per line, appended, read by byte position.

Debezium's file channel rewrites the file to remove what it has read. Here the file is only
ever appended to, and the stream's offset keeps the byte position read up to: a signal is
consumed in the batch whose end offset moves past its line, so it takes effect exactly once
across restarts (Spark commits that offset), and a stream killed after reading it but
before committing reads it again. Only whole lines (ending in a newline) are read, so a
writer caught in the middle of a line is read on the next batch.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from sparkcdc.snapshot.signal import Received, received

log = logging.getLogger(__name__)


class FileSignals:
    """``signal.file``: its position in the offset is the byte count read up to."""

    name = "file"

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, position: Any) -> tuple[list[Received], int]:
        """The signals after byte ``position`` and the position after the last whole line.

        A file shorter than ``position`` was replaced (or truncated): it is read from its
        start, with a warning, since the old position means nothing in it."""
        start = int(position or 0)
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return [], start
        if size < start:
            log.warning(
                "signal file %s is shorter than the position read up to (%d bytes): it was "
                "replaced; reading it from the start",
                self.path,
                start,
            )
            start = 0
        if size == start:
            return [], start
        with self.path.open("rb") as handle:
            before = handle.read(start).count(b"\n")  # line numbers, for messages
            data = handle.read(size - start)
        whole = data[: data.rfind(b"\n") + 1]
        signals = [
            received(f"signal file {self.path}, line {before + i + 1}", str(before + i + 1), text)
            for i, text in enumerate(whole.split(b"\n")[:-1])
            if text.strip()
        ]
        return signals, start + len(whole)


def append_signal(path: Path, signal: dict[str, Any]) -> None:
    """Append one signal as a line, in one write (O_APPEND): concurrent writers do not
    interleave, and a reader sees the line whole or not at all."""
    line = (json.dumps(signal, separators=(",", ":")) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)

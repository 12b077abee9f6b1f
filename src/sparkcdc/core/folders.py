"""Local folders the pipeline must write (checkpoint, log file, Delta targets), checked
before anything starts: an unwritable one would otherwise fail deep inside the first batch
with a traceback from Spark or Python."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from sparkcdc.core.errors import SparkCdcError

#: A location with a scheme (``s3a://``, ``hdfs://``, ``file://``): Hadoop's file systems
#: read it, and ``pathlib`` must not (it folds ``//`` and would make it relative).
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(location: str) -> bool:
    """Whether ``location`` names storage by URI rather than a local folder."""
    return bool(_URI.match(location))


class UnwritableFolderError(SparkCdcError):
    """A folder sparkcdc must write to cannot be written."""


def ensure_writable(folder: Path, what: str) -> None:
    """Create ``folder`` if needed and prove a file can be written in it; ``what`` names
    the option that gave it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".sparkcdc-write-test-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UnwritableFolderError(
            f"{what}: cannot write to {folder} ({reason}); give a folder this user can "
            "write, with space left"
        ) from None

"""What every single-process embedded server shares: a private folder (removed by
:meth:`LocalServer.stop` when the server made it), a loopback port that a restart keeps
(clients and their offsets know it), and its stop / restart / ``with`` life cycle."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TypeVar

from sparkcdc.embedded.process import free_port, stop_process

S = TypeVar("S", bound="LocalServer")


class LocalServer(ABC):
    """One server process in ``base_dir`` (a new temp folder named ``folder_prefix...``
    when None) on ``host``:``port``, started by the subclass's :meth:`start`."""

    def __init__(self, base_dir: Path | None, folder_prefix: str) -> None:
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix=folder_prefix))
        self.host = "127.0.0.1"
        self.port = 0
        self._port_chosen = False  #: a restart keeps the port clients know
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def datadir(self) -> Path:
        return self.base_dir / "data"

    @abstractmethod
    def start(self: S, timeout: float = 60.0) -> S:
        """Start the server (again after :meth:`restart`'s stop: same folder and port)."""

    def _keep_port(self) -> None:
        """Take a free port on the first start only."""
        if not self._port_chosen:
            self.port = free_port()
        self._port_chosen = True

    def restart(self, down_seconds: float = 0.0) -> None:
        """Shut the server down (SIGTERM: a clean shutdown, as an operator's restart), wait
        ``down_seconds``, and start it again with the same data on the same port."""
        stop_process(self._process, timeout=30)
        self._process = None
        time.sleep(down_seconds)
        self.start()

    def stop(self) -> None:
        """Stop the server and remove its folder if this object created it."""
        stop_process(self._process, timeout=30)
        self._process = None
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

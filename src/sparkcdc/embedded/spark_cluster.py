"""A Spark standalone cluster on loopback: one master and N workers, each its own JVM.

Started from the installed PySpark distribution (``pyspark/bin/spark-class``), so it needs
nothing beyond what ``pip install sparkcdc`` brings. A pipeline run against its
``master_url`` gets executors in their own JVMs (one per worker), with their own Python
workers: what a real cluster does, and what ``local[N]`` hides (state a task finds in the
driver's process, a module the driver can import and the executors cannot).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from sparkcdc.embedded.process import (
    ServiceError,
    free_port,
    port_open,
    start_process,
    stop_process,
    wait_until,
)

#: Settings of the master and the workers: no REST submission server (a fixed port, 6066),
#: executors' work folders left in place for a test to read their logs.
_DAEMON_PROPERTIES = (
    "spark.master.rest.enabled false\n"
    "spark.worker.cleanup.enabled false\n"
    "spark.ui.showConsoleProgress false\n"
)


def _says(log: Path, text: str) -> Callable[[], bool]:
    """Whether ``log`` holds ``text`` yet (a daemon's start-up line)."""
    return lambda: log.is_file() and text in log.read_text(errors="replace")


class EmbeddedSparkCluster:
    """``deploy.master.Master`` and ``workers`` x ``deploy.worker.Worker`` on free ports."""

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1536m",
    ) -> None:
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="sparkcdc-spark-"))
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = 0
        self._master: subprocess.Popen[bytes] | None = None
        self._workers: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def work_dir(self, worker: int) -> Path:
        """Where worker ``worker`` (0-based) runs its executors: ``app-*/<id>/stderr``."""
        return self.base_dir / f"worker-{worker}"

    def executor_logs(self, worker: int) -> list[Path]:
        """The standard error files of every executor this worker has run."""
        return sorted(self.work_dir(worker).glob("app-*/*/stderr"))

    def _spark_class(self, main: str, *args: str) -> list[str]:
        import pyspark

        home = Path(pyspark.__file__).parent
        return [str(home / "bin" / "spark-class"), main, *args]

    def _environment(self) -> dict[str, str]:
        import pyspark

        env = dict(os.environ)
        env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        return env

    def start(self, timeout: float = 120.0) -> EmbeddedSparkCluster:
        """Start the master, then the workers, and wait until every worker has registered."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        properties = self.base_dir / "spark-daemons.conf"
        properties.write_text(_DAEMON_PROPERTIES)
        self.port = free_port()
        log = self.base_dir / "master.log"
        self._master = start_process(
            self._spark_class(
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port", "0"),
                *("--properties-file", str(properties)),
            ),
            log,
            env=self._environment(),
        )
        wait_until(
            lambda: port_open(self.port) and _says(log, "ALIVE")(),
            timeout=timeout,
            process=self._master,
            what="spark master",
            log=log,
        )
        for index in range(self.workers):
            self.work_dir(index).mkdir(parents=True, exist_ok=True)
            worker_log = self.base_dir / f"worker-{index}.log"
            process = start_process(
                self._spark_class(
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    *("--host", "127.0.0.1", "--webui-port", "0"),
                    *("--cores", str(self.cores), "--memory", self.memory),
                    *("--work-dir", str(self.work_dir(index))),
                    *("--properties-file", str(properties)),
                ),
                worker_log,
                env=self._environment(),
            )
            self._workers.append(process)
        for index, process in enumerate(self._workers):
            worker_log = self.base_dir / f"worker-{index}.log"
            wait_until(
                _says(worker_log, "Successfully registered with master"),
                timeout=timeout,
                process=process,
                what=f"spark worker {index}",
                log=worker_log,
            )
        return self

    def stop(self) -> None:
        for process in self._workers:
            stop_process(process, timeout=30)
        self._workers = []
        stop_process(self._master, timeout=30)
        self._master = None
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedSparkCluster:
        try:
            return self.start()
        except ServiceError:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()

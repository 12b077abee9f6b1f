"""A single-node Apache Kafka broker in KRaft mode, run from the Maven-fetched jars."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from sparkcdc.embedded.local_server import LocalServer
from sparkcdc.embedded.process import (
    ServiceError,
    free_port,
    port_open,
    require_binary,
    start_process,
    wait_until,
)
from sparkcdc.spark.jars import jar_files, jars_root


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (22 chars),
    never starting with "-" (as Kafka's own ``Uuid.randomUuid``): the storage tool's
    argument parser takes such a value for an option and refuses the format."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class EmbeddedKafka(LocalServer):
    """``kafka.Kafka`` as combined broker + controller on two free loopback ports."""

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        heap: str = "512m",
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        """``tls`` is a (certificate, key) PEM pair: the broker then also listens for TLS
        clients on :attr:`ssl_bootstrap_servers` (the plain listener stays, for the harness)."""
        super().__init__(base_dir, "sparkcdc-kafka-")
        self.tls = tls
        self.ssl_port = 0
        self.heap = heap
        self.controller_port = 0
        self._cluster = cluster_id()  # kept: a restart formats (ignored) with the same id

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ssl_bootstrap_servers(self) -> str:
        if self.tls is None:
            raise ServiceError("this broker was started without tls=(certificate, key)")
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def log(self) -> Path:
        return self.base_dir / "kafka.out"

    def _java(self, main: str, *args: str) -> list[str]:
        java = require_binary("java", [], "install a JDK 17 (Debian: openjdk-17-jdk-headless)")
        log4j = jars_root().parent / "kafka-log4j2.properties"
        return [
            java,
            "-Xms128m",
            f"-Xmx{self.heap}",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}",
            f"-Dkafka.logs.dir={self.base_dir / 'logs'}",
            "-cp",
            ":".join(str(p) for p in jar_files("kafka")),
            main,
            *args,
        ]

    def start(self, timeout: float = 90.0) -> EmbeddedKafka:
        """Start the broker (again, after :meth:`restart`'s stop: on the same ports, with
        the same data)."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if not self.port:
            self.port, self.controller_port = free_port(), free_port()
            self.ssl_port = free_port() if self.tls is not None else 0
        started = self._started_lines()
        config = self._write_config()
        self._format_storage(config)
        self._process = start_process(self._java("kafka.Kafka", str(config)), self.log)
        wait_until(
            lambda: port_open(self.port) and self._started_lines() > started,
            timeout=timeout,
            process=self._process,
            what="kafka",
            log=self.log,
        )
        return self

    def _write_config(self) -> Path:
        """``server.properties`` of a one-node KRaft cluster sized for tests: every
        replication factor 1, one partition per topic, no rebalance delay."""
        config = self.base_dir / "server.properties"
        config.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{self.controller_port}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},"
                    f"CONTROLLER://127.0.0.1:{self.controller_port}{self._ssl_listener()}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}{self._ssl_listener()}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
                    "SSL:SSL",
                    *self._ssl_settings(),
                    f"log.dirs={self.base_dir / 'data'}",
                    "num.partitions=1",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "offsets.topic.num.partitions=1",
                    "group.initial.rebalance.delay.ms=0",
                    # an idle controller otherwise appends a no-op record every 500 ms,
                    # which a test broker living the whole suite pays for in CPU
                    "metadata.max.idle.interval.ms=0",
                    "auto.create.topics.enable=true",
                    "",
                ]
            )
        )
        return config

    def _format_storage(self, config: Path) -> None:
        """Format the log folder for the cluster id (a restart's format is ignored: the
        data stays)."""
        fmt = subprocess.run(
            self._java(
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                self._cluster,
                "--config",
                str(config),
                "--ignore-formatted",
            ),
            capture_output=True,
            text=True,
            check=False,
        )
        if fmt.returncode != 0:
            raise ServiceError(f"kafka storage format failed:\n{fmt.stdout}\n{fmt.stderr}")

    def _ssl_listener(self) -> str:
        return f",SSL://127.0.0.1:{self.ssl_port}" if self.tls is not None else ""

    def _ssl_settings(self) -> list[str]:
        """The SSL listener's key and certificate, inline PEM (Kafka takes an unencrypted
        key only inline); a properties file spells the PEM's line breaks ``\\n``."""
        if self.tls is None:
            return []
        certificate, key = (p.read_text().strip().replace("\n", "\\n") for p in self.tls)
        return [
            "ssl.keystore.type=PEM",
            f"ssl.keystore.certificate.chain={certificate}",
            f"ssl.keystore.key={key}",
        ]

    def _started_lines(self) -> int:
        if not self.log.exists():
            return 0
        return self.log.read_text(errors="replace").count("Kafka Server started")

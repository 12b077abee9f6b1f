"""What ``validate`` and ``run`` check before a JVM starts, writing nothing.

Spark takes tens of seconds to start on a small machine; a run that fails only then, on a
folder it cannot write or a jar it cannot find, wastes that time and hides the cause in a
JVM stack trace. These checks need neither Spark nor a database driver: the folders the
run will write (checkpoint, its log, a local Delta path) can be made and written by this
user, the JVM's jars are in their folder or in a local Maven / Ivy cache (else Spark
downloads them as it starts: said, not refused), and the sink's servers (a JDBC database,
Kafka brokers) accept a TCP connection. The source server is checked after these by the
plan (pipeline/plan.py), which connects to it and inspects its configuration.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from pathlib import Path

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.folders import is_uri
from sparkcdc.pipeline.definition import PipelineDefinition
from sparkcdc.spark.jars import (
    JarsMissingError,
    SparkPackage,
    jar_folder,
    missing_packages,
)

#: Seconds a sink server may take to accept a TCP connection.
CONNECT_SECONDS = 5.0


class PreflightError(SparkCdcError):
    """Something a run would fail on later, found before Spark starts."""


def preflight(
    definition: PipelineDefinition,
    log_file: Path | None,
    say: Callable[[str], None],
    servers: bool = True,
) -> None:
    """Check folders, jars and (with ``servers``) the sink's servers; ``say`` gets one line
    per check that passed or has something to tell; the first failure raises
    :class:`PreflightError`."""
    checkpoint = definition.settings.checkpoint
    folders = [("pipeline.checkpoint", checkpoint)]
    if log_file is not None:
        folders.append(("the Spark log (--log-file)", log_file.parent))
    for option in ("path", "location"):  # a Delta sink's folders (location: catalog tables)
        path = definition.sink_options.get(option)
        if definition.sink_type == "delta" and path and not is_uri(path):
            local = Path(path)
            folders.append(
                (f"sink.{option}", local if local.is_absolute() else definition.path.parent / local)
            )
    for what, folder in folders:
        problem = unwritable(folder)
        if problem:
            raise PreflightError(
                f"{what}: cannot write to {folder} ({problem}); give a folder this user can write"
            )
    say(f"folders ok: checkpoint {checkpoint}")
    for line in jar_report(definition.settings.spark_conf):
        say(line)
    if servers:
        check_sink_servers(definition, say)


def check_sink_servers(definition: PipelineDefinition, say: Callable[[str], None]) -> None:
    """The sink's servers accept a TCP connection (``validate`` asks after the plan, so a
    mistake in the file is named before a server that is down)."""
    for host, port, what in sink_servers(definition):
        reachable(host, port, what)
        say(f"{what} {host}:{port} reachable")


def unwritable(folder: Path) -> str | None:
    """Why this user could not create files in ``folder`` (None: it could), found without
    writing: the folder, or the nearest existing folder above it, must be a directory this
    user may write and enter. ``/proc/lakehouse`` fails here (``/proc`` refuses new
    entries to everyone, root too: it is not a disk)."""
    probe = folder.resolve()
    while not probe.exists():
        if probe.parent == probe:
            return "no existing folder above it"
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is a file, not a folder"
    if _virtual(probe):
        return f"{probe} is on a virtual file system, not a disk"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"{probe} is not writable by this user"
    return None


def _virtual(folder: Path) -> bool:
    """Whether ``folder`` is on /proc or /sys, whose permission bits say "writable" to
    root but which take no new files."""
    parts = folder.parts
    return len(parts) > 1 and parts[1] in ("proc", "sys")


def jar_report(conf: dict[str, str] | object) -> list[str]:
    """Where the JVM's jars will come from; raises when a named folder of jars is empty."""
    settings = dict(conf) if isinstance(conf, dict) else {}
    try:
        folder = jar_folder()
    except JarsMissingError as exc:
        raise PreflightError(f"jars: {exc}") from None
    if folder is not None:
        return [f"jars ok: {folder}"]
    missing = missing_packages(settings)
    if not missing:
        return ["jars ok: Spark's own classpath has them"]
    cached = [p for p in missing if cached_jar(p) is not None]
    lines = [f"jars ok: {p.coordinate} in the local Maven/Ivy cache" for p in cached]
    remote = [p.coordinate for p in missing if p not in cached]
    if remote:
        where = settings.get("spark.jars.repositories", "Maven Central")
        if settings.get("spark.jars.ivySettings"):
            where = f"the repositories of {settings['spark.jars.ivySettings']}"
        lines.append(
            f"jars: Spark downloads {', '.join(remote)} from {where} as it starts (once; "
            "needs the network, or set SPARKCDC_JARS_DIR to a folder of them: `sparkcdc jars`)"
        )
    return lines


def cached_jar(package: SparkPackage) -> Path | None:
    """The package's jar in the local Maven repository or Spark's Ivy cache, if there."""
    home = Path.home()
    group = package.group.replace(".", "/")
    candidates: Iterable[Path] = (
        home
        / ".m2"
        / "repository"
        / group
        / package.artifact
        / package.version
        / f"{package.artifact}-{package.version}.jar",
        *(
            folder / f"{package.group}_{package.artifact}-{package.version}.jar"
            for folder in home.glob(".ivy2*/jars")
        ),
    )
    return next((c for c in candidates if c.is_file()), None)


def sink_servers(definition: PipelineDefinition) -> list[tuple[str, int, str]]:
    """The servers the sink connects to: a JDBC target, Kafka's bootstrap brokers."""
    options = {k.lower(): v for k, v in definition.sink_options.items()}
    if definition.sink_type == "jdbc" and options.get("url"):
        from sparkcdc.sinks.jdbc.config import JdbcUrl

        url = JdbcUrl.parse(options["url"])
        return [(url.host, url.port, "sink database")]
    if definition.sink_type == "kafka" and options.get("properties.bootstrap.servers"):
        servers = []
        for item in options["properties.bootstrap.servers"].split(","):
            host, _, port = item.strip().rpartition(":")
            if host and port.isdigit():
                servers.append((host.strip("[]"), int(port), "Kafka broker"))
        return servers
    return []


def reachable(host: str, port: int, what: str) -> None:
    try:
        with socket.create_connection((host, port), timeout=CONNECT_SECONDS):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise PreflightError(
            f"{what} {host}:{port} is not reachable ({reason}); start it or fix the sink block"
        ) from None

"""A private PostgreSQL server with ``wal_level=logical`` for logical replication slots."""

from __future__ import annotations

import glob
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparkcdc.embedded.local_server import LocalServer
from sparkcdc.embedded.process import (
    ServiceError,
    port_open,
    require_binary,
    start_process,
    stop_process,
    wait_until,
)


def _pg_bin(name: str) -> str:
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    return require_binary(name, candidates, "install the Debian package postgresql")


class EmbeddedPostgres(LocalServer):
    """``initdb`` + ``postgres`` in a temp directory, on a free loopback port.

    PostgreSQL refuses to run as root, so when we are root the server runs as the
    ``postgres`` system user that the Debian package creates.
    """

    #: Server settings (``-c name=value``): logical decoding, and enough replication slots
    #: for a stream plus a short-lived copy per concurrent log read.
    SETTINGS: Mapping[str, str] = {
        "wal_level": "logical",
        "max_replication_slots": "64",
        "max_wal_senders": "20",
        # Durability is not needed for throw-away servers. synchronous_commit stays on:
        # logical decoding only sees flushed WAL, so async commits would appear late.
        "fsync": "off",
        "full_page_writes": "off",
    }

    def __init__(
        self,
        base_dir: Path | None = None,
        settings: Mapping[str, str] | None = None,
        *,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        """``settings`` override :attr:`SETTINGS` (say ``wal_level: replica`` to test a
        server that is not set up for CDC). ``tls`` is a (certificate, key) PEM pair: the
        server then takes TCP clients over TLS only (``hostssl`` in ``pg_hba.conf``)."""
        super().__init__(base_dir, "sparkcdc-postgres-")
        self.settings = {**self.SETTINGS, **(settings or {})}
        self.tls = tls
        self.user = "postgres"
        self.password = secrets.token_urlsafe(12)

    @property
    def log(self) -> Path:
        return self.base_dir / "postgres.log"

    def _as_server_user(self, argv: Sequence[str]) -> list[str]:
        if os.geteuid() != 0:
            return list(argv)
        try:
            pwd.getpwnam("postgres")
        except KeyError as exc:
            raise ServiceError("running as root needs the 'postgres' system user") from exc
        return ["runuser", "-u", "postgres", "--", *argv]

    def start(self, timeout: float = 60.0) -> EmbeddedPostgres:
        """Initialise the cluster (first time only) and start it."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self._give_to_server_user(self.base_dir)
        if not (self.datadir / "PG_VERSION").exists():
            self._initdb()
        if self.tls is not None:
            self._require_tls(*self.tls)
        self._keep_port()
        argv = [
            _pg_bin("postgres"),
            "-D",
            str(self.datadir),
            "-p",
            str(self.port),
            "-h",
            self.host,
            "-k",
            str(self.base_dir),
            *(a for name, value in self.settings.items() for a in ("-c", f"{name}={value}")),
        ]
        self._process = start_process(self._as_server_user(argv), self.log)
        wait_until(
            lambda: port_open(self.port) and self._accepts_queries(),
            timeout=timeout,
            process=self._process,
            what="postgres",
            log=self.log,
        )
        return self

    def _give_to_server_user(self, path: Path) -> None:
        """Make ``path`` the ``postgres`` user's when we are root (the server runs as it)."""
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _initdb(self) -> None:
        """Create the cluster, its superuser's password given in a file (never in the
        process arguments) that is removed right after."""
        pwfile = self.base_dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        self._give_to_server_user(pwfile)
        argv = [_pg_bin("initdb"), "-D", str(self.datadir), "-U", self.user]
        argv += [f"--pwfile={pwfile}", "-A", "scram-sha-256", "-E", "UTF8"]
        argv += ["--locale=C.UTF-8", "--no-sync"]
        done = subprocess.run(
            self._as_server_user(argv), capture_output=True, text=True, check=False
        )
        pwfile.unlink()
        if done.returncode != 0:
            raise ServiceError(f"initdb failed:\n{done.stdout}\n{done.stderr}")

    def _require_tls(self, certificate: Path, key: Path) -> None:
        """Serve TLS with copies of the files the server user owns (PostgreSQL refuses a
        key others can read), and turn every TCP ``host`` line of pg_hba.conf into
        ``hostssl``: a client asking for clear text is refused."""
        folder = self.base_dir / "tls"
        folder.mkdir(exist_ok=True)
        copies = (folder / "server.pem", folder / "server.key")
        for source, copy in zip((certificate, key), copies, strict=True):
            shutil.copyfile(source, copy)
            copy.chmod(0o600)
            self._give_to_server_user(copy)
            self._give_to_server_user(folder)
        self.settings = {
            **self.settings,
            "ssl": "on",
            "ssl_cert_file": str(copies[0]),
            "ssl_key_file": str(copies[1]),
        }
        hba = self.datadir / "pg_hba.conf"
        lines = hba.read_text().splitlines()
        hba.write_text("".join(re.sub(r"^host(\s)", r"hostssl\1", line) + "\n" for line in lines))

    def _accepts_queries(self) -> bool:
        try:
            with self.connect():
                return True
        except Exception:  # still starting: "the database system is starting up"
            return False

    def connect(self, dbname: str = "postgres", **kwargs: Any) -> Any:
        """A psycopg (v3) connection with autocommit on."""
        import psycopg

        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=dbname,
            autocommit=True,
            **kwargs,
        )

    def execute(
        self, sql: str, params: Any = None, dbname: str = "postgres"
    ) -> list[tuple[Any, ...]]:
        with self.connect(dbname) as conn, conn.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall()) if cur.description else []

    def create_database(self, name: str) -> str:
        self.execute(f'CREATE DATABASE "{name}"')
        return name

    def restart(self, down_seconds: float = 0.0) -> None:
        """Shut the server down as ``pg_ctl restart`` does (SIGINT: the fast shutdown,
        which disconnects clients; SIGTERM's smart one would wait for them), wait
        ``down_seconds``, and start it again on the same port."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                stop_process(process, timeout=30)
        time.sleep(down_seconds)
        self.start()

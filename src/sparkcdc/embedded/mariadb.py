"""A private MariaDB server configured for CDC (binlog ROW, FULL images and metadata, GTID)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparkcdc.embedded.process import (
    ServiceError,
    free_port,
    log_tail,
    port_open,
    require_binary,
    start_process,
    stop_process,
    wait_until,
)

#: Server settings a CDC source needs; tests override single entries to provoke errors.
CDC_SETTINGS: Mapping[str, str] = {
    "log-bin": "binlog",
    "binlog-format": "ROW",
    "binlog-row-image": "FULL",
    "binlog-row-metadata": "FULL",
    "gtid-strict-mode": "1",
    "character-set-server": "utf8mb4",
    "collation-server": "utf8mb4_general_ci",
    # Test speed over durability: the server's data lives only as long as the test run.
    "innodb-flush-log-at-trx-commit": "2",
    "sync-binlog": "0",
    "innodb-buffer-pool-size": "512M",
    "max-connections": "300",
    "skip-name-resolve": "",
}

_server_ids = iter(range(1001, 2001))
_server_ids_lock = threading.Lock()


@dataclass(frozen=True)
class Account:
    """A login on the embedded server."""

    user: str
    password: str


class EmbeddedMariaDB:
    """Start ``mariadbd`` from the Debian package in a temp datadir on a free loopback port.

    Besides ``root`` (no password, loopback only) it creates a least-privilege CDC account
    holding exactly SELECT, REPLICATION SLAVE and REPLICATION CLIENT, which is what the
    source needs; tests use it to prove the source never needs more.
    """

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        settings: Mapping[str, str | None] | None = None,
    ) -> None:
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="sparkcdc-mariadb-"))
        self.settings: dict[str, str] = dict(CDC_SETTINGS)
        for key, value in (settings or {}).items():
            if value is None:
                self.settings.pop(key, None)
            else:
                self.settings[key] = value
        with _server_ids_lock:
            self.server_id = next(_server_ids)
        self.host = "127.0.0.1"
        self.port = 0
        self.root = Account("root", "")
        self.cdc = Account("sparkcdc_cdc", secrets.token_urlsafe(12))
        self.replication = Account("sparkcdc_repl", secrets.token_urlsafe(12))  #: replicas'
        self._process: subprocess.Popen[bytes] | None = None
        self._port_chosen = False  #: a restart keeps the port clients know

    @property
    def datadir(self) -> Path:
        return self.base_dir / "data"

    @property
    def socket(self) -> Path:
        return self.base_dir / "mariadb.sock"

    @property
    def log(self) -> Path:
        return self.base_dir / "mariadb.log"

    def start(self, timeout: float = 60.0) -> EmbeddedMariaDB:
        """Initialise the datadir (first time only), start the server, create the CDC user."""
        mariadbd = require_binary(
            "mariadbd", ["/usr/sbin/mariadbd"], "install the Debian package mariadb-server"
        )
        install_db = require_binary(
            "mariadb-install-db", ["/usr/bin/mariadb-install-db"], "install mariadb-server"
        )
        self.base_dir.mkdir(parents=True, exist_ok=True)
        # its own temporary files: two servers bootstrapped at once in /tmp can take the
        # same temporary table name (seen with two test workers starting together)
        tmpdir = self.base_dir / "tmp"
        tmpdir.mkdir(exist_ok=True)
        run_as_root = os.geteuid() == 0
        if not (self.datadir / "mysql").is_dir():
            argv = [
                install_db,
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--tmpdir={tmpdir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ]
            if run_as_root:
                argv.append("--user=root")
            done = subprocess.run(argv, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise ServiceError(f"mariadb-install-db failed:\n{done.stdout}\n{done.stderr}")
        if not self._port_chosen:
            self.port = free_port()
        self._port_chosen = True
        argv = [
            mariadbd,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={tmpdir}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--socket={self.socket}",
            f"--pid-file={self.base_dir / 'mariadb.pid'}",
            f"--log-error={self.log}",
            f"--server-id={self.server_id}",
        ]
        if run_as_root:
            argv.append("--user=root")
        for key, value in self.settings.items():
            if key == "log-bin":
                argv.append(f"--log-bin={self.datadir / value}")
            else:
                argv.append(f"--{key}={value}" if value else f"--{key}")
        self._process = start_process(argv, self.base_dir / "mariadbd.out")
        wait_until(
            lambda: port_open(self.port),
            timeout=timeout,
            process=self._process,
            what="mariadbd",
            log=self.log,
        )
        self._create_cdc_user()
        return self

    def _create_cdc_user(self) -> None:
        with self.connect() as conn, conn.cursor() as cur:
            # not binlogged: a replica's own GTIDs would clash with its primary's (strict mode)
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(
                "CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s",
                (self.cdc.user, self.cdc.password),
            )
            privileges = "SELECT, REPLICATION SLAVE, REPLICATION CLIENT"
            cur.execute(f"GRANT {privileges} ON *.* TO '{self.cdc.user}'@'%'")

    def connect(self, database: str | None = None, account: Account | None = None) -> Any:
        """A PyMySQL connection (autocommit) as root, or as ``account``."""
        import pymysql

        who = account or self.root
        try:
            return pymysql.connect(
                host=self.host,
                port=self.port,
                user=who.user,
                password=who.password,
                database=database,
                autocommit=True,
                charset="utf8mb4",
            )
        except pymysql.err.OperationalError as exc:
            raise ServiceError(
                f"cannot connect to embedded MariaDB: {exc}\n{log_tail(self.log)}"
            ) from None

    def execute(
        self, sql: str, args: Any = None, database: str | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one statement as root and return its rows (empty for DML/DDL)."""
        with self.connect(database) as conn, conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def create_database(self, name: str) -> str:
        self.execute(f"CREATE DATABASE `{name}`")
        return name

    def source_options(self, account: Account | None = None) -> dict[str, str]:
        """The ``mysql-cdc`` options that reach this server (as the CDC user by default)."""
        who = account or self.cdc
        return {
            "hostname": self.host,
            "port": str(self.port),
            "username": who.user,
            "password": who.password,
        }

    def pipeline_source(self, tables: str, extra: str = "") -> str:
        """A pipeline file's ``source:`` block reading ``tables`` (``db.pattern``) from this
        server as the CDC user; ``extra``: more option lines, indented as options."""
        options = self.source_options()
        return f"""\
source:
  type: mysql
  hostname: {options["hostname"]}
  port: {options["port"]}
  username: {options["username"]}
  password: "{options["password"]}"
  tables: {tables}
{extra}"""

    def replicate_from(self, primary: EmbeddedMariaDB) -> None:
        """Make this (started, unwritten) server a GTID replica of ``primary``, from the
        primary's first transaction. For a replica whose binlog holds what it replicates
        (what capturing a replica needs), start it with the ``log-slave-updates`` setting."""
        account = primary.replication
        with primary.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(
                "CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s",
                (account.user, account.password),
            )
            cur.execute(f"GRANT REPLICATION SLAVE ON *.* TO '{account.user}'@'%'")
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(
                "CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %s, MASTER_USER = %s, "
                "MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos",
                (primary.host, primary.port, account.user, account.password),
            )
            cur.execute("START SLAVE")

    def catch_up(self, primary: EmbeddedMariaDB, timeout: float = 60.0) -> None:
        """Wait until this replica has applied everything ``primary`` has binlogged now."""
        ((position,),) = primary.execute("SELECT @@gtid_binlog_pos")
        ((waited,),) = self.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (position, timeout))
        if waited != 0:
            status = self.execute("SHOW SLAVE STATUS")
            raise ServiceError(f"replica did not reach GTID {position}: {status}")

    def restart(self, down_seconds: float = 0.0) -> None:
        """Shut the server down (SIGTERM: a clean shutdown, as an operator's restart), wait
        ``down_seconds``, and start it again with the same datadir on the same port."""
        stop_process(self._process, timeout=30)
        self._process = None
        time.sleep(down_seconds)
        self.start()

    def stop(self) -> None:
        """Stop the server and remove its directory if this object created it."""
        stop_process(self._process, timeout=30)
        self._process = None
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedMariaDB:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

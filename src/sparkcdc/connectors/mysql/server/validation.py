"""Up-front checks that the server is set up for CDC; each failure says what to change."""

from __future__ import annotations

import re
from typing import Any

from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.core.errors import SourceConfigurationError


def server_flavor(version: str) -> tuple[str, tuple[int, ...]]:
    """``('mariadb', (10, 11, 9))`` or ``('mysql', (8, 0, 36))`` from ``SELECT VERSION()``."""
    numbers = tuple(int(x) for x in re.findall(r"\d+", version.split("-")[0])[:3])
    return ("mariadb" if "mariadb" in version.lower() else "mysql", numbers)


def required_settings(flavor: str) -> list[tuple[str, str, str]]:
    """(variable, required value, how to fix) for the settings row-based CDC relies on."""
    return [
        ("log_bin", "ON", "start the server with log-bin (e.g. log-bin=mysql-bin in [mysqld])"),
        (
            "binlog_format",
            "ROW",
            "set binlog_format=ROW in [mysqld] (or SET GLOBAL binlog_format='ROW' and reconnect "
            "writers)",
        ),
        (
            "binlog_row_image",
            "FULL",
            "set binlog_row_image=FULL in [mysqld] (or SET GLOBAL binlog_row_image='FULL'); "
            "normalisation and deletes need complete before-images",
        ),
        (
            "binlog_row_metadata",
            "FULL",
            "set binlog_row_metadata=FULL in [mysqld] (or SET GLOBAL binlog_row_metadata='FULL'"
            f"; {'MariaDB 10.5+' if flavor == 'mariadb' else 'MySQL 8.0.14+'}); row events "
            "then carry column names. It only affects events written after the change",
        ),
    ]


def check_version(flavor: str, version: tuple[int, ...], text: str) -> None:
    minimum = (10, 5) if flavor == "mariadb" else (8, 0, 14)
    if version < minimum:
        wanted = "MariaDB 10.5" if flavor == "mariadb" else "MySQL 8.0.14"
        raise SourceConfigurationError(
            f"server version {text} is too old for CDC: {wanted} or newer is needed "
            "(binlog_row_metadata=FULL gives row events their column names)"
        )


def settings_problems(values: dict[str, str], flavor: str) -> list[str]:
    """One line per required setting that is wrong: its value, the value needed, the fix."""
    problems = []
    for name, wanted, fix in required_settings(flavor):
        actual = values.get(name, "(not set)")
        if actual.upper() != wanted:
            problems.append(f"{name} is {actual}, needs {wanted}: {fix}")
    return problems


_GLOBAL_GRANT = re.compile(r"^\s*GRANT\s+(.+?)\s+ON\s+\*\.\*\s+TO\s", re.IGNORECASE | re.DOTALL)


def global_privileges(grants: list[str]) -> set[str]:
    """The privileges granted ``ON *.*`` in ``SHOW GRANTS`` lines, upper-cased, one per item
    (so ``REPLICATION SLAVE ADMIN`` is not mistaken for ``REPLICATION SLAVE``)."""
    privileges: set[str] = set()
    for grant in grants:
        match = _GLOBAL_GRANT.match(grant)
        if match:
            privileges.update(" ".join(p.split()).upper() for p in match.group(1).split(","))
    return privileges


#: (privilege to name in the fix, privileges that satisfy it). REPLICATION REPLICA is
#: MariaDB's/MySQL's newer spelling; MariaDB 10.5+ shows REPLICATION CLIENT as BINLOG MONITOR;
#: SUPER still allows SHOW MASTER STATUS / SHOW BINARY LOGS on both.
_NEEDED_PRIVILEGES = (
    ("REPLICATION SLAVE", frozenset({"REPLICATION SLAVE", "REPLICATION REPLICA"})),
    ("REPLICATION CLIENT", frozenset({"REPLICATION CLIENT", "BINLOG MONITOR", "SUPER"})),
)


def grant_problems(grants: list[str], user: str, flavor: str = "mysql") -> list[str]:
    """What the user lacks of REPLICATION SLAVE and REPLICATION CLIENT (MariaDB: BINLOG
    MONITOR), as one line with the GRANT statement that fixes it; empty if nothing."""
    privileges = global_privileges(grants)
    if privileges & {"ALL", "ALL PRIVILEGES"}:
        return []
    missing = [name for name, accepted in _NEEDED_PRIVILEGES if not privileges & accepted]
    if not missing:
        return []
    names = [
        "REPLICATION CLIENT (called BINLOG MONITOR in MariaDB 10.5+)"
        if name == "REPLICATION CLIENT" and flavor == "mariadb"
        else name
        for name in missing
    ]
    account = user if "@" in user else f"'{user}'@'<host>'"
    return [
        f"user {account} lacks {' and '.join(names)} ON *.*: run GRANT SELECT, "
        f"REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO {account} (read-only privileges; "
        "sparkcdc never writes to the source)"
    ]


def check_grants(grants: list[str], user: str, flavor: str = "mysql") -> None:
    """The user needs REPLICATION SLAVE and REPLICATION CLIENT (MariaDB: BINLOG MONITOR)."""
    problems = grant_problems(grants, user, flavor)
    if problems:
        raise SourceConfigurationError(problems[0])


def _account(conn: Any, user: str) -> str:
    """``'user'@'host'`` as the server knows the logged-in account (for a runnable GRANT)."""
    ((current,),) = query(conn, "SELECT CURRENT_USER()")
    name, _, host = str(current).rpartition("@")
    return f"'{name}'@'{host}'" if name else f"'{user}'@'<host>'"


def replica_problems(conn: Any, flavor: str) -> list[str]:
    """A replica writes what it replicates to its own binlog only with
    ``log_slave_updates``: without it, capturing the replica would miss every change made
    on the primary, silently. (A replica that stopped replicating is not detected here.)"""
    ((updates,),) = query(conn, "SELECT @@log_slave_updates")
    if str(updates).upper() in ("1", "ON"):
        return []
    if flavor == "mariadb":
        rows = query(conn, "SHOW GLOBAL STATUS WHERE Variable_name = 'Slaves_running'")
        replicating = bool(rows) and int(rows[0][1]) > 0
    else:
        try:
            rows = query(
                conn,
                "SELECT COUNT(*) FROM performance_schema.replication_connection_status "
                "WHERE SERVICE_STATE = 'ON'",
            )
        except Exception:  # no performance_schema: a replica cannot be told apart
            return []
        replicating = bool(rows) and int(rows[0][0]) > 0
    if not replicating:
        return []
    return [
        "log_slave_updates is OFF on this replica: the changes it replicates are not "
        "written to its binlog, so they would never be captured. Set log_slave_updates=ON "
        "in [mysqld] and restart the server, or capture the primary"
    ]


def validate_server(conn: Any, user: str) -> tuple[str, tuple[int, ...]]:
    """Run every check; raise one error listing every problem; return flavor and version."""
    ((text,),) = query(conn, "SELECT VERSION()")
    flavor, version = server_flavor(text)
    check_version(flavor, version, text)
    names = [name for name, _, _ in required_settings(flavor)]
    values = {
        k.lower(): str(v)
        for k, v in query(
            conn,
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN (" + ",".join(["%s"] * len(names)) + ")",
            names,
        )
    }
    problems = settings_problems(values, flavor) + replica_problems(conn, flavor)
    grants = [str(g) for (g,) in query(conn, "SHOW GRANTS")]
    problems += grant_problems(grants, _account(conn, user), flavor)
    if problems:
        raise SourceConfigurationError(
            "the server is not set up for CDC:\n  - " + "\n  - ".join(problems)
        )
    return flavor, version

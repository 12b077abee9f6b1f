"""Up-front checks that the server is set up for CDC; each failure says what to change, in
the flavour's own words (server/flavor.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.connectors.mysql.server.flavor import ServerFlavor, flavor_of
from sparkcdc.core.errors import SourceConfigurationError


@dataclass(frozen=True)
class Setting:
    """A server variable CDC relies on: the values that do, and how to fix it."""

    name: str
    needed: str  #: the value a message asks for
    fix: str
    accepted: frozenset[str] = frozenset()  #: upper-cased; ``{needed}`` when empty

    def problem(self, actual: str | None) -> str | None:
        shown = "(not set)" if actual is None else (actual or "''")
        if (actual or "").upper() in (self.accepted or {self.needed.upper()}):
            return None
        return f"{self.name} is {shown}, needs {self.needed}: {self.fix}"


def required_settings(flavor: ServerFlavor) -> list[Setting]:
    """The settings row-based CDC relies on, on this flavour, each with its fix.
    ``binlog_row_metadata`` is not one: any value (``NO_LOG``, ``MINIMAL``, ``FULL``) and
    its absence (MySQL 5.7) will do, since rows are named by the schema history; with
    ``FULL`` the names in the events are a cross-check (binlog/table_drift.py)."""
    settings = [
        Setting(
            "log_bin", "ON", "start the server with log-bin (e.g. log-bin=mysql-bin in [mysqld])"
        ),
        Setting(
            "binlog_format",
            "ROW",
            "set binlog_format=ROW in [mysqld] (or SET GLOBAL binlog_format='ROW' and reconnect "
            "writers)",
        ),
        Setting(
            "binlog_row_image",
            "FULL",
            "set binlog_row_image=FULL in [mysqld] (or SET GLOBAL binlog_row_image='FULL'); "
            "normalisation and deletes need complete before-images",
        ),
    ]
    if flavor.gtid_sets:
        settings += [
            Setting(
                "gtid_mode",
                "ON",
                "positions carry GTID sets, which restarts, recovery and failover resume by: "
                "set gtid_mode=ON and enforce_gtid_consistency=ON in [mysqld] (online: SET "
                "GLOBAL enforce_gtid_consistency=ON, then SET GLOBAL gtid_mode to "
                "OFF_PERMISSIVE, ON_PERMISSIVE and ON, one step at a time)",
            ),
            Setting(
                "enforce_gtid_consistency",
                "ON",
                "set enforce_gtid_consistency=ON in [mysqld] (or SET GLOBAL "
                "enforce_gtid_consistency=ON); gtid_mode=ON needs it",
            ),
        ]
    if flavor.gtid_sets and flavor.version >= (8, 0, 3):
        settings.append(
            Setting(
                "binlog_row_value_options",
                "'' (empty)",
                "PARTIAL_JSON logs a JSON update as a diff, not the new document, so the "
                "row's value cannot be read from the binlog: SET GLOBAL "
                "binlog_row_value_options='' and remove it from [mysqld]",
                accepted=frozenset({""}),
            )
        )
    return settings


def check_version(flavor: ServerFlavor) -> None:
    """Refuse a server too old to capture, saying what is needed."""
    problem = flavor.too_old()
    if problem is not None:
        raise SourceConfigurationError(problem)


def settings_problems(values: dict[str, str], flavor: ServerFlavor) -> list[str]:
    """One line per required setting that is wrong: its value, the value needed, the fix."""
    problems = []
    for setting in required_settings(flavor):
        problem = setting.problem(values.get(setting.name))
        if problem is not None:
            problems.append(problem)
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


def grant_problems(grants: list[str], user: str, flavor: ServerFlavor) -> list[str]:
    """What the user lacks of REPLICATION SLAVE and REPLICATION CLIENT (MariaDB: BINLOG
    MONITOR), as one line with the GRANT statements that fix it: the replication
    privileges are global, SELECT is needed on the captured databases only; empty if
    nothing is missing."""
    privileges = global_privileges(grants)
    if privileges & {"ALL", "ALL PRIVILEGES"}:
        return []
    missing = [name for name, accepted in _NEEDED_PRIVILEGES if not privileges & accepted]
    if not missing:
        return []
    client = flavor.replication_client
    names = [
        f"REPLICATION CLIENT (called {client} in {flavor.label})"
        if name == "REPLICATION CLIENT" and client != name
        else name
        for name in missing
    ]
    account = user if "@" in user else f"'{user}'@'<host>'"
    return [
        f"user {account} lacks {' and '.join(names)} ON *.*: run GRANT REPLICATION SLAVE, "
        f"{client} ON *.* TO {account}, and GRANT SELECT ON `<database>`.* TO {account} for "
        "each captured database (read-only privileges; sparkcdc never writes to the source)"
    ]


def check_grants(grants: list[str], user: str, flavor: ServerFlavor) -> None:
    """The user needs REPLICATION SLAVE and REPLICATION CLIENT (MariaDB: BINLOG MONITOR)."""
    problems = grant_problems(grants, user, flavor)
    if problems:
        raise SourceConfigurationError(problems[0])


def _account(conn: Any, user: str) -> str:
    """``'user'@'host'`` as the server knows the logged-in account (for a runnable GRANT)."""
    ((current,),) = query(conn, "SELECT CURRENT_USER()")
    name, _, host = str(current).rpartition("@")
    return f"'{name}'@'{host}'" if name else f"'{user}'@'<host>'"


def replica_problems(conn: Any, flavor: ServerFlavor) -> list[str]:
    """A replica writes what it replicates to its own binlog only with
    ``log_slave_updates`` (MySQL 8.0.26+: ``log_replica_updates``): without it, capturing
    the replica would miss every change made on the primary, silently. (A replica that
    stopped replicating is not detected here.)"""
    variable = flavor.replica_updates_variable
    ((updates,),) = query(conn, f"SELECT @@{variable}")
    if str(updates).upper() in ("1", "ON"):
        return []
    if flavor.mariadb:
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
        f"{variable} is OFF on this replica: the changes it replicates are not "
        f"written to its binlog, so they would never be captured. Set {variable}=ON "
        "in [mysqld] and restart the server, or capture the primary"
    ]


def validate_server(conn: Any, user: str) -> ServerFlavor:
    """Run every check; raise one error listing every problem; return the flavour."""
    flavor = flavor_of(conn)
    check_version(flavor)
    names = [setting.name for setting in required_settings(flavor)]
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
            f"the server ({flavor.label}) is not set up for CDC:\n  - " + "\n  - ".join(problems)
        )
    return flavor

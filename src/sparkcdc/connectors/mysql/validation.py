"""Up-front checks that the server is set up for CDC; each failure says what to change."""

from __future__ import annotations

import re
from typing import Any

from sparkcdc.connectors.mysql.connection import query
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


def check_settings(values: dict[str, str], flavor: str) -> None:
    problems = []
    for name, wanted, fix in required_settings(flavor):
        actual = values.get(name, "(not set)")
        if actual.upper() != wanted:
            problems.append(f"{name} is {actual}, needs {wanted}: {fix}")
    if problems:
        raise SourceConfigurationError(
            "the server is not configured for CDC:\n  - " + "\n  - ".join(problems)
        )


def check_grants(grants: list[str], user: str) -> None:
    """The user needs REPLICATION SLAVE and REPLICATION CLIENT (MariaDB: BINLOG MONITOR)."""
    global_grants = " ".join(g.upper() for g in grants if " ON *.* " in g.upper())
    if "ALL PRIVILEGES" in global_grants:
        return
    missing = []
    if "REPLICATION SLAVE" not in global_grants and "REPLICATION REPLICA" not in global_grants:
        missing.append("REPLICATION SLAVE")
    if not any(p in global_grants for p in ("REPLICATION CLIENT", "BINLOG MONITOR", "SUPER")):
        missing.append("REPLICATION CLIENT")
    if missing:
        raise SourceConfigurationError(
            f"user '{user}' lacks {' and '.join(missing)}: run GRANT SELECT, REPLICATION SLAVE, "
            f"REPLICATION CLIENT ON *.* TO '{user}'@'<host>' (read-only privileges; sparkcdc "
            "never writes to the source)"
        )


def validate_server(conn: Any, user: str) -> tuple[str, tuple[int, ...]]:
    """Run every check; return the server flavor and version."""
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
    check_settings(values, flavor)
    check_grants([g for (g,) in query(conn, "SHOW GRANTS")], user)
    return flavor, version

"""``python -m sparkcdc.embedded [mariadb] [postgres] [kafka] [mysql8] [mysql57]`` (``make
services``): start the test servers by hand (MariaDB, PostgreSQL and Kafka by default),
print how to reach them, stop them on Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedMySQL, EmbeddedPostgres
from sparkcdc.embedded.binlog_server import BinlogServer

SERVICES = ("mariadb", "postgres", "kafka", "mysql8", "mysql57")
DEFAULT_SERVICES = ("mariadb", "postgres", "kafka")


def describe(name: str, server: Any) -> str:
    if isinstance(server, BinlogServer):
        return (
            f"{name:<9} 127.0.0.1:{server.port}  root / {server.root.password}; CDC user "
            f"{server.cdc.user} / {server.cdc.password}  (binlog ROW, FULL, GTID)  "
            f"mariadb -h127.0.0.1 -P{server.port} -uroot -p"
        )
    if isinstance(server, EmbeddedPostgres):
        return (
            f"postgres  127.0.0.1:{server.port}  user {server.user} / {server.password}  "
            "(wal_level=logical)"
        )
    return f"kafka     {server.bootstrap_servers}  (KRaft, single node)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "services",
        nargs="*",
        help=f"any of {', '.join(SERVICES)} (default: {', '.join(DEFAULT_SERVICES)})",
    )
    args = parser.parse_args(argv)
    wanted = args.services or list(DEFAULT_SERVICES)
    unknown = sorted(set(wanted) - set(SERVICES))
    if unknown:
        parser.error(f"unknown service {unknown[0]!r}; choose from {', '.join(SERVICES)}")
    kinds: dict[str, Any] = {
        "mariadb": EmbeddedMariaDB,
        "postgres": EmbeddedPostgres,
        "kafka": EmbeddedKafka,
        "mysql8": lambda: EmbeddedMySQL("mysql8"),
        "mysql57": lambda: EmbeddedMySQL("mysql57"),
    }
    started: list[Any] = []
    try:
        for name in SERVICES:
            if name in wanted:
                server = kinds[name]().start()
                started.append(server)
                print(describe(name, server), flush=True)
        print("Ctrl-C stops them and removes their data.", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    finally:
        for server in reversed(started):
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

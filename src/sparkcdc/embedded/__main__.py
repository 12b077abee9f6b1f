"""``python -m sparkcdc.embedded [mariadb] [postgres] [kafka]`` (``make services``): start
the test servers by hand, print how to reach them, stop them on Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedPostgres

SERVICES = ("mariadb", "postgres", "kafka")


def describe(name: str, server: Any) -> str:
    if isinstance(server, EmbeddedMariaDB):
        return (
            f"mariadb   127.0.0.1:{server.port}  root (no password); CDC user "
            f"{server.cdc.user} / {server.cdc.password}  (binlog ROW, FULL, GTID)  "
            f"mariadb -h127.0.0.1 -P{server.port} -uroot"
        )
    if isinstance(server, EmbeddedPostgres):
        return (
            f"postgres  127.0.0.1:{server.port}  user {server.user} / {server.password}  "
            "(wal_level=logical)"
        )
    return f"kafka     {server.bootstrap_servers}  (KRaft, single node)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("services", nargs="*", help=f"any of {', '.join(SERVICES)} (default: all)")
    args = parser.parse_args(argv)
    wanted = args.services or list(SERVICES)
    unknown = sorted(set(wanted) - set(SERVICES))
    if unknown:
        parser.error(f"unknown service {unknown[0]!r}; choose from {', '.join(SERVICES)}")
    kinds = {"mariadb": EmbeddedMariaDB, "postgres": EmbeddedPostgres, "kafka": EmbeddedKafka}
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

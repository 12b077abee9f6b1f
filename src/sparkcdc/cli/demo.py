"""``sparkcdc demo``: a local MariaDB captured into a local Delta table."""

from __future__ import annotations

import sys


def run_demo() -> int:
    """The demo pipeline arrives with the MySQL source and sink issues; say so plainly."""
    print(
        "sparkcdc demo: not available yet. The demo (local MariaDB -> Delta table) needs the\n"
        "mysql-cdc source and the Delta sink, which are still being built. Run `make test`\n"
        "to exercise what exists today.",
        file=sys.stderr,
    )
    return 2

"""Entry point of the ``sparkcdc`` console script."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import sparkcdc


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparkcdc",
        description="Change data capture for Apache Spark: snapshot + change log, exactly once.",
    )
    parser.add_argument("--version", action="version", version=f"sparkcdc {sparkcdc.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "demo", help="start a local MariaDB and capture it into a local lakehouse table"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from sparkcdc.cli.demo import run_demo

        return run_demo()
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())

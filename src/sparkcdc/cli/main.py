"""Entry point of the ``sparkcdc`` console script."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import sparkcdc
from sparkcdc.cli import jars, recover, signals
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.printable import PrintableFormatter, printable


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparkcdc",
        description="Change data capture for Apache Spark: snapshot + change log, exactly once.",
    )
    parser.add_argument("--version", action="version", version=f"sparkcdc {sparkcdc.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run", help="run a pipeline file (Ctrl-C stops; running it again resumes)"
    )
    run.add_argument("pipeline", help="the pipeline YAML file")
    run.add_argument(
        "--available-now",
        action="store_true",
        help="process what the source has now, then stop (overrides trigger-interval)",
    )
    run.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics on this port (0: any free port; the URL is printed)",
    )
    run.add_argument("--metrics-host", default="127.0.0.1", help="address of the metrics endpoint")
    run.add_argument(
        "--log-file",
        help="where Spark's log and ours go (default: the checkpoint folder's path + .log)",
    )
    run.add_argument(
        "--verbose",
        action="store_true",
        help="Spark's log (WARN and up) on the terminal instead of the log file",
    )
    status = commands.add_parser(
        "status",
        help="where a pipeline is: last batch, lag behind the source, snapshot progress",
    )
    status.add_argument("pipeline", help="the pipeline YAML file")
    status.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    verify = commands.add_parser(
        "verify", help="compare each source table with its target, at the target's position"
    )
    verify.add_argument("pipeline", help="the pipeline YAML file")
    verify.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    signals.add_parser(commands)
    recover.add_parser(commands)
    jars.add_parser(commands)
    check = commands.add_parser("validate", help="check a pipeline file without running it")
    check.add_argument("pipeline", help="the pipeline YAML file")
    check.add_argument(
        "--offline",
        action="store_true",
        help="check the file only; by default the source server and the targets are checked "
        "too (read-only: nothing is written anywhere)",
    )
    demo = commands.add_parser(
        "demo", help="start a local MariaDB and capture it into a local Delta table"
    )
    demo.add_argument("--rows", type=int, help="rows of the generated demo_events table")
    demo.add_argument("--workdir", help="folder of the pipeline file and the lakehouse")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    stderr = logging.StreamHandler()  # log lines carry no raw control characters
    stderr.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[stderr])
    logging.getLogger("sparkcdc").setLevel(logging.INFO)
    try:
        if args.command == "demo":
            from sparkcdc.cli.demo import run_demo

            extra = [] if args.rows is None else ["--rows", str(args.rows)]
            extra += [] if args.workdir is None else ["--workdir", args.workdir]
            return run_demo(extra)
        if args.command == "snapshot":
            return signals.send(args)
        if args.command == "recover":
            return recover.recover(args)
        if args.command == "jars":
            return jars.jars(args)
        if args.command in ("run", "status", "verify", "validate"):
            from sparkcdc.cli import commands as cmd

            handler = {
                "run": cmd.run,
                "status": cmd.status,
                "verify": cmd.verify,
                "validate": cmd.validate,
            }
            return handler[args.command](args)
    except SparkCdcError as exc:
        print(f"sparkcdc: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Entry point of the ``sparkcdc`` console script."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

import sparkcdc
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.printable import PrintableFormatter, printable

#: Commands that take a while before their first line of their own (Python's imports of
#: the pipeline modules: about a second): they say they started first.
_SLOW_COMMANDS = ("run", "validate", "verify", "status", "snapshot", "recover", "demo")


def build_parser() -> argparse.ArgumentParser:
    from sparkcdc.cli import jars, recover, signals  # a second of imports: after the first line

    parser = argparse.ArgumentParser(
        prog="sparkcdc",
        description="Change data capture for Apache Spark: snapshot + change log, exactly once.",
    )
    parser.add_argument("--version", action="version", version=f"sparkcdc {sparkcdc.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_run(commands)
    _add_status_and_verify(commands)
    signals.add_parser(commands)
    recover.add_parser(commands)
    jars.add_parser(commands)
    _add_validate(commands)
    _add_demo(commands)
    return parser


def _add_run(commands: Any) -> None:
    """``run``: the pipeline file and how its run reports (metrics, log)."""
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


def _add_status_and_verify(commands: Any) -> None:
    """``status`` and ``verify``: they read a running (or stopped) pipeline's state."""
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


def _add_validate(commands: Any) -> None:
    check = commands.add_parser("validate", help="check a pipeline file without running it")
    check.add_argument("pipeline", help="the pipeline YAML file")
    check.add_argument(
        "--offline",
        action="store_true",
        help="check the file only; by default the source server and the targets are checked "
        "too (read-only: nothing is written anywhere)",
    )


def _add_demo(commands: Any) -> None:
    demo = commands.add_parser(
        "demo", help="start a local MariaDB and capture it into a local Delta table"
    )
    demo.add_argument("--rows", type=int, help="rows of the generated demo_events table")
    demo.add_argument("--workdir", help="folder of the pipeline file and the lakehouse")


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    _acknowledge_interrupts()
    try:
        if given and given[0] in _SLOW_COMMANDS and not {"-h", "--help"} & set(given):
            print(f"sparkcdc {sparkcdc.__version__}: {printable(' '.join(given))}", file=sys.stderr)
        parser = build_parser()
        args = parser.parse_args(given)
        stderr = logging.StreamHandler()  # log lines carry no raw control characters
        stderr.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[stderr])
        logging.getLogger("sparkcdc").setLevel(logging.INFO)
        if args.command is None:
            parser.print_help()
            return 0
        return _command(args)
    except SparkCdcError as exc:
        print(f"sparkcdc: error: {printable(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C where no command of ours handles it (validate, verify)
        print("sparkcdc: interrupted", file=sys.stderr)
        return 130


def _command(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from sparkcdc.cli.demo import run_demo

        extra = [] if args.rows is None else ["--rows", str(args.rows)]
        extra += [] if args.workdir is None else ["--workdir", args.workdir]
        return run_demo(extra)
    from sparkcdc.cli import jars, recover, signals

    if args.command == "snapshot":
        return signals.send(args)
    if args.command == "recover":
        return recover.recover(args)
    if args.command == "jars":
        return jars.jars(args)
    from sparkcdc.cli import commands as cmd

    handler = {
        "run": cmd.run,
        "status": cmd.status,
        "verify": cmd.verify,
        "validate": cmd.validate,
    }
    return handler[args.command](args)


def _acknowledge_interrupts() -> None:
    """Ctrl-C is said at once, whatever runs (the commands that stop cleanly, ``run``,
    put their own handler in place): the handler writes straight to the terminal, then
    interrupts as Python's own handler does."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_interrupt(signum: int, frame: Any) -> None:
        with contextlib.suppress(OSError):
            os.write(2, b"SIGINT: interrupting\n")
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)


if __name__ == "__main__":
    sys.exit(main())

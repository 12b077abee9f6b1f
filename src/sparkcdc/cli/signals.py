"""``sparkcdc snapshot``: send a pipeline a signal through its signal file.

The pipeline may be running or stopped: the signal is read before its next batch, or when it
next starts (docs/signals.md). Nothing here connects to the source or to Spark; the tables
named are checked against the pipeline's table options and its checkpoint's last offset (a
signal naming a table the pipeline does not capture would only be skipped there, with an
error in its log).
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from rich.console import Console
from rich.markup import escape

from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.checkpoint import last_committed_offset
from sparkcdc.pipeline.definition import PipelineDefinition, load_pipeline
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.signal import EXECUTE, PAUSE, RESUME, STOP, SignalError, parse_signal
from sparkcdc.snapshot.signal_file import append_signal


def add_parser(commands: Any) -> None:
    snap = commands.add_parser(
        "snapshot",
        help="read tables of a running (or stopped) pipeline again, while their changes "
        "keep flowing; or stop, pause, resume such re-reads",
    )
    snap.add_argument("pipeline", help="the pipeline YAML file")
    snap.add_argument(
        "--table",
        action="append",
        default=[],
        metavar="NAMESPACE.TABLE",
        help="a captured table to read again (repeat for several)",
    )
    snap.add_argument("--from", dest="lo", metavar="KEY", help="first chunk key to read again")
    snap.add_argument("--to", dest="hi", metavar="KEY", help="chunk key to stop before")
    snap.add_argument("--id", help="the signal's id, as logs name it (default: a new UUID)")
    action = snap.add_mutually_exclusive_group()
    action.add_argument("--stop", action="store_true", help="stop re-reads (of --table, or all)")
    action.add_argument("--pause", action="store_true", help="pause every re-read")
    action.add_argument("--resume", action="store_true", help="resume paused re-reads")


def send(args: argparse.Namespace) -> int:
    definition = load_pipeline(args.pipeline)
    kind = STOP if args.stop else PAUSE if args.pause else RESUME if args.resume else EXECUTE
    tables = [_captured(definition.source_config, name) for name in args.table]
    if kind == EXECUTE and not tables:
        raise OptionError("sparkcdc snapshot: name the tables to read again with --table")
    if kind in (PAUSE, RESUME) and tables:
        raise OptionError("sparkcdc snapshot: --pause and --resume act on every re-read")
    ranged = args.lo is not None or args.hi is not None
    if ranged and (kind != EXECUTE or len(tables) != 1):
        raise OptionError("sparkcdc snapshot: --from/--to bound the re-read of one --table")
    data: dict[str, Any] = {"type": "incremental"}
    if tables:
        data["data-collections"] = [str(t) for t in tables]
    if ranged:
        bounds = {k: v for k, v in (("from", args.lo), ("to", args.hi)) if v is not None}
        data["additional-conditions"] = [{"data-collection": str(tables[0]), "key-range": bounds}]
    signal = {"id": args.id or str(uuid.uuid4()), "type": kind, "data": data}
    parsed = parse_signal(signal)  # the same checks as the pipeline's, before anything is written
    known = _checkpoint_tables(definition)
    if known is not None and tables:
        try:
            parsed.tables(known)
        except SignalError as exc:
            raise OptionError(
                f"sparkcdc snapshot: {exc}, in the pipeline's checkpoint "
                f"{definition.settings.checkpoint}. A table the pipeline has not found yet is "
                "snapshotted when it does (scan.newly-added-table.enabled): no re-read needed"
            ) from None
    path = definition.signal_file
    append_signal(path, signal)
    what = {
        EXECUTE: f"read {', '.join(str(t) for t in tables)} again"
        + (f" (chunk keys from {args.lo} to {args.hi})" if ranged else ""),
        STOP: f"stop re-reading {', '.join(str(t) for t in tables) or 'every table'}",
        PAUSE: "pause re-reads",
        RESUME: "resume re-reads",
    }[kind]
    Console().print(
        escape(
            f"signal '{signal['id']}' ({what}) written to {path}: the pipeline takes it "
            "before its next batch, or when it next starts"
        )
    )
    return 0


def _checkpoint_tables(definition: PipelineDefinition) -> list[TableId] | None:
    """The tables of the pipeline's last committed offset; None before its first batch."""
    offset = last_committed_offset(definition.settings.checkpoint)
    if offset is None:
        return None
    return list(SourceOffset.parse(offset).tables)


def _captured(config: Any, name: str) -> TableId:
    try:
        table = TableId.from_key(name)
    except ValueError:
        raise OptionError(f"sparkcdc snapshot: --table {name!r} is not NAMESPACE.TABLE") from None
    if not config.matches(table.database, table.table):
        raise OptionError(
            f"sparkcdc snapshot: --table {name!r} is not captured by this pipeline (its source "
            "table options do not match it)"
        )
    return table

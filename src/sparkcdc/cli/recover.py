"""``sparkcdc recover``: a pipeline goes on after the source's log from its checkpoint's
position was lost (a purged binlog, a dropped or invalidated PostgreSQL slot).

It asks the source, read-only, whether the log from the position of the pipeline's last
committed batch is still there. Only when it is gone does it write a ``recover-lost-log``
signal into the pipeline's signal file, and say what the next run does: read again the
tables the pipeline had read (their targets emptied first), snapshot the ones it had not
begun when their turn comes, and go on from the log's position now (docs/design.md, "A
lost log"). Nothing is written to the source; the pipeline may be stopped (it takes the
signal when it next starts).
"""

from __future__ import annotations

import argparse
import json
import uuid
from typing import Any

from rich.console import Console
from rich.markup import escape

from sparkcdc.core.errors import OptionError, PositionLostError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.checkpoint import last_committed_offset
from sparkcdc.pipeline.definition import PipelineDefinition, load_pipeline
from sparkcdc.snapshot.offset import LogJson, SourceOffset
from sparkcdc.snapshot.recovery import touched
from sparkcdc.snapshot.signal import RECOVER, parse_signal
from sparkcdc.snapshot.signal_file import append_signal


def add_parser(commands: Any) -> None:
    recover = commands.add_parser(
        "recover",
        help="go on after the source's log from the pipeline's position was lost (a purged "
        "binlog, a dropped slot): read again the tables it had read, into their targets "
        "emptied first",
    )
    recover.add_argument("pipeline", help="the pipeline YAML file")
    recover.add_argument("--id", help="the signal's id, as logs name it (default: a new UUID)")


def recover(args: argparse.Namespace) -> int:
    """Exit 0 when the signal was written, 1 when nothing is lost (nothing written)."""
    definition = load_pipeline(args.pipeline)
    checkpoint = definition.settings.checkpoint
    text = last_committed_offset(checkpoint)
    if text is None:
        raise OptionError(
            f"sparkcdc recover: the pipeline has committed no batch in {checkpoint}: it has "
            "no position to lose; run it (a new checkpoint starts from the log's end)"
        )
    offset = SourceOffset.parse(text)
    console = Console(soft_wrap=True)
    lost = _lost(definition, offset)
    if lost is None:
        console.print(
            escape(
                f"the source still has its log from the pipeline's position "
                f"({json.dumps(offset.log.to_json())}): nothing is lost and nothing was written. "
                "Run the pipeline again: it resumes from its checkpoint"
            )
        )
        return 1
    entries = offset.tables
    again = sorted(t for t, p in entries.items() if touched(p) and not p.dropped)
    waiting = sorted(t for t, p in entries.items() if not touched(p))
    signal = {"id": args.id or str(uuid.uuid4()), "type": RECOVER}
    parse_signal(signal)  # the pipeline's own checks, before anything is written
    append_signal(definition.signal_file, signal)
    lines = [
        f"lost: {lost.what or lost}",
        f"signal '{signal['id']}' (recover-lost-log) written to {definition.signal_file}.",
        "When the pipeline next runs, it goes on from the log's position then, and:",
        f"  reads again, emptying their targets first: {_names(again)}",
        f"  snapshots when their turn comes (not begun, nothing lost): {_names(waiting)}",
        "  (a table the server no longer has is followed as a DROP TABLE, as the pipeline's "
        "schema.change.behavior says)",
        "Targets that cannot be emptied (a Kafka topic other than debezium-json, a Delta "
        "history, a route's target holding other tables' rows) keep their rows: the rows "
        "read again replace them, and `sparkcdc verify` reports rows deleted meanwhile.",
        f"Run it now: sparkcdc run {definition.path}",
    ]
    for line in lines:
        console.print(escape(line))
    return 0


def _lost(
    definition: PipelineDefinition, offset: SourceOffset[LogJson]
) -> PositionLostError | None:
    """Why the source's log from ``offset``'s position is gone, or None (asked read-only)."""
    source = definition.connector.handle(definition.source_config)
    try:
        return source.lost(offset.log_at())
    finally:
        source.close()


def _names(tables: list[TableId]) -> str:
    return ", ".join(str(t) for t in tables) or "none"

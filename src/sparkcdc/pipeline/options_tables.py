"""The options tables of the README: one per registered connector, the pipeline block, one
per registered sink, rendered from their specs (core/options_doc.py). Rewrite them with

    python -m sparkcdc.pipeline.options_tables --write README.md

``--check`` exits 1 when a table differs from the specs (a unit test does the same). A new
connector or sink gets a table here without a line of its own; the README then needs its
``<!-- options:NAME -->`` block, or the check fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from sparkcdc.connectors.registry import connectors
from sparkcdc.core.options_doc import Table, render_tables, rewrite, stale_tables
from sparkcdc.pipeline import change_types
from sparkcdc.pipeline.definition import PIPELINE_SPECS
from sparkcdc.sinks.registry import sink_types

COMMAND = "python -m sparkcdc.pipeline.options_tables --write README.md"


def options_tables() -> list[Table]:
    return [
        *(Table(c.format, c.specs, "option") for c in connectors()),
        Table("pipeline", tuple(PIPELINE_SPECS)),
        Table("sink-common", change_types.SPECS),
        *(Table(f"sink-{s.name}", s.specs) for s in sink_types()),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sparkcdc.pipeline.options_tables",
        description="Render the options tables of a Markdown file from the option specs.",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", metavar="FILE", type=Path, help="rewrite the tables")
    action.add_argument("--check", metavar="FILE", type=Path, help="exit 1 if they differ")
    args = parser.parse_args(argv)
    tables = render_tables(options_tables())
    path: Path = args.write or args.check
    text = path.read_text(encoding="utf-8")
    try:
        updated = rewrite(text, tables)
    except ValueError as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 2
    if args.check:
        stale = stale_tables(text, tables)
        if stale:
            print(f"{path}: stale options tables {', '.join(stale)}; run {COMMAND}")
            return 1
        return 0
    if updated != text:
        path.write_text(updated, encoding="utf-8")
        print(f"{path}: options tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())

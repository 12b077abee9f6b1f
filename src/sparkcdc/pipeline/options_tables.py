"""The options tables of the documentation: one per registered connector, the pipeline
block, one per registered sink, rendered from their specs (core/options_doc.py). Each table
sits in the one page it belongs to (docs/mariadb-mysql.md holds ``mysql-cdc``, ...).
Rewrite them with

    python -m sparkcdc.pipeline.options_tables --write README.md docs/*.md

``--check`` exits 1 when a table differs from the specs (a unit test does the same). A new
connector or sink gets a table here without a line of its own; one of the pages then needs
its ``<!-- options:NAME -->`` block, or the check fails. Links in the specs' text are
relative to the repository root (``docs/signals.md``); each page gets them relative to its
own folder.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from sparkcdc.connectors.registry import connectors
from sparkcdc.core.options_doc import Table, render_tables, rewrite, stale_tables
from sparkcdc.pipeline import change_types
from sparkcdc.pipeline.definition import PIPELINE_SPECS
from sparkcdc.pipeline.options_flink import PIPELINE_KEYS, source_keys, specs
from sparkcdc.sinks.registry import sink_types

COMMAND = "python -m sparkcdc.pipeline.options_tables --write README.md docs/*.md"

_BLOCK_START = re.compile(r"<!-- options:([\w.-]+) -->")
_LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)#\s]+)(?P<anchor>#[^)\s]*)?\)")


def options_tables() -> list[Table]:
    return [
        *(Table(c.format, c.specs, "option") for c in connectors()),
        Table("pipeline", tuple(PIPELINE_SPECS)),
        *(Table(f"flink-{c.name}", specs(source_keys(c.name)), "option") for c in connectors()),
        Table("flink-pipeline", specs(PIPELINE_KEYS)),
        Table("sink-common", change_types.SPECS),
        *(Table(f"sink-{s.name}", s.specs) for s in sink_types()),
    ]


def rebase_links(markdown: str, page: Path, root: Path) -> str:
    """``markdown``'s relative links (written from ``root``) as seen from ``page``'s folder;
    a link whose text is its own target gets the new target as text too."""

    def rebase(match: re.Match[str]) -> str:
        target = match.group("target")
        if "://" in target:
            return match.group(0)
        moved = os.path.relpath(root / target, page.resolve().parent)
        text = moved if match.group("text") == target else match.group("text")
        return f"[{text}]({moved}{match.group('anchor') or ''})"

    return _LINK.sub(rebase, markdown)


def page_tables(pages: Sequence[Path], root: Path) -> dict[Path, dict[str, str]]:
    """The tables each page holds, rendered for that page. Every table must be in exactly
    one page: a table nowhere would silently go undocumented, one in two would drift."""
    rendered = render_tables(options_tables())
    where: dict[str, list[Path]] = {name: [] for name in rendered}
    result: dict[Path, dict[str, str]] = {}
    for page in pages:
        names = _BLOCK_START.findall(page.read_text(encoding="utf-8"))
        for name in names:
            if name not in rendered:
                raise ValueError(f"{page}: <!-- options:{name} -->: no such options table")
            where[name].append(page)
        result[page] = {name: rebase_links(rendered[name], page, root) for name in names}
    for name, found in where.items():
        if len(found) != 1:
            places = ", ".join(str(p) for p in found) or "none of the pages"
            raise ValueError(f"options table {name} must be in exactly one page, found in {places}")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sparkcdc.pipeline.options_tables",
        description="Render the options tables of Markdown pages from the option specs.",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", metavar="FILE", type=Path, nargs="+", help="rewrite tables")
    action.add_argument("--check", metavar="FILE", type=Path, nargs="+", help="exit 1 if stale")
    parser.add_argument(
        "--root", type=Path, default=Path.cwd(), help="the folder the specs' links start from"
    )
    args = parser.parse_args(argv)
    pages: list[Path] = args.write or args.check
    try:
        tables = page_tables(pages, args.root.resolve())
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    stale_pages = []
    for page, page_tables_ in tables.items():
        text = page.read_text(encoding="utf-8")
        if args.check:
            stale = stale_tables(text, page_tables_)
            if stale:
                stale_pages.append(f"{page}: stale options tables {', '.join(stale)}")
            continue
        updated = rewrite(text, page_tables_)
        if updated != text:
            page.write_text(updated, encoding="utf-8")
            print(f"{page}: options tables rewritten")
    if stale_pages:
        print("\n".join(stale_pages) + f"\nrun {COMMAND}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

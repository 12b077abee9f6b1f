"""The README's options tables, rendered from the option specs.

Every option is declared once, as an :class:`~sparkcdc.core.options.OptionSpec` carrying
its documentation, so the README's tables are generated rather than written: each sits
between ``<!-- options:NAME -->`` and ``<!-- /options:NAME -->`` and is rewritten by

    python -m sparkcdc.core.options_doc --write README.md

``--check`` exits 1 when a table differs from the specs (a unit test does the same).
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.core.options import OptionSpec
from sparkcdc.core.secret import Secret

COMMAND = "python -m sparkcdc.core.options_doc --write README.md"


@dataclass(frozen=True)
class Table:
    """One generated table: its marker name, where its specs are declared, its key header.

    Specs are named by module and attribute and imported only when rendering, so this
    bottom-layer module does not import the connectors, sinks and pipeline that use it.
    """

    name: str
    module: str
    attribute: str
    key_header: str = "key"

    def specs(self) -> tuple[OptionSpec, ...]:
        return tuple(getattr(importlib.import_module(self.module), self.attribute))


TABLES: tuple[Table, ...] = (
    Table("mysql-cdc", "sparkcdc.connectors.mysql.config", "SPECS", "option"),
    Table("pipeline", "sparkcdc.pipeline.definition", "PIPELINE_SPECS"),
    Table("sink-delta", "sparkcdc.sinks.delta.config", "SPECS"),
    Table("sink-jdbc", "sparkcdc.sinks.jdbc.config", "SPECS"),
    Table("sink-kafka", "sparkcdc.sinks.kafka.config", "SPECS"),
    Table("sink-console", "sparkcdc.sinks.console.config", "SPECS"),
)


def shown_name(spec: OptionSpec) -> str:
    """The key as a user writes it; a prefix spec stands for any key under it."""
    return f"`{spec.name}*`" if spec.prefix else f"`{spec.name}`"


def shown_default(spec: OptionSpec) -> str:
    """The "default" cell: ``default_doc`` when given, else the default value as written
    in an option (numbers plain, words as code, ``""`` for an empty string).

    A default that has no option spelling (a pattern, a zone, a non-empty secret) needs a
    ``default_doc``; guessing one could show something the parser would not accept.
    """
    if spec.default_doc is not None:
        return spec.default_doc
    if spec.required:
        return "(required)"
    value = spec.default
    if isinstance(value, Secret) and value.reveal() == "":
        return '""'
    if spec.prefix or value is None or value == ():
        return ""
    if isinstance(value, bool):
        return f"`{'true' if value else 'false'}`"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return f"`{value}`" if value else '""'
    raise TypeError(
        f"option '{spec.name}': a {type(value).__name__} default cannot be shown; "
        "give the spec a default_doc"
    )


def _cell(text: str) -> str:
    """Markdown table cell text: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def render_table(specs: Iterable[OptionSpec], key_header: str = "key") -> str:
    """A Markdown table of ``specs`` in declaration order: key, default, meaning."""
    lines = [f"| {key_header} | default | meaning |", "|---|---|---|"]
    for spec in specs:
        cells = (shown_name(spec), shown_default(spec), spec.doc)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def render_tables(tables: Sequence[Table] = TABLES) -> dict[str, str]:
    """Every generated table by marker name."""
    return {t.name: render_table(t.specs(), t.key_header) for t in tables}


_BLOCK = re.compile(
    r"(?P<start><!-- options:(?P<name>[\w.-]+) -->\n)"
    r"(?P<body>.*?)"
    r"(?P<end><!-- /options:(?P=name) -->)",
    re.DOTALL,
)


def rewrite(text: str, tables: Mapping[str, str]) -> str:
    """``text`` with each marked block replaced by its table (a blank line either side, so
    the markers never join the table). Every table must have its block and every block its
    table: a table without a place in the document would silently go undocumented."""
    found: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in tables:
            raise ValueError(f"<!-- options:{name} -->: no such options table")
        found.append(name)
        return f"{match.group('start')}\n{tables[name]}\n{match.group('end')}"

    result = _BLOCK.sub(replace, text)
    missing = [name for name in tables if name not in found]
    if missing:
        raise ValueError(
            "no <!-- options:NAME --> ... <!-- /options:NAME --> block for " + ", ".join(missing)
        )
    return result


def stale_tables(text: str, tables: Mapping[str, str]) -> list[str]:
    """Names of the tables whose block in ``text`` differs from what the specs render."""
    current = {m.group("name"): m.group("body") for m in _BLOCK.finditer(text)}
    return [name for name, table in tables.items() if current.get(name) != f"\n{table}\n"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sparkcdc.core.options_doc",
        description="Render the options tables of a Markdown file from the option specs.",
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", metavar="FILE", type=Path, help="rewrite the tables")
    action.add_argument("--check", metavar="FILE", type=Path, help="exit 1 if they differ")
    args = parser.parse_args(argv)
    tables = render_tables()
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

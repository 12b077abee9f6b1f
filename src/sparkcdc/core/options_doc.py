"""The README's options tables, rendered from the option specs.

Every option is declared once, as an :class:`~sparkcdc.core.options.OptionSpec` carrying
its documentation, so the README's tables are generated rather than written: each sits
between ``<!-- options:NAME -->`` and ``<!-- /options:NAME -->``. Which tables exist comes
from the registries (pipeline/options_tables.py, which is also the command that rewrites
them); this module only renders and replaces, and imports no layer above ``core``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sparkcdc.core.options import OptionSpec
from sparkcdc.core.secret import Secret


@dataclass(frozen=True)
class Table:
    """One generated table: its marker name, its specs in declaration order, its key
    header."""

    name: str
    specs: tuple[OptionSpec, ...]
    key_header: str = "key"


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


def render_tables(tables: Sequence[Table]) -> dict[str, str]:
    """Every generated table by marker name."""
    return {t.name: render_table(t.specs, t.key_header) for t in tables}


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

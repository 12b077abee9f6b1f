"""Typed, validated options for data sources and pipelines.

Spark hands data source options over as a case-insensitive map with lower-cased keys, so
specs are looked up case-insensitively. Unknown keys are rejected with the list of valid
ones; invalid values name the option and what is accepted. Secret options are wrapped in
:class:`Secret` so they cannot leak through repr or error messages.

Each option is declared once, as an :class:`OptionSpec`: its parser, its default, the config
attribute it fills (:func:`build_config`) and its documentation, from which the README's
options tables are rendered (:mod:`sparkcdc.core.options_doc`). A name, a default or a
meaning therefore cannot differ between the parser, the config and the docs.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sparkcdc.core.errors import OptionError
from sparkcdc.core.secret import Secret

Parser = Callable[[str], Any]
T = TypeVar("T")


@dataclass(frozen=True)
class OptionSpec:
    """One option, declared once: how it is parsed, what it fills and how it is documented.

    The README's options tables are rendered from ``doc`` and the default, and a config
    dataclass is built from the ``attr`` of each spec, so adding an option is one line here.
    """

    name: str
    parse: Parser = str
    default: Any = None
    required: bool = False
    choices: tuple[str, ...] = ()
    secret: bool = False
    prefix: bool = False  # e.g. ``jdbc.properties.``: any key starting with the name
    #: What the option means, in Markdown: the "meaning" column of the README's tables.
    doc: str = ""
    #: The "default" column when the default value alone would mislead or cannot be shown
    #: (a computed default, a duration, "unlimited"); None renders ``default`` itself.
    default_doc: str | None = None
    #: The config attribute the parsed value fills (:func:`build_config`); None for options
    #: that only feed a cross-option check or are read from :class:`Options` directly.
    attr: str | None = None
    #: A short phrase for the "option 'x' is required (...)" message, when ``doc`` is too
    #: long for an error; empty: ``doc``.
    hint: str = ""


def parse_int(minimum: int | None = None, maximum: int | None = None) -> Parser:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError("an integer") from None
        if minimum is not None and value < minimum:
            raise ValueError(f"an integer >= {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"an integer <= {maximum}")
        return value

    return parse


def parse_float(minimum: float | None = None) -> Parser:
    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError("a number") from None
        if minimum is not None and value < minimum:
            raise ValueError(f"a number >= {minimum}")
        return value

    return parse


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0, "h": 3600.0}


def parse_bool(text: str) -> bool:
    """``true`` or ``false`` (any case)."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("true or false")
    return lowered == "true"


def parse_duration(text: str) -> float:
    """Seconds from Flink-style durations: ``30s``, ``500ms``, ``5min``, ``1h`` or plain seconds."""
    raw = text.strip().lower().replace(" ", "")
    for unit in sorted(_DURATION_UNITS, key=len, reverse=True):
        if raw.endswith(unit) and raw[: -len(unit)].replace(".", "", 1).isdigit():
            return float(raw[: -len(unit)]) * _DURATION_UNITS[unit]
    if raw.replace(".", "", 1).isdigit():
        return float(raw)
    raise ValueError("a duration such as 500ms, 30s, 5min or 1h")


@dataclass
class Options:
    """Parsed option values by canonical (spec) name, plus prefixed groups."""

    values: dict[str, Any] = field(default_factory=dict)
    groups: dict[str, dict[str, str]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        value = self.values.get(name)
        return default if value is None else value

    def __repr__(self) -> str:  # secrets are Secret objects, so this is safe to log
        return f"Options({self.values!r})"


def parse_options(
    raw: Mapping[str, str] | Iterable[tuple[str, str]],
    specs: Iterable[OptionSpec],
    *,
    context: str,
) -> Options:
    """Validate ``raw`` against ``specs``; raise :class:`OptionError` naming the first problem."""
    spec_list = list(specs)
    by_name = {s.name.lower(): s for s in spec_list if not s.prefix}
    prefixes = [s for s in spec_list if s.prefix]
    items = raw.items() if isinstance(raw, Mapping) else raw
    result = Options()
    seen: set[str] = set()
    for key, text in items:
        lowered = key.lower()
        spec = by_name.get(lowered)
        if spec is None:
            prefix = next((p for p in prefixes if lowered.startswith(p.name.lower())), None)
            if prefix is None:
                valid = sorted(
                    [s.name for s in by_name.values()] + [p.name + "*" for p in prefixes]
                )
                spelled = {v.lower(): v for v in valid}
                close = difflib.get_close_matches(lowered, list(spelled), n=1)
                hint = f" Did you mean '{spelled[close[0]]}'?" if close else ""
                raise OptionError(
                    f"{context}: unknown option '{key}'.{hint} Valid options: {', '.join(valid)}"
                )
            result.groups.setdefault(prefix.name, {})[key[len(prefix.name) :]] = str(text)
            continue
        seen.add(spec.name)
        result.values[spec.name] = _parse_one(spec, str(text), context)
    for spec in spec_list:
        if spec.prefix or spec.name in seen:
            continue
        if spec.required:
            raise OptionError(
                f"{context}: option '{spec.name}' is required ({spec.hint or spec.doc})"
            )
        result.values[spec.name] = spec.default
    return result


def _parse_one(spec: OptionSpec, text: str, context: str) -> Any:
    if spec.choices:
        lowered = text.strip().lower()
        if lowered not in spec.choices:
            raise OptionError(
                f"{context}: option '{spec.name}' has invalid value '{text}'. "
                f"Valid values: {', '.join(spec.choices)}"
            )
        return lowered
    try:
        value = spec.parse(text)
    except ValueError as exc:
        shown = "******" if spec.secret else f"'{text}'"
        expected = str(exc)
        raise OptionError(
            f"{context}: option '{spec.name}' has invalid value {shown}; expected {expected}"
        ) from None
    return Secret(value) if spec.secret else value


def build_config(
    factory: Callable[..., T],
    specs: Iterable[OptionSpec],
    opts: Options,
    **computed: Any,
) -> T:
    """The config ``opts`` describe: every spec with an ``attr`` fills that attribute with
    its parsed value (a prefix spec: its group of keys), so a config never copies options
    field by field and a new option cannot be forgotten on the way to the config.

    ``computed`` overrides attributes whose value needs more than the option itself (a
    random default, a group checked and canonicalised); it may only name attributes a spec
    declares, so every attribute still comes from an option.
    """
    values: dict[str, Any] = {}
    for spec in specs:
        if spec.attr is None:
            continue
        if spec.attr in values:
            raise TypeError(f"two options fill attribute '{spec.attr}'")
        values[spec.attr] = opts.groups.get(spec.name, {}) if spec.prefix else opts[spec.name]
    undeclared = sorted(set(computed) - set(values))
    if undeclared:
        raise TypeError(f"computed attributes no option declares: {', '.join(undeclared)}")
    values.update(computed)
    return factory(**values)

"""Options of the console sink: a prefix for every line, and stdout or stderr.

No pyspark here: a pipeline file's sink block validates offline and fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sparkcdc.core.options import OptionSpec, parse_options

SPECS = (
    OptionSpec(
        "print-identifier",
        default=None,
        default_doc="none (the table name with several tables)",
        doc="a prefix for every printed line (`identifier> `)",
    ),
    OptionSpec(
        "standard-error",
        choices=("true", "false"),
        default="false",
        doc="`true` prints to standard error instead of standard output",
    ),
)


@dataclass(frozen=True)
class ConsoleSinkConfig:
    """The console sink's validated options."""

    print_identifier: str | None
    standard_error: bool

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> ConsoleSinkConfig:
        opts = parse_options(options, SPECS, context="console sink")
        return cls(opts["print-identifier"], opts["standard-error"] == "true")

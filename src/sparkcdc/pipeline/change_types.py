"""Schema change types and the sink options that pick which of them reach a target:
``include.schema.changes`` / ``exclude.schema.changes`` (Flink CDC 3.x's names, tags and
families; docs/schema-evolution.md).

A change of an excluded type is not applied to the target; the target then takes it the
way ``schema.change.behavior: ignore`` would (no new column, NULL into a dropped one, the
old type kept while the values fit it). Checked when the pipeline file is validated, so no
pyspark here.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import OptionSpec
from sparkcdc.core.table_events import (
    ADD_COLUMN,
    ALTER_COLUMN_TYPE,
    COLUMN_CHANGE_TYPES,
    CREATE_TABLE,
    DROP_COLUMN,
    DROP_TABLE,
    RENAME_COLUMN,
    SCHEMA_CHANGE_TYPES,
    TRUNCATE_TABLE,
)

#: Every type, in Flink CDC's order.
CHANGE_TYPES = SCHEMA_CHANGE_TYPES
#: Flink CDC's families: a tag names every type in it.
FAMILIES: Mapping[str, frozenset[str]] = {
    "all": frozenset(CHANGE_TYPES),
    "column": COLUMN_CHANGE_TYPES,
    "table": frozenset({CREATE_TABLE, DROP_TABLE, TRUNCATE_TABLE}),
    "add": frozenset({ADD_COLUMN}),
    "alter": frozenset({ALTER_COLUMN_TYPE}),
    "create": frozenset({CREATE_TABLE}),
    "drop": frozenset({DROP_COLUMN, DROP_TABLE}),
    "rename": frozenset({RENAME_COLUMN}),
    "truncate": frozenset({TRUNCATE_TABLE}),
}
INCLUDE = "include.schema.changes"
EXCLUDE = "exclude.schema.changes"
_VALID = ", ".join((*CHANGE_TYPES, *FAMILIES))
#: The options a pipeline file may give as YAML lists.
LIST_OPTIONS = frozenset({INCLUDE, EXCLUDE})

#: Options every sink block takes (the README's table; the runner applies them).
SPECS = (
    OptionSpec(
        INCLUDE,
        default=None,
        default_doc="all",
        doc="the schema change types applied to targets, as a list or comma-separated: "
        "`add.column`, `alter.column.type`, `drop.column`, `rename.column`, "
        "`drop.table`, `truncate.table` (and the families `column`, `table`, `add`, "
        "`alter`, `drop`, `rename`, `truncate`, `all`); `create.table` is always applied",
    ),
    OptionSpec(
        EXCLUDE,
        default=None,
        default_doc="none",
        doc="schema change types not applied to targets (the same names); an excluded change "
        "is taken as `schema.change.behavior: ignore` takes it",
    ),
)


def excluded_types(options: Mapping[str, str]) -> frozenset[str]:
    """The change types a sink block's options keep from its targets. ``create.table`` is
    never excluded (a new table needs its target, as in Flink CDC since 3.4). Raises
    OptionError naming the option and the valid values."""
    include = _types(INCLUDE, options.get(INCLUDE))
    exclude = _types(EXCLUDE, options.get(EXCLUDE))
    applied = (FAMILIES["all"] if include is None else include) - (exclude or frozenset())
    return frozenset(CHANGE_TYPES) - applied - {CREATE_TABLE}


def _types(option: str, text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    found: set[str] = set()
    for tag in (t.strip().lower() for t in text.strip("[]").split(",")):
        if not tag:
            continue
        if tag in FAMILIES:
            found |= FAMILIES[tag]
        elif tag in CHANGE_TYPES:
            found.add(tag)
        else:
            raise OptionError(f"option '{option}': invalid value '{tag}'. Valid values: {_VALID}")
    return frozenset(found)


def without_change_options(options: Mapping[str, str]) -> dict[str, str]:
    """A sink block's options without these two (the sink types validate the rest)."""
    return {k: v for k, v in options.items() if k.lower() not in LIST_OPTIONS}

"""Quoting source names for Spark SQL.

Column and table names come from the source database, which allows backticks, quotes,
spaces and any letter in them. Every name that reaches a Spark SQL string (a column
reference, ``selectExpr``, a MERGE condition, ``delta.`path```) is quoted here, so a
backtick in a name can neither break the statement nor inject into it.
"""

from __future__ import annotations


def quoted(name: str) -> str:
    """``name`` as a Spark SQL identifier: in backticks, with backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """``value`` as a Spark SQL string literal (backslash escapes, Spark's default)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

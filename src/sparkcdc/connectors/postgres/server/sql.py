"""Quoting PostgreSQL identifiers (every name in generated SQL goes through here)."""

from __future__ import annotations

from sparkcdc.core.table import TableId


def quote(name: str) -> str:
    """``"name"`` with embedded quotes doubled: any name, exactly as stored (no folding)."""
    return '"' + name.replace('"', '""') + '"'


def quote_table(table: TableId) -> str:
    """``"schema"."table"``."""
    return f"{quote(table.database)}.{quote(table.table)}"

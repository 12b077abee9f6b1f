"""MySQL's identifier quoting (backticks), for every statement the connector builds."""

from __future__ import annotations

from sparkcdc.core.table import TableId


def quote(name: str) -> str:
    """A backtick-quoted identifier; backticks inside the name are doubled, and so is
    ``%``: a statement holding one is always run with parameters (``()`` when it has
    none), so the driver's ``%s`` formatting turns ``%%`` back into ``%`` and a name
    like ``a%s`` cannot be taken for a placeholder."""
    return "`" + name.replace("`", "``").replace("%", "%%") + "`"


def quote_table(table: TableId) -> str:
    """``database``.``table``, both parts quoted."""
    return f"{quote(table.database)}.{quote(table.table)}"

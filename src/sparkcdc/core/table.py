"""Table identifiers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TableId:
    """``namespace.table``: a MySQL database or a PostgreSQL schema, and a table in it.

    Engine-neutral: each connector quotes identifiers in its own SQL (the MySQL connector
    with backticks, ``connectors/mysql/server/sql.py``).
    """

    database: str
    table: str

    def __str__(self) -> str:
        # no namespace: a route's one-part target (the sink's default database or schema)
        return f"{self.database}.{self.table}" if self.database else self.table

    @property
    def key(self) -> str:
        """``database.table`` with dots and backslashes inside names escaped, so the key
        parses back even for a database named ``a.b`` (offsets store tables by this key)."""
        return f"{_escape(self.database)}.{_escape(self.table)}"

    @classmethod
    def from_key(cls, key: str) -> TableId:
        """The inverse of :attr:`key`: split at the first unescaped dot."""
        parts: list[str] = [""]
        chars = iter(key)
        for char in chars:
            if char == "\\":
                parts[-1] += next(chars, "")
            elif char == "." and len(parts) == 1:
                parts.append("")
            else:
                parts[-1] += char
        if len(parts) != 2:
            raise ValueError(f"not a table key: {key!r}")
        return cls(parts[0], parts[1])


def _escape(name: str) -> str:
    return name.replace("\\", "\\\\").replace(".", "\\.")

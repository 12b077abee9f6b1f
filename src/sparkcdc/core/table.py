"""Table identifiers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class TableId:
    """``database.table``; MySQL has no schema level between the two."""

    database: str
    table: str

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def quoted(self) -> str:
        return f"`{self.database.replace('`', '``')}`.`{self.table.replace('`', '``')}`"

    @classmethod
    def parse(cls, text: str) -> TableId:
        database, _, table = text.partition(".")
        return cls(database, table)

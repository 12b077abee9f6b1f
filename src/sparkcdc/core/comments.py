"""A captured table's comments: the table's and its columns' (Flink CDC's
``include-comments.enabled``).

Sources read them where the database keeps them (MySQL's ``information_schema``,
PostgreSQL's ``pg_description``) when the option is on; sinks that create tables give
them to the tables they create (Delta: the column's ``comment`` and the table's
description; JDBC: ``COMMENT``), and to the columns they add. They are not part of a
table's shape: a table whose comments alone differ is the same table (no schema change,
no new target), so they stay out of the Spark schema and of column equality.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Comments:
    """A table's comment (None: none) and its columns' comments, by column name."""

    table: str | None = None
    columns: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, table: str | None, columns: Iterable[tuple[str, str | None]]) -> Comments:
        """Empty comments are none (MySQL reports a column without one as '')."""
        return cls(table or None, tuple((name, text) for name, text in columns if text))

    def column(self, name: str) -> str | None:
        """The comment of column ``name``, or None."""
        return next((text for column, text in self.columns if column == name), None)

    def only(self, names: Iterable[str]) -> Comments:
        """The comments of the columns ``names`` (a projection's, a target's), the table's
        kept."""
        kept = set(names)
        return Comments(self.table, tuple(c for c in self.columns if c[0] in kept))

    def __bool__(self) -> bool:
        return self.table is not None or bool(self.columns)


#: No comments (the default: ``include-comments.enabled: false``).
NO_COMMENTS = Comments()

__all__ = ["NO_COMMENTS", "Comments"]

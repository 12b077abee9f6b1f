"""What every connector's captured table derives from its columns and keys.

A connector's table type is a frozen dataclass with ``table_id``, ``columns`` (objects with a
``name``), ``primary_key`` and ``chunk_key``; this mixin gives it the positions the framework
reads (snapshot/dialect.py ``SourceTable``) and the chunk key's column. An empty
``chunk_key`` is a keyless table with no chunk key column, read as one chunk
(:attr:`KeyedColumns.one_chunk`): it has no chunk key, and asking for one is an error.
"""

from __future__ import annotations

from typing import Any

from sparkcdc.core.table import TableId


class KeyedColumns:
    table_id: TableId
    columns: tuple[Any, ...]
    primary_key: tuple[str, ...]
    chunk_key: str

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def index_of(self, name: str) -> int:
        return self.column_names.index(name)

    @property
    def keyless(self) -> bool:
        """No primary key: the rows are a multiset, identified by all their values
        (``snapshot/multiset.py``)."""
        return not self.primary_key

    @property
    def key_indexes(self) -> tuple[int, ...]:
        return tuple(self.index_of(n) for n in self.primary_key)

    @property
    def one_chunk(self) -> bool:
        """A keyless table with no chunk key column: its snapshot is one chunk holding the
        whole table, with no key range (docs/design.md, "Tables without a primary key")."""
        return not self.chunk_key

    @property
    def chunk_key_index(self) -> int:
        if self.one_chunk:
            raise ValueError(f"{self.table_id} is read as one chunk: it has no chunk key column")
        return self.index_of(self.chunk_key)

    @property
    def chunk_column(self) -> Any:
        return self.columns[self.chunk_key_index]

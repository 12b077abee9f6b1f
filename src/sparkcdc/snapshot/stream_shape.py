"""A one-table stream's columns, fixed when its query starts.

Spark fixes a query's schema when it starts. The envelope (several tables) carries each
row's own columns, but a one-table typed stream cannot: at the batch after a change of its
table's columns, planning stops with ``RestartForSchemaError``, and the restarted query
continues with the new columns (docs/design.md, "Schema changes", consumers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic

import pyarrow as pa

from sparkcdc.core.errors import RestartForSchemaError, SchemaError
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.dialect import P, T
from sparkcdc.snapshot.offset import SourceOffset


class StreamShape(Generic[P, T]):
    def __init__(self, catalog: TableCatalog[P, T]) -> None:
        self.catalog = catalog
        #: The stream's columns as its first planned offset had them.
        self._fields: list[pa.Field] | None = None

    def check(self, offset: SourceOffset[P], restarted: bool) -> None:
        """A one-table stream's Spark schema was fixed when the query started: rows of
        other columns stop it, to be restarted with them (RestartForSchemaError). A query
        that starts with other columns than the offset's (the table changed again after
        the offset's position) cannot carry the rows in between at all."""
        catalog = self.catalog
        if catalog.envelope:
            return
        ((table_id, table),) = catalog.tables.items()
        progress = offset.tables.get(table_id)
        if progress is None or progress.schema is None:
            return
        shaped = catalog.tables_at(offset)[table_id]
        fields = catalog.dialect.arrow_fields(shaped)
        if self._fields is None:
            self._fields = catalog.dialect.arrow_fields(table)
        if fields == self._fields:
            return
        if restarted:
            if _names_and_types(fields) == _names_and_types(self._fields):
                # nullability aside: pgoutput's description of a changed table lacks it,
                # so a restart cannot make the two agree; the query's columns from now on
                self._fields = fields
                return
            schema = offset.schema_of(table_id)
            change = "" if schema is None else schema.change
            raise SchemaError(
                f"the columns of {table_id} at {offset.log} ({', '.join(shaped.column_names)}"
                f"{f', after {change}' if change else ''}) are not its columns now "
                f"({', '.join(table.column_names)}): it changed again after that position, "
                "and a one-table stream cannot carry rows of two shapes. Capture it together "
                "with another table (several tables follow any number of changes) or start "
                "from a new checkpoint"
            )
        raise RestartForSchemaError(
            f"the columns of {table_id} changed ({progress.schema.get('change', '')}), "
            f"{', '.join(shaped.column_names)} from {offset.log} on: restart the query to "
            "continue with them (nothing is lost or repeated)"
        )


def _names_and_types(fields: Sequence[pa.Field]) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in fields]

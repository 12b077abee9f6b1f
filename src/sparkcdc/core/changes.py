"""The changelog vocabulary: change column names, Spark/Delta change types, Flink row kinds.

Engine-neutral (no pyspark, no pyarrow): sources, formats, Spark code and sinks all name
the change columns from here, so the changelog's shape is spelled in one place.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import Enum

#: The columns every changelog row carries after the table's own columns, named as in
#: Delta's change data feed (so a sparkcdc stream and a Delta table's feed read alike):
#: what kind of change the row is (a :class:`ChangeType` value), its place in commit order
#: (an update's two images share it) and when it was committed.
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
#: PostgreSQL's ``changelog-mode: upsert`` adds this column (an array of column names, NULL
#: when none): the row's values of those columns are absent (TOASTed values an UPDATE left
#: unchanged, which the WAL then lacks), and every upsert target keeps its stored value for
#: them (docs/design.md, "Without REPLICA IDENTITY FULL"). Where a frame has it, it travels
#: with the change columns.
UNCHANGED = "_unchanged"


def change_columns(have: Collection[str]) -> tuple[str, ...]:
    """The change columns a frame with columns ``have`` carries: :data:`CHANGE_COLUMNS`,
    and :data:`UNCHANGED` where it has that."""
    return (*CHANGE_COLUMNS, UNCHANGED) if UNCHANGED in have else CHANGE_COLUMNS


class ChangeType(str, Enum):
    """``_change_type`` values, as in Delta's change data feed and Spark's changelog API."""

    INSERT = "insert"
    UPDATE_PREIMAGE = "update_preimage"
    UPDATE_POSTIMAGE = "update_postimage"
    DELETE = "delete"

    @property
    def row_kind(self) -> str:
        """Flink's short row kind (``+I -U +U -D``), as changelog-json's ``op`` writes it."""
        return _ROW_KINDS[self]


_ROW_KINDS = {
    ChangeType.INSERT: "+I",
    ChangeType.UPDATE_PREIMAGE: "-U",
    ChangeType.UPDATE_POSTIMAGE: "+U",
    ChangeType.DELETE: "-D",
}

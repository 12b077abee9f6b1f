"""The changelog vocabulary: Spark/Delta change types and Flink row kinds."""

from __future__ import annotations

from enum import Enum


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

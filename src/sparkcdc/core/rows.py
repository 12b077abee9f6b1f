"""Row changes as read from a database log, before they become Spark rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkcdc.core.table import TableId

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row's change in one log event: an insert (no before), delete (no after) or update.

    ``version`` is the ``_commit_version`` (see :mod:`sparkcdc.core.position`), ``timestamp``
    the commit time in epoch seconds as the log records it. ``file``/``pos``/``gtid`` locate
    the transaction in the log for metadata columns.
    """

    table: TableId
    before: Row | None
    after: Row | None
    version: int
    timestamp: int
    file: str = ""
    pos: int = 0
    gtid: str = ""

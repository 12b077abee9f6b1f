"""Row changes as read from a database log, before they become Spark rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

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
    #: An update known only by its new row (``before`` is None): an ``update_postimage``
    #: without a pre-image (PostgreSQL's ``changelog-mode: upsert``), not an insert.
    upsert: bool = False
    #: An upsert's columns whose values are absent (``after`` holds None there): TOASTed
    #: values the UPDATE left unchanged, which the WAL then lacks (``UNCHANGED``).
    unchanged: tuple[str, ...] = ()


#: What one rows event does to all its rows. ``upsert``: updates known only by their new
#: rows (PostgreSQL's ``changelog-mode: upsert``), one image each.
BlockKind = Literal["insert", "update", "delete", "upsert"]


@dataclass(frozen=True, slots=True)
class ChangeBlock:
    """All row changes of one log event, as the decoder returned them.

    The executor's hot path builds Arrow columns from whole blocks (list concatenation, no
    object per row): a :class:`RowChange` per row cost ~20 % of a log partition's CPU.
    ``images`` are the after images of an insert or an upsert, the before images of a
    delete, and alternate before/after for an update. Row *i* of the block has version
    ``version + i``; every row shares the event's ``timestamp``/``file``/``pos``/``gtid``.

    ``sunk`` is set when the decoder wrote the images into the table's Arrow column buffers
    instead (this many; ``images`` is then empty): the consumer takes the columns from
    there, for every block since its last batch.
    """

    table: TableId
    kind: BlockKind
    images: list[Row]
    version: int
    timestamp: int
    file: str = ""
    pos: int = 0
    gtid: str = ""
    sunk: int | None = None
    #: An ``upsert`` block's columns whose values are absent in every image (None there):
    #: TOASTed values the UPDATEs left unchanged (``core.changes.UNCHANGED``).
    unchanged: tuple[str, ...] = ()

    @property
    def image_count(self) -> int:
        """Row images (an update's before and after are two), wherever they are."""
        return len(self.images) if self.sunk is None else self.sunk

    def __len__(self) -> int:
        """Row changes in the block (an update counts once)."""
        n = self.image_count
        return n // 2 if self.kind == "update" else n

    def changes(self) -> Iterator[RowChange]:
        """The block as one :class:`RowChange` per row (the per-row path)."""
        if self.sunk is not None:
            raise ValueError("the block's images are in Arrow column buffers, not tuples")
        images, base = self.images, self.version
        rest = (self.timestamp, self.file, self.pos, self.gtid)
        if self.kind == "update":
            for i in range(len(images) // 2):
                yield RowChange(self.table, images[2 * i], images[2 * i + 1], base + i, *rest)
        elif self.kind == "insert":
            for i, row in enumerate(images):
                yield RowChange(self.table, None, row, base + i, *rest)
        elif self.kind == "upsert":
            absent = self.unchanged
            for i, row in enumerate(images):
                yield RowChange(
                    self.table, None, row, base + i, *rest, upsert=True, unchanged=absent
                )
        else:
            for i, row in enumerate(images):
                yield RowChange(self.table, row, None, base + i, *rest)

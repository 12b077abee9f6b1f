"""A point in a PostgreSQL stream: a WAL address and the stream's change count there.

A transaction T lies *before* position P iff ``T.commit_lsn < P.lsn`` (the start of its
commit record). Logical decoding returns transactions in commit order, so this splits the
log exactly, whatever P is (a commit's end, the flushed WAL end).

``_commit_version`` needs more than the LSN: a transaction's changes were written anywhere
before its commit, in any number, and must get increasing versions after every change of
earlier commits. So the stream counts: each transaction adds its row changes and one for
its commit, ``count`` is that sum at P (counted from the stream's start), the changes of
the next transaction get ``count + 1, count + 2, ...`` and the position after it
``count + n + 1``. A position's version is its count: above every change before it, below
every change after it. The driver counts when it plans a batch (wal/scan.py), executors
count the same way while they decode, so both agree on every version.

Positions compare by LSN only: ``current_position()`` does not know the count yet (0);
the driver completes it when it plans the batch (``limit_log``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text, lsn_to_text


@dataclass(frozen=True)
class LsnPosition:
    lsn: int
    count: int = 0

    def __lt__(self, other: LsnPosition) -> bool:
        return self.lsn < other.lsn

    def __le__(self, other: LsnPosition) -> bool:
        return self.lsn <= other.lsn

    def __gt__(self, other: LsnPosition) -> bool:
        return self.lsn > other.lsn

    def __ge__(self, other: LsnPosition) -> bool:
        return self.lsn >= other.lsn

    @property
    def version(self) -> int:
        return self.count

    @property
    def text(self) -> str:
        """The LSN as PostgreSQL prints it (``0/16B3748``)."""
        return lsn_to_text(self.lsn)

    def to_json(self) -> dict[str, Any]:
        return {"lsn": self.text, "count": self.count}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LsnPosition:
        return cls(lsn_from_text(str(data["lsn"])), int(data.get("count", 0)))

    def __str__(self) -> str:
        return f"{self.text} (change {self.count})"

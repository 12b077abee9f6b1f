"""Which committed transactions a PostgreSQL MVCC snapshot sees.

``pg_current_snapshot()`` prints ``xmin:xmax:xip,...`` with 64-bit transaction ids: ids
below ``xmin`` had finished, ids from ``xmax`` on had not, and ``xip`` lists those in
between still running. A committed transaction is visible exactly when it had finished:
``xid < xmin``, or ``xid < xmax`` and not in ``xip``. pgoutput names a transaction by its
32-bit id; it is widened to the 64-bit id nearest ``xmax`` (ids in use are within 2^31 of
each other, the server's own wraparound rule).
"""

from __future__ import annotations

from dataclasses import dataclass

_HALF = 1 << 31
_WRAP = 1 << 32


@dataclass(frozen=True)
class PgSnapshot:
    xmin: int
    xmax: int
    xip: frozenset[int]

    @classmethod
    def parse(cls, text: str) -> PgSnapshot:
        xmin, xmax, xip = text.split(":")
        return cls(int(xmin), int(xmax), frozenset(int(x) for x in xip.split(",") if x))

    def full_xid(self, xid32: int) -> int:
        """The 64-bit id of a 32-bit one, taken as the one nearest ``xmax``."""
        diff = (xid32 - self.xmax) % _WRAP
        if diff >= _HALF:
            diff -= _WRAP
        return self.xmax + diff

    def sees(self, xid32: int) -> bool:
        """Whether a *committed* transaction (pgoutput's 32-bit id) is visible."""
        xid = self.full_xid(xid32)
        return xid < self.xmin or (xid < self.xmax and xid not in self.xip)

    def __str__(self) -> str:
        return f"{self.xmin}:{self.xmax}:{','.join(str(x) for x in sorted(self.xip))}"

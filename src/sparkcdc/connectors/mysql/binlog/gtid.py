"""GTID positions: MariaDB's ``domain-server-seq`` lists and MySQL's ``uuid:intervals`` sets.

MariaDB names a position by the last GTID applied in each replication domain
(``0-1-100,1-2-7``); sequence numbers grow within a domain. MySQL names the *set* of
applied transactions per server uuid as merged intervals (``uuid:1-5:7-9``). Both are used
to start from a GTID and to tell whether a position is still in the binlog.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sparkcdc.core.errors import SparkCdcError

_MARIADB_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


@dataclass(frozen=True, order=True)
class MariaDbGtid:
    domain: int
    server: int
    seq: int

    @classmethod
    def parse(cls, text: str) -> MariaDbGtid:
        match = _MARIADB_GTID.match(text.strip())
        if not match:
            raise SparkCdcError(f"not a MariaDB GTID (domain-server-sequence): {text!r}")
        return cls(*(int(g) for g in match.groups()))

    def __str__(self) -> str:
        return f"{self.domain}-{self.server}-{self.seq}"


@dataclass(frozen=True)
class MariaDbGtidPosition:
    """The last GTID per domain (``@@gtid_binlog_pos`` / ``BINLOG_GTID_POS`` format)."""

    last: Mapping[int, MariaDbGtid] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> MariaDbGtidPosition:
        gtids = [MariaDbGtid.parse(p) for p in text.split(",") if p.strip()]
        domains = [g.domain for g in gtids]
        if len(set(domains)) != len(domains):
            raise SparkCdcError(f"a MariaDB GTID position lists a domain twice: {text!r}")
        return cls({g.domain: g for g in gtids})

    def includes(self, gtid: MariaDbGtid) -> bool:
        """Whether ``gtid`` was applied at this position (its domain reached its seq)."""
        last = self.last.get(gtid.domain)
        return last is not None and last.seq >= gtid.seq

    def covers(self, other: MariaDbGtidPosition) -> bool:
        """Whether this position is at or after ``other`` in every domain of ``other``."""
        return all(self.includes(g) for g in other.last.values())

    def advance(self, gtid: MariaDbGtid) -> MariaDbGtidPosition:
        return MariaDbGtidPosition({**self.last, gtid.domain: gtid})

    def __str__(self) -> str:
        return ",".join(str(self.last[d]) for d in sorted(self.last))


class InterleavedGtidError(SparkCdcError):
    """A GTID position that no single binlog position starts exactly after."""


def resume_index(target: MariaDbGtidPosition, gtids: Iterable[MariaDbGtid]) -> int | None:
    """Index of the first transaction (in binlog order) that ``target`` does not include:
    where a reader resumes after it; None if it includes them all.

    A binlog position resumes *every* later transaction, so the start is only exact if no
    transaction after it is included in ``target`` — which holds for a position taken on
    this server (``@@gtid_binlog_pos``), but not, for instance, for one taken on a replica
    that applied the domains in another order. That case raises InterleavedGtidError
    instead of re-delivering transactions. Reading stops as soon as the answer is certain:
    once every domain of ``target`` has a transaction past it (sequence numbers grow
    within a domain), nothing later can be included.
    """
    start: int | None = None
    first: MariaDbGtid | None = None
    unpassed = set(target.last)
    for i, gtid in enumerate(gtids):
        if target.includes(gtid):
            if first is not None:
                raise InterleavedGtidError(
                    f"GTID {gtid} is included in the position {target} but follows "
                    f"{first}, which is not: the position's domains interleave differently "
                    "in this binlog, so resuming from any binlog position would deliver "
                    "transactions twice or lose some"
                )
            continue
        if first is None:
            start, first = i, gtid
        unpassed.discard(gtid.domain)
        if not unpassed:
            break
    return start


def _merge(intervals: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


@dataclass(frozen=True)
class MySqlGtidSet:
    """A MySQL GTID set: per server uuid, closed intervals of transaction numbers."""

    intervals: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> MySqlGtidSet:
        found: dict[str, list[tuple[int, int]]] = {}
        for part in re.sub(r"\s+", "", text).split(","):
            if not part:
                continue
            uuid, *ranges = part.split(":")
            if not _UUID.match(uuid) or not ranges:
                raise SparkCdcError(f"not a MySQL GTID set (uuid:1-5:7): {text!r}")
            key = uuid.lower().replace("-", "")
            key = f"{key[:8]}-{key[8:12]}-{key[12:16]}-{key[16:20]}-{key[20:]}"
            for r in ranges:
                start, _, end = r.partition("-")
                if not start.isdigit() or (end and not end.isdigit()):
                    raise SparkCdcError(f"bad interval {r!r} in MySQL GTID set {text!r}")
                low, high = int(start), int(end or start)
                if low < 1 or high < low:
                    raise SparkCdcError(f"bad interval {r!r} in MySQL GTID set {text!r}")
                found.setdefault(key, []).append((low, high))
        return cls({u: _merge(v) for u, v in found.items()})

    @classmethod
    def of(cls, gtids: Iterable[tuple[str, int]]) -> MySqlGtidSet:
        """The set of single GTIDs ``(uuid, number)``."""
        found: dict[str, list[tuple[int, int]]] = {}
        for uuid, number in gtids:
            found.setdefault(uuid.lower(), []).append((number, number))
        return cls({u: _merge(v) for u, v in found.items()})

    @property
    def empty(self) -> bool:
        return not any(self.intervals.values())

    def contains(self, uuid: str, number: int) -> bool:
        return any(lo <= number <= hi for lo, hi in self.intervals.get(uuid.lower(), ()))

    def add(self, uuid: str, number: int) -> MySqlGtidSet:
        key = uuid.lower()
        return MySqlGtidSet(
            {**self.intervals, key: _merge([*self.intervals.get(key, ()), (number, number)])}
        )

    def union(self, other: MySqlGtidSet) -> MySqlGtidSet:
        keys = set(self.intervals) | set(other.intervals)
        return MySqlGtidSet(
            {k: _merge([*self.intervals.get(k, ()), *other.intervals.get(k, ())]) for k in keys}
        )

    def issubset(self, other: MySqlGtidSet) -> bool:
        return self.union(other) == other

    def minus(self, other: MySqlGtidSet) -> MySqlGtidSet:
        """The GTIDs of this set that ``other`` lacks."""
        result: dict[str, tuple[tuple[int, int], ...]] = {}
        for uuid, intervals in self.intervals.items():
            left: list[tuple[int, int]] = []
            for lo, hi in intervals:
                pieces = [(lo, hi)]
                for olo, ohi in other.intervals.get(uuid, ()):
                    pieces = [
                        part
                        for plo, phi in pieces
                        for part in ((plo, min(phi, olo - 1)), (max(plo, ohi + 1), phi))
                        if part[0] <= part[1]
                    ]
                left.extend(pieces)
            if left:
                result[uuid] = _merge(left)
        return MySqlGtidSet(result)

    def last(self, uuid: str) -> int:
        """The highest number of ``uuid`` in the set (0 if none)."""
        intervals = self.intervals.get(uuid.lower(), ())
        return intervals[-1][1] if intervals else 0

    def __str__(self) -> str:
        return ",".join(
            uuid
            + "".join(f":{lo}" if lo == hi else f":{lo}-{hi}" for lo, hi in self.intervals[uuid])
            for uuid in sorted(self.intervals)
        )

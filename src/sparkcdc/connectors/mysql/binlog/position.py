"""Binlog positions and the ``_commit_version`` numbers derived from them.

A position is a byte offset in a numbered binlog file (plus the GTID state there, kept for
purge detection and for servers that fail over). Versions must be strictly increasing per
row change in source order, and fit a signed BIGINT. A row inside a row event gets

    version = file_index << 36 | (event_start + row_index)

which is unique because every row image takes at least one byte of its event (so
``event_start + row_index`` stays below the event's end, where the next event starts), and
ordered because files are numbered in order. 36 bits cover 64 GiB per file (MariaDB
rotates at 1 GiB, but one transaction may overrun); 27 bits of file index cover 134 M files.
Snapshot rows carry the version of the position they are normalised to; no row event starts
exactly at a commit boundary (a GTID/BEGIN event comes first), so there is no tie with a
later change of the same key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.errors import SparkCdcError

POS_BITS = 36
FILE_BITS = 27
_MAX_POS = (1 << POS_BITS) - 1
_MAX_FILE = (1 << FILE_BITS) - 1
_FILE_RE = re.compile(r"^(?P<base>.*)\.(?P<index>\d+)$")


def file_index(file: str) -> int:
    """The sequence number of a binlog file name such as ``mysql-bin.000042`` (42)."""
    match = _FILE_RE.match(file)
    if not match:
        raise SparkCdcError(f"not a binlog file name: {file!r}")
    return int(match.group("index"))


def commit_version(file: str, offset: int) -> int:
    """The version number of byte ``offset`` in binlog ``file``."""
    index = file_index(file)
    if not 0 <= offset <= _MAX_POS or index > _MAX_FILE:
        raise SparkCdcError(f"binlog position {file}:{offset} is beyond the version encoding")
    return (index << POS_BITS) | offset


@dataclass(frozen=True, order=False)
class BinlogPosition:
    """A point in the binlog: file + byte offset (the end of a committed transaction).

    ``gtid`` is the server's GTID state at that point (MariaDB ``domain-server-seq`` list or
    a MySQL GTID set), informative: ordering uses file and offset, which the server assigns
    in commit order.
    """

    file: str
    pos: int
    gtid: str = ""

    @property
    def key(self) -> tuple[int, int]:
        return (file_index(self.file), self.pos)

    def __lt__(self, other: BinlogPosition) -> bool:
        return self.key < other.key

    def __le__(self, other: BinlogPosition) -> bool:
        return self.key <= other.key

    def __gt__(self, other: BinlogPosition) -> bool:
        return self.key > other.key

    def __ge__(self, other: BinlogPosition) -> bool:
        return self.key >= other.key

    @property
    def version(self) -> int:
        return commit_version(self.file, self.pos)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "pos": self.pos, "gtid": self.gtid}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BinlogPosition:
        return cls(str(data["file"]), int(data["pos"]), str(data.get("gtid", "")))

    def __str__(self) -> str:
        return f"{self.file}:{self.pos}" + (f" (GTID {self.gtid})" if self.gtid else "")

"""Bounding a micro-batch's share of the binlog for ``maxRowsPerTrigger``.

The driver walks ``SHOW BINLOG EVENTS`` (event types and positions, no row decoding; needs
only REPLICATION CLIENT) from the batch start and stops at the last transaction boundary
that keeps the number of row events within the limit. A batch ends on a transaction
boundary (never inside one: a reader starting mid-transaction would miss its table map),
and always takes at least one transaction so the stream makes progress. Only row events
of captured tables count (``Table_map`` events name the table behind each table id), so a
busy table that is not captured does not shrink batches. A row event holding several rows
(a multi-row INSERT) counts once: the bound is approximate there.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, file_index
from sparkcdc.connectors.mysql.binlog.positions import binlog_files, gtid_at
from sparkcdc.connectors.mysql.binlog.show_events import walk_events
from sparkcdc.connectors.mysql.server.connection import query

PAGE = 2000
_TABLE_MAP = re.compile(r"table_id: (\d+) \((.+)\)$")
_ROWS = re.compile(r"table_id: (\d+)")


def is_row_event(event_type: str) -> bool:
    kind = event_type.lower()
    return "_rows" in kind and kind.split("_")[0] in ("write", "update", "delete")


def advance_log(
    conn: Any,
    start: BinlogPosition,
    end: BinlogPosition,
    max_row_events: int,
    tables: Collection[str],
) -> tuple[BinlogPosition, int]:
    """The furthest transaction boundary in ``(start, end]`` within ``max_row_events`` row
    events of ``tables`` (``db.table`` names; at least one transaction), and the row events
    it covers."""
    captured: set[str] = set()  # table ids of captured tables seen in Table_map events
    file, pos = start.file, start.pos
    counted = 0
    best: tuple[str, int, int] | None = None  # file, boundary position, row events before it
    standalone = False  # inside a GTID group that ends after its one statement (DDL)
    in_group = False
    files = [name for name, _ in binlog_files(conn)]
    while (file_index(file), pos) < end.key:
        rows = query(conn, f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {PAGE}", (file,))
        if not rows:
            later = [f for f in files if file_index(f) > file_index(file)]
            if not later:
                break
            file, pos = later[0], 4
            continue
        for _, _start, event_type, _, end_pos, info in rows:
            end_pos = int(end_pos)
            if (file_index(file), end_pos) > end.key:
                return _result(conn, best, start, counted)
            boundary = False
            if event_type == "Gtid":
                in_group = True
                standalone = not str(info).upper().startswith("BEGIN")
            elif event_type == "Table_map":
                mapped = _TABLE_MAP.search(str(info))
                if mapped and mapped.group(2).replace("`", "") in tables:
                    captured.add(mapped.group(1))
            elif is_row_event(event_type):
                row_table = _ROWS.search(str(info))
                if row_table is None or row_table.group(1) in captured:
                    counted += 1
            elif event_type == "Xid" or (event_type == "Query" and str(info).upper() == "COMMIT"):
                boundary, in_group = True, False
            elif event_type == "Query" and str(info).upper() == "BEGIN":
                standalone = False  # MySQL: its Gtid event does not say BEGIN, this does
            elif event_type == "Query" and standalone:
                boundary, in_group, standalone = True, False, False
            elif event_type == "Rotate":
                boundary = not in_group
            if boundary:
                if best is not None and counted > max_row_events:
                    return _result(conn, best, start, counted)
                best = (file, end_pos, counted)
            pos = end_pos
        if rows and rows[-1][2] == "Rotate":
            later = [f for f in files if file_index(f) > file_index(file)]
            if not later:
                break
            file, pos = later[0], 4
    return end, counted


def _result(
    conn: Any, best: tuple[str, int, int] | None, start: BinlogPosition, counted: int
) -> tuple[BinlogPosition, int]:
    if best is None:
        return start, 0
    file, pos, events = best
    return BinlogPosition(file, pos, gtid_at(conn, file, pos)), events


# -- splitting a batch's log range for parallel decoding ------------------------------------

#: A log range below twice this many bytes of binlog is not split (2 MiB of row events is
#: ~25 k row changes, ~0.1 s of CPU end to end).
MIN_PIECE_BYTES = 2 << 20
#: Above that, pieces of about this size: every Spark task costs ~35 ms of CPU (JVM and
#: Python worker, docs/stack-notes.md), which at 2 MiB pieces was ~0.5-0.8 us per change, a tenth
#: of the whole capture's CPU (benchmarks.binlog --keep-up, 8 vs 2 pieces per 1-s batch).
#: A 16 MiB piece (~0.7 s of CPU) pays ~5 %; any splittable range still gets two pieces
#: so two cores decode it.
TARGET_PIECE_BYTES = 16 << 20
#: At most this many log partitions per batch (each is a binlog connection with its own id).
MAX_LOG_PIECES = 8


def piece_count(
    total: int,
    max_pieces: int = MAX_LOG_PIECES,
    min_piece_bytes: int = MIN_PIECE_BYTES,
    target_piece_bytes: int = TARGET_PIECE_BYTES,
) -> int:
    """How many pieces a log range of ``total`` bytes is split into: 1 below two minimal
    pieces, else ``total / target_piece_bytes``, at least 2 and at most ``max_pieces``."""
    if total < 2 * max(1, min_piece_bytes):
        return 1
    return max(1, min(max_pieces, max(2, total // max(1, target_piece_bytes))))


def range_bytes(conn: Any, start: BinlogPosition, end: BinlogPosition) -> int:
    """Bytes of binlog in ``(start, end]`` (across files, from ``SHOW BINARY LOGS``)."""
    if start.file == end.file:
        return max(0, end.pos - start.pos)
    total = 0
    for name, size in binlog_files(conn):
        index = file_index(name)
        if index < file_index(start.file) or index > file_index(end.file):
            continue
        lo = start.pos if name == start.file else 4
        hi = end.pos if name == end.file else size
        total += max(0, hi - lo)
    return total


_MARIADB_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_GTID_EVENT = re.compile(r"GTID (\d+)-(\d+)-(\d+)")


@dataclass(frozen=True)
class GtidState:
    """A MariaDB GTID position (the last GTID per replication domain), as
    ``BINLOG_GTID_POS`` reports it, advanced event by event along a ``SHOW BINLOG EVENTS``
    walk: after a transaction whose ``Gtid`` event says ``BEGIN GTID d-s-n`` the state's
    domain ``d`` entry is ``d-s-n``."""

    last: tuple[tuple[int, int, int], ...]  #: (domain, server, sequence), by domain

    @classmethod
    def parse(cls, text: str) -> GtidState | None:
        """None when ``text`` is not a MariaDB GTID list (MySQL, or unknown: empty)."""
        entries = []
        for part in text.split(","):
            found = _MARIADB_GTID.match(part.strip())
            if found is None:
                return None
            entries.append((int(found[1]), int(found[2]), int(found[3])))
        return cls(tuple(sorted(entries))) if entries else None

    def after(self, gtid_event_info: str) -> GtidState | None:
        """The state after the transaction a ``Gtid`` event starts; None if unreadable."""
        found = _GTID_EVENT.search(gtid_event_info)
        if found is None:
            return None
        domain = int(found[1])
        entry = (domain, int(found[2]), int(found[3]))
        return GtidState(tuple(sorted([*(e for e in self.last if e[0] != domain), entry])))

    def __str__(self) -> str:
        return ",".join(f"{d}-{s}-{n}" for d, s, n in self.last)


#: A transaction boundary passed by a walk of a range (schema_scan.py): its end's file and
#: position, the range's bytes up to it (as :func:`split_log` counts them) and its group's
#: Gtid event Info. A plain tuple: a walk makes one per transaction.
Boundary = tuple[str, int, int, str]


def _pieces(
    conn: Any, start: BinlogPosition, end: BinlogPosition, max_pieces: int, min_piece_bytes: int
) -> tuple[int, float] | None:
    """How many pieces ``(start, end]`` is split into and the bytes each should hold, or
    None when it is not split."""
    total = range_bytes(conn, start, end)
    pieces = piece_count(total, max_pieces, min_piece_bytes)
    return None if pieces < 2 else (pieces, total / pieces)


def split_at_boundaries(
    conn: Any,
    start: BinlogPosition,
    end: BinlogPosition,
    boundaries: list[Boundary],
    max_pieces: int = MAX_LOG_PIECES,
    min_piece_bytes: int = MIN_PIECE_BYTES,
) -> list[BinlogPosition]:
    """:func:`split_log` from the boundaries a walk of exactly ``(start, end]`` recorded:
    the same cuts, without walking the range again."""
    sizing = _pieces(conn, start, end, max_pieces, min_piece_bytes)
    if sizing is None:
        return [start, end]
    pieces, target = sizing
    cuts: list[BinlogPosition] = [start]
    state = GtidState.parse(start.gtid)
    for file, pos, seen, gtid_info in boundaries:
        if (file_index(file), pos) >= end.key:
            break
        if state is not None:
            state = state.after(gtid_info)
        if seen >= target * len(cuts):
            gtid = str(state) if state is not None else gtid_at(conn, file, pos)
            cuts.append(BinlogPosition(file, pos, gtid))
            if len(cuts) >= pieces:
                break
    return [*cuts, end]


def split_log(
    conn: Any,
    start: BinlogPosition,
    end: BinlogPosition,
    max_pieces: int = MAX_LOG_PIECES,
    min_piece_bytes: int = MIN_PIECE_BYTES,
) -> list[BinlogPosition]:
    """Cut points splitting ``(start, end]`` into :func:`piece_count` sub-ranges of about
    equal size, at transaction boundaries (after ``Xid``/``COMMIT`` or a
    standalone DDL), so every piece begins with its transaction's GTID and ``Table_map``
    events. Returns ``[start, cut1, ..., end]``.

    A pure function of the two positions (the binlog between them never changes), so a
    batch replayed after a restart is split the same way. The cuts' GTID states come from
    the walk (:class:`GtidState`) rather than ``BINLOG_GTID_POS``, which rescans the binlog
    file from its start on every call (~50 ms of server CPU at 380 MB into a file).
    """
    sizing = _pieces(conn, start, end, max_pieces, min_piece_bytes)
    if sizing is None:
        return [start, end]
    pieces, target = sizing
    cuts: list[BinlogPosition] = [start]
    seen = 0  # bytes of the range up to the current event's end
    standalone = False
    state = GtidState.parse(start.gtid)
    for file, pos, event_type, end_pos, info in walk_events(
        conn, start, end, PAGE, through_end=False
    ):
        seen += max(0, end_pos - pos)
        boundary = False
        if event_type == "Gtid":
            standalone = not str(info).upper().startswith("BEGIN")
            if state is not None:
                state = state.after(str(info))
        elif event_type == "Xid" or (event_type == "Query" and str(info).upper() == "COMMIT"):
            boundary = True
        elif event_type == "Query" and str(info).upper() == "BEGIN":
            standalone = False  # MySQL: its Gtid event does not say BEGIN, this does
        elif event_type == "Query" and standalone:
            boundary, standalone = True, False
        if boundary and seen >= target * len(cuts):
            gtid = str(state) if state is not None else gtid_at(conn, file, end_pos)
            cuts.append(BinlogPosition(file, end_pos, gtid))
            if len(cuts) >= pieces:
                break
    return [*cuts, end]

"""Where a micro-batch ends: the driver's scan of the WAL since the batch start.

The driver peeks the stream's slot once per planned batch, aggregated on the server to one
row per transaction (xid, commit LSN, row changes), so only those summaries travel. From
them it sets the batch's end B:

* the change count at B (wal/position.py: every change's ``_commit_version``);
* at most ``maxRowsPerTrigger`` row changes, at transaction boundaries, at least one
  transaction;
* **every transaction committed before B is visible** to any snapshot taken from now on.
  A transaction's commit record reaches the WAL (and logical decoding) before the
  transaction becomes visible to other sessions; with synchronous replication it can stay
  invisible for long. Visibility only grows, so checking the scanned transactions against
  a snapshot taken after the scan, and ending the batch before the first invisible one,
  gives that guarantee for B. Chunk reads build on it (snapshot/reader.py): what their
  snapshots miss of B can only lie after B.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import query
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.snapshot.visibility import PgSnapshot
from sparkcdc.connectors.postgres.wal.pgoutput import Relation, lsn_to_text, parse_message
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.slot import PEEK

#: One row per decoded transaction: its xid, its Commit message's commit and end LSNs
#: (bytes 2-17 of the message: flags, then two int64), its row changes (Insert, Update,
#: Delete messages), its truncates, and the relations they truncated (Truncate messages
#: from byte 7 on: one int32 OID per relation), and its Relation messages (pgoutput
#: describes a table again before its first change after an ALTER TABLE; few and small).
_SUMMARY = f"""
SELECT xid::text::bigint,
       pg_catalog.string_agg(substring(data from 3 for 16), ''::bytea)
           FILTER (WHERE pg_catalog.get_byte(data, 0) = 67),
       pg_catalog.count(*) FILTER (WHERE pg_catalog.get_byte(data, 0) IN (73, 85, 68)),
       pg_catalog.count(*) FILTER (WHERE pg_catalog.get_byte(data, 0) = 84),
       pg_catalog.string_agg(substring(data from 7), ''::bytea)
           FILTER (WHERE pg_catalog.get_byte(data, 0) = 84),
       pg_catalog.array_agg(data ORDER BY lsn) FILTER (WHERE pg_catalog.get_byte(data, 0) = 82)
FROM {PEEK}
GROUP BY 1
"""
_LSNS = struct.Struct(">QQ")


@dataclass(frozen=True)
class Transaction:
    xid: int  #: 32-bit, as pgoutput sends it
    commit_lsn: int
    end_lsn: int
    changes: int
    truncates: int
    #: The OIDs of the relations its truncates emptied.
    truncated: tuple[int, ...] = ()
    #: Its Relation messages, in order.
    relations: tuple[bytes, ...] = ()


def scan_transactions(
    conn: Any, config: PostgresSourceConfig, start: LsnPosition, upto: int
) -> list[Transaction]:
    """The transactions committed in ``[start, upto)``, in commit order (the stream's own
    slot: only the driver uses it)."""
    rows = query(
        conn,
        _SUMMARY,
        (config.slot_name, lsn_to_text(upto), config.publication_name),
    )
    found = []
    for xid, lsns, changes, truncates, oids, relations in rows:
        if lsns is None:  # no Commit: cut off by upto (its record was read, not finished)
            continue
        commit_lsn, end_lsn = _LSNS.unpack(bytes(lsns))
        if start.lsn <= commit_lsn < upto:
            raw = bytes(oids or b"")
            truncated = struct.unpack(f">{len(raw) // 4}I", raw)
            described = tuple(bytes(r) for r in relations or ())
            found.append(
                Transaction(
                    int(xid),
                    commit_lsn,
                    end_lsn,
                    int(changes),
                    int(truncates),
                    truncated,
                    described,
                )
            )
    found.sort(key=lambda t: t.commit_lsn)
    return found


def batch_end(
    start: LsnPosition,
    upto: int,
    transactions: Sequence[Transaction],
    visible: PgSnapshot,
    max_rows: int | None,
) -> tuple[LsnPosition, int, int]:
    """The batch's end, the row changes it holds and the truncates (they are not row
    changes, but the log reader must meet them: it fails on a captured table's)."""
    count, rows, truncates = start.count, 0, 0
    for i, tx in enumerate(transactions):
        if not visible.sees(tx.xid):
            return LsnPosition(tx.commit_lsn, count), rows, truncates
        if max_rows is not None and i > 0 and rows + tx.changes > max_rows:
            return LsnPosition(tx.commit_lsn, count), rows, truncates
        count += tx.changes + 1
        rows += tx.changes
        truncates += tx.truncates
    return LsnPosition(upto, count), rows, truncates


def first_truncate(
    start: LsnPosition, end: LsnPosition, transactions: Sequence[Transaction], oids: set[int]
) -> tuple[LsnPosition, LsnPosition, Transaction] | None:
    """The first transaction in ``[start, end)`` that truncates one of ``oids``: the
    positions before and after it (counted as executors count), and the transaction."""
    count = start.count
    for tx in transactions:
        if tx.commit_lsn >= end.lsn:
            return None
        if oids.intersection(tx.truncated):
            after = LsnPosition(tx.end_lsn, count + tx.changes + 1)
            return LsnPosition(tx.commit_lsn, count), after, tx
        count += tx.changes + 1
    return None


def first_described_change(
    start: LsnPosition,
    end: LsnPosition,
    transactions: Sequence[Transaction],
    tables: Mapping[int, PgTable],
) -> tuple[LsnPosition, Transaction, list[Relation]] | None:
    """The first transaction in ``[start, end)`` that describes one of ``tables`` (by OID)
    with other columns or types than it has: the position before it, the transaction and
    that table's Relation messages in it (more than one when it changed inside)."""
    count = start.count
    for tx in transactions:
        if tx.commit_lsn >= end.lsn:
            return None
        for raw in tx.relations:
            relation = parse_message(raw)
            assert isinstance(relation, Relation)
            table = tables.get(relation.oid)
            if table is not None and described_otherwise(table, relation):
                same = [parse_message(r) for r in tx.relations]
                mine = [r for r in same if isinstance(r, Relation) and r.oid == relation.oid]
                return LsnPosition(tx.commit_lsn, count), tx, mine
        count += tx.changes + 1
    return None


def described_otherwise(table: PgTable, relation: Relation) -> bool:
    """Whether ``relation`` gives ``table`` other columns (names, or types where known)."""
    names = tuple(c.name for c in relation.columns)
    types = tuple((c.type_oid, c.typmod) for c in relation.columns)
    return names != table.column_names or bool(table.column_types and types != table.column_types)

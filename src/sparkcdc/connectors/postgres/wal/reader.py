"""Bounded WAL reads in Spark tasks: a temporary copy of the slot, peeked, decoded.

A read streams ``pg_logical_slot_peek_binary_changes`` of its own copy of the stream's
slot through a server-side cursor (memory stays bounded by the fetch size) and decodes the
transactions committed in its range (wal/decode.py). A lost connection fails the read,
which is retried from its start, skipping the changes already delivered; the caller sees
each change once, never a short read.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import connect, retries
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.wal.decode import Located, WalDecoder
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text, lsn_to_text
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.slot import PEEK, copy_slot
from sparkcdc.core.errors import lost_log
from sparkcdc.core.rows import ChangeBlock
from sparkcdc.core.table import TableId

#: Messages fetched per round trip of the server-side cursor.
FETCH_MESSAGES = 5000


def read_located(
    config: PostgresSourceConfig,
    tables: Mapping[TableId, PgTable],
    start: LsnPosition,
    end: int,
) -> Iterator[Located]:
    """The changes of ``tables`` committed in ``[start.lsn, end)``, with their transactions,
    versions counted from ``start.count``."""
    conn = connect(config, autocommit=False)
    try:
        slot = copy_slot(conn, config)
        copied = _copy_state(conn, slot)
        if copied > start.lsn:
            raise lost_log(
                f"replication slot '{config.slot_name}' is at {lsn_to_text(copied)}, past "
                f"{start.text} where this read starts: the WAL in between is released (was "
                "the slot dropped and made again, advanced by hand, or used by another "
                "stream?)"
            )
        conn.commit()
        decoder = WalDecoder(
            tables, start.lsn, end, start.count, config.decimal_mode, config.upsert
        )
        with conn.cursor(name="sparkcdc_wal", binary=True) as cur:
            cur.execute(
                f"SELECT data FROM {PEEK}", (slot, lsn_to_text(end), config.publication_name)
            )
            yield from decoder.decode(_messages(cur))
        conn.commit()
    finally:
        conn.close()


def _messages(cur: Any) -> Iterator[bytes]:
    """The peeked messages, fetched ``FETCH_MESSAGES`` at a time in binary (no hex text to
    decode; one round trip and one Python call per fetch, not per row)."""
    while rows := cur.fetchmany(FETCH_MESSAGES):
        for (data,) in rows:
            yield data


def _copy_state(conn: Any, slot: str) -> int:
    ((confirmed,),) = conn.execute(
        "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
        (slot,),
    ).fetchall()
    return lsn_from_text(confirmed)


def read_blocks_with_retries(
    config: PostgresSourceConfig,
    tables: Mapping[TableId, PgTable],
    start: LsnPosition,
    end: LsnPosition,
) -> Iterator[ChangeBlock]:
    """``read_located``'s blocks, surviving ``connect.max-retries`` lost connections: a
    retry decodes the range again and skips the versions already delivered."""
    delivered = start.count  # the last version handed out
    policy, attempt = retries(config), 0
    while True:
        try:
            for located in read_located(config, tables, start, end.lsn):
                block = located.block
                last = block.version + len(block) - 1
                if last <= delivered:
                    continue
                if block.version <= delivered:  # partly delivered before the failure
                    block = _tail(block, delivered - block.version + 1)
                yield block
                delivered = last
            return
        except Exception as exc:
            what = f"reading the WAL {start.text}..{end.text}"
            attempt = policy.pause(attempt, what, exc, final=True)


def _tail(block: ChangeBlock, skip: int) -> ChangeBlock:
    """``block`` without its first ``skip`` changes."""
    per = 2 if block.kind == "update" else 1
    return ChangeBlock(
        block.table,
        block.kind,
        list(itertools.islice(block.images, skip * per, None)),
        block.version + skip,
        block.timestamp,
    )

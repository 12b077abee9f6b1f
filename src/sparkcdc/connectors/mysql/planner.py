"""Driver-side chunk planning against the database: key statistics and chunk ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.connection import query
from sparkcdc.connectors.mysql.discovery import CapturedTable
from sparkcdc.connectors.mysql.keys import chunk_key_order
from sparkcdc.connectors.mysql.snapshot_reader import quote
from sparkcdc.connectors.mysql.types import snapshot_converter, snapshot_select_expression
from sparkcdc.core.errors import SparkCdcError
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats, even_step, plan_chunks
from sparkcdc.snapshot.progress import TableProgress


class ChunkPlanner:
    """Plans chunks of one table from a cursor; key statistics are read once and cached.

    Statistics only steer the split sizes: any split of a key range is correct, so stale
    statistics (rows inserted later) cost balance, never correctness.
    """

    def __init__(self, conn: Any, table: CapturedTable, config: MySqlSourceConfig) -> None:
        self.conn = conn
        self.table = table
        self.config = config
        self.order = chunk_key_order(table, config)
        converter = snapshot_converter(table.chunk_column)
        self._convert: Callable[[Any], Any] = (
            (lambda v: v if v is None else converter(v)) if converter else (lambda v: v)
        )
        self._stats: KeyStats | None = None
        self._step: int | None = None

    @property
    def stats(self) -> KeyStats:
        if self._stats is None:
            key = self._key_value
            ((low, high),) = query(
                self.conn, f"SELECT MIN({key}), MAX({key}) FROM {self.table.table_id.quoted}"
            )
            rows = query(
                self.conn,
                "SELECT TABLE_ROWS FROM information_schema.TABLES "
                "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (self.table.table_id.database, self.table.table_id.table),
            )
            estimate = int(rows[0][0] or 0) if rows else 0
            self._stats = KeyStats(self._convert(low), self._convert(high), estimate)
            self._step = even_step(
                self._stats,
                self.config.chunk_size,
                self.config.factor_lower,
                self.config.factor_upper,
            )
        return self._stats

    def next_chunk_end(self, lo: Key, size: int) -> Key:
        """The first key ``size`` rows past ``lo`` (None when the table ends before)."""
        key, value = quote(self.table.chunk_key), self._key_value
        where, args = (f" WHERE {key} >= %s", [lo]) if lo is not None else ("", [])
        rows = query(
            self.conn,
            f"SELECT {value} FROM {self.table.table_id.quoted}{where} ORDER BY {key} "
            f"LIMIT 1 OFFSET {int(size)}",
            args,
        )
        if not rows:
            return None
        hi = self._convert(rows[0][0])
        if hi is None or (lo is not None and self.order.sort_key(hi) <= self.order.sort_key(lo)):
            # a run of equal (or NULL) keys longer than a chunk: end after the run
            bound = f" WHERE {key} > %s" if hi is not None else f" WHERE {key} IS NOT NULL"
            ((after,),) = query(
                self.conn,
                f"SELECT MIN({value}) FROM {self.table.table_id.quoted}{bound}",
                [hi] if hi is not None else [],
            )
            hi = self._convert(after)
        if hi is not None and lo is not None and self.order.sort_key(hi) <= self.order.sort_key(lo):
            raise SparkCdcError(
                f"chunk planning of {self.table.table_id} did not advance past {lo!r} on "
                f"'{self.table.chunk_key}': the server's values of this column do not round-trip; "
                "pick another column with 'scan.incremental.snapshot.chunk.key-column'"
            )
        return hi

    @property
    def _key_value(self) -> str:
        """The chunk key as the chunk reads select it (FLOAT widened: the text protocol
        prints 6 digits, and a rounded bound would stop the cursor)."""
        expression = snapshot_select_expression(self.table.chunk_column)
        return expression.rsplit(" AS ", 1)[0]

    def plan(self, progress: TableProgress, max_chunks: int) -> list[Chunk]:
        stats = self.stats
        return plan_chunks(
            progress.cursor,
            progress.started,
            stats,
            self.config.chunk_size,
            max_chunks,
            self._step,
            self.next_chunk_end,
        )

    def chunks_between(self, start: TableProgress, end: TableProgress) -> list[Chunk]:
        """Re-plan the chunks covering the keys a batch moved the cursor over."""
        if start == end or start.done or (not end.done and not end.started):
            return []
        chunks: list[Chunk] = []
        progress = start
        while True:
            (chunk,) = self.plan(progress, 1)
            if not end.done and (
                chunk.hi is None or self.order.sort_key(chunk.hi) >= self.order.sort_key(end.cursor)
            ):
                chunks.append(Chunk(chunk.lo, end.cursor))
                return chunks
            chunks.append(chunk)
            if chunk.hi is None:
                return chunks
            progress = TableProgress(started=True, cursor=chunk.hi)

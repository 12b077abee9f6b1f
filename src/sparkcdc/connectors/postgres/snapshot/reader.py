"""Chunk reads: one MVCC snapshot per partition, normalised exactly to the batch's position.

A partition's chunks are read in one ``REPEATABLE READ, READ ONLY`` transaction (no locks,
no writes). Its snapshot S is not a log position but a set of visible transactions, which
``pg_current_snapshot()`` spells out (wal/../visibility.py); right after it the reader takes
H, the WAL insert position: every transaction S sees committed before H. The batch's target
B guarantees that every transaction committed before B is visible to S (wal/scan.py). So S
and B disagree only on transactions committed in ``[B, H)``: each is decoded from the WAL
with its xid, is *in S* iff S sees that xid and *in B* iff it committed before B, and
``visibility_overrides`` (snapshot/normalize.py) turns the partition's rows into exactly
their state at B. docs/design.md, "Exact chunks on PostgreSQL", has the argument.

Rows travel as the server's text: ``COPY (SELECT ...) TO STDOUT (FORMAT csv)``, parsed by
pyarrow's CSV reader into string columns and converted column by column
(server/types.py ``text_to_arrow``), the same text the WAL carries.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import connect, with_retries
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.sql import quote
from sparkcdc.connectors.postgres.server.types import arrow_type, text_to_arrow
from sparkcdc.connectors.postgres.snapshot.chunk_ends import bound
from sparkcdc.connectors.postgres.snapshot.keys import PartitionKeys
from sparkcdc.connectors.postgres.snapshot.visibility import PgSnapshot
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.reader import read_located
from sparkcdc.core.rows import Row
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.normalize import apply_overrides, visibility_overrides

#: Bytes of CSV per Arrow batch (~50k rows of a narrow table): Spark pays per batch.
CSV_BLOCK = 4 << 20
#: Rows per batch when rows are patched in Python (a window touched the partition).
PATCHED_BATCH = 65_536

Overrides = dict[Any, Row | None]


def chunk_query(table: PgTable, chunk: Chunk) -> tuple[str, list[Any]]:
    """The ``SELECT`` of one chunk (chunk keys are NOT NULL: checked at discovery)."""
    key = quote(table.chunk_key)
    columns = ", ".join(quote(c.name) for c in table.columns)
    conditions, args = [], []
    if chunk.lo is not None:
        conditions.append(f"{key} >= {bound(table)}")
        args.append(chunk.lo)
    if chunk.hi is not None:
        conditions.append(f"{key} < {bound(table)}")
        args.append(chunk.hi)
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {columns} FROM {table.sql_name}{where}", args


def read_chunks(
    config: PostgresSourceConfig,
    table: PgTable,
    chunks: Sequence[Chunk],
    target: LsnPosition,
) -> Iterator[ChunkRows]:
    """The rows of ``chunks`` as of ``target``, in Arrow batches."""
    import psycopg

    keys = PartitionKeys.of(table, chunks)
    contiguous = all(a.hi is not None and a.hi == b.lo for a, b in itertools.pairwise(chunks))
    ranges = [Chunk(chunks[0].lo, chunks[-1].hi)] if contiguous else list(chunks)
    conn = connect(config, autocommit=False)
    try:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        ((snapshot_text, insert_lsn),) = conn.execute(
            "SELECT pg_current_snapshot()::text, pg_current_wal_insert_lsn()::text"
        ).fetchall()
        snapshot = PgSnapshot.parse(snapshot_text)
        overrides = with_retries(
            config,
            f"reading the WAL window of {table.table_id}",
            lambda: window_overrides(
                config, table, keys, snapshot, lsn_from_text(insert_lsn), target
            ),
        )
        batches = (b for chunk in ranges for b in _copy(conn, table, chunk, config.decimal_mode))
        if not overrides:
            yield from (ChunkRows((), columns=b) for b in batches)
        else:
            names = [c.name for c in table.columns]
            rows = (tuple(r[n] for n in names) for b in batches for r in b.to_pylist())
            patched = apply_overrides(rows, overrides, keys.key_of, keys.in_partition)
            while batch := list(itertools.islice(patched, PATCHED_BATCH)):
                yield ChunkRows(batch)
        conn.commit()
    finally:
        conn.close()


def window_overrides(
    config: PostgresSourceConfig,
    table: PgTable,
    keys: PartitionKeys,
    snapshot: PgSnapshot,
    insert_lsn: int,
    target: LsnPosition,
) -> Overrides:
    """Per-key states at ``target`` for the partition's keys whose snapshot state differs:
    the transactions committed between ``target`` and ``insert_lsn``, judged by xid."""
    low, high = sorted((target.lsn, insert_lsn))
    if low == high:
        return {}
    flagged = []
    for located in read_located(config, {table.table_id: table}, LsnPosition(low), high):
        seen = snapshot.sees(located.xid)
        wanted = located.commit_lsn < target.lsn
        if seen == wanted:
            continue
        for change in located.block.changes():
            if (change.before is not None and keys.in_partition(change.before)) or (
                change.after is not None and keys.in_partition(change.after)
            ):
                flagged.append((change, seen, wanted))
    return visibility_overrides(flagged, keys.key_of)


def _copy(conn: Any, table: PgTable, chunk: Chunk, decimal_mode: str) -> Iterator[pa.RecordBatch]:
    """One chunk's rows through ``COPY ... (FORMAT csv)`` into typed Arrow batches."""
    from psycopg import sql

    select, args = chunk_query(table, chunk)
    literal = tuple(sql.Literal(a).as_string(conn) for a in args)
    statement = f"COPY ({select % literal}) TO STDOUT (FORMAT csv)"
    names = [f"c{i}" for i in range(len(table.columns))]
    schema = pa.schema(
        [pa.field(c.name, arrow_type(c, decimal_mode), c.nullable) for c in table.columns]
    )
    with conn.cursor() as cur, cur.copy(statement) as copy:
        stream = _CopyStream(copy)
        if not stream.peek():
            return
        reader = pacsv.open_csv(
            stream,
            read_options=pacsv.ReadOptions(column_names=names, block_size=CSV_BLOCK),
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types=dict.fromkeys(names, pa.string()),
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                null_values=[""],
            ),
        )
        for text in reader:
            arrays = [
                text_to_arrow(text.column(i), column, decimal_mode)
                for i, column in enumerate(table.columns)
            ]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)


class _CopyStream:
    """COPY's rows (one message each) as a file pyarrow reads in large blocks."""

    def __init__(self, copy: Any) -> None:
        self.rows = iter(copy)
        self.buffer = bytearray()
        self.done = False
        self.closed = False

    def _fill(self, size: int) -> None:
        parts = [self.buffer]
        have = len(self.buffer)
        for row in self.rows:
            parts.append(row)
            have += len(row)
            if have >= size:
                break
        else:
            self.done = True
        self.buffer = bytearray().join(parts)

    def peek(self) -> bool:
        """Whether any row comes (pyarrow refuses an empty CSV)."""
        if not self.buffer and not self.done:
            self._fill(1)
        return bool(self.buffer)

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            size = 1 << 62
        if len(self.buffer) < size and not self.done:
            self._fill(size)
        out, self.buffer = bytes(self.buffer[:size]), self.buffer[size:]
        return out

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.closed = True

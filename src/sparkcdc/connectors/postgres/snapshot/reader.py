"""Chunk reads: one MVCC snapshot per partition, normalised exactly to the batch's position.

A partition's chunks are read in one ``REPEATABLE READ, READ ONLY`` transaction (no locks,
no writes). Its snapshot S is not a log position but a set of visible transactions, which
``pg_current_snapshot()`` spells out (wal/../visibility.py); right after it the reader takes
H, the WAL insert position: every transaction S sees committed before H. The batch's target
B guarantees that every transaction committed before B is visible to S (wal/scan.py). So S
and B disagree only on transactions committed in ``[B, H)``: each is decoded from the WAL
with its xid, is *in S* iff S sees that xid and *in B* iff it committed before B, and
``visibility_overrides`` (snapshot/normalize.py) turns the partition's rows into exactly
their state at B. docs/design.md, "Exact chunks on PostgreSQL", has the argument. A table
without a primary key folds the same changes into net copies per row value instead
(``visibility_delta``, snapshot/multiset.py; docs/design.md, "Tables without a primary
key": "PostgreSQL's visibility snapshots").

Under ``changelog-mode: upsert`` the WAL has no old rows to undo a change with: a key whose
window changes S sees (and B lacks) keeps its row as S has it, a later state the next
batch's log replays its way to again (docs/design.md, "Without REPLICA IDENTITY FULL").
Changes B has and S lacks (none, by the planning's rule) are still applied: they need new
rows and keys only.

Rows come through ADBC's PostgreSQL driver, which streams ``COPY ... (FORMAT binary)``
into Arrow in C++. Only types whose binary value is exactly what the WAL's text parses to
travel natively (integers, booleans, floats, bytea, text/varchar, and dates and timestamps,
with ``infinity`` mapped to the same stand-ins in SQL); every other column is selected as
its type output function's text (``format('%s', c)``, numeric ``c::text``) and parsed like
the WAL's text (server/types.py ``text_to_arrow``), so both paths give identical values.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.connection import arrow_connect, with_retries
from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.sql import quote
from sparkcdc.connectors.postgres.server.types import (
    PgColumn,
    PgValueError,
    arrow_type,
    text_to_arrow,
    value_family,
)
from sparkcdc.connectors.postgres.snapshot.keys import partition_keys
from sparkcdc.connectors.postgres.snapshot.visibility import PgSnapshot
from sparkcdc.connectors.postgres.wal.decode import ColumnsChangedInRange, TruncateInRange
from sparkcdc.connectors.postgres.wal.pgoutput import lsn_from_text
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.reader import read_located
from sparkcdc.core.errors import ChunkCrossedChange, SchemaError
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.keys import PartitionKeys
from sparkcdc.snapshot.multiset import visibility_delta
from sparkcdc.snapshot.normalize import upsert_visibility_overrides, visibility_overrides
from sparkcdc.snapshot.window import Window, apply_window

#: Rows per batch when rows are patched in Python (a window touched the partition).
PATCHED_BATCH = 65_536

#: Per-key states, or net copies per row value for a keyless table (snapshot/window.py).
Overrides = Window


def chunk_query(table: PgTable, chunk: Chunk, columns: Sequence[str]) -> str:
    """The ``SELECT`` of one chunk, bounds as literals (chunk keys are NOT NULL: checked at
    discovery). A table read as one chunk (no chunk key column) is read whole: no ``WHERE``."""
    if table.one_chunk:
        if chunk != Chunk():
            raise AssertionError(f"{table.table_id} is read as one chunk, not as {chunk}")
        return f"SELECT {', '.join(columns)} FROM {table.sql_name}"
    key = quote(table.chunk_key)
    cast = "pg_catalog." + quote(table.chunk_column.type.name)  # built-in (keys.py)
    conditions = []
    if chunk.lo is not None:
        conditions.append(f"{key} >= {literal(chunk.lo)}::{cast}")
    if chunk.hi is not None:
        conditions.append(f"{key} < {literal(chunk.hi)}::{cast}")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"SELECT {', '.join(columns)} FROM {table.sql_name}{where}"


def literal(value: Any) -> str:
    """A chunk bound as SQL (psycopg's quoting: strings, bytes, dates, timestamps)."""
    from psycopg import sql

    return sql.Literal(value).as_string(None)


#: Families read in binary, unchanged: their binary value is exactly the text's value.
_NATIVE = frozenset({"bool", "int", "float4", "float8", "bytea"})
_SENTINELS = {
    "date": ("DATE '9999-12-31'", "DATE '0001-01-01'"),
    "timestamp": (
        "TIMESTAMP '9999-12-31 23:59:59.999999'",
        "TIMESTAMP '0001-01-01 00:00:00'",
    ),
    "timestamptz": (
        "TIMESTAMPTZ '9999-12-31 23:59:59.999999+00'",
        "TIMESTAMPTZ '0001-01-01 00:00:00+00'",
    ),
}
#: String types whose binary send is their output text.
_NATIVE_TEXT = frozenset({"text", "varchar"})


@dataclass(frozen=True)
class Selected:
    """How one column is selected and turned into its Arrow array."""

    expression: str
    native: bool  #: binary value as is (else text, parsed like the WAL's)
    temporal: bool  #: dates and timestamps: checked for years Spark cannot hold


def selection(table: PgTable, decimal_mode: str) -> list[Selected]:
    out = []
    for column in table.columns:
        name = quote(column.name)
        family = value_family(column, decimal_mode)
        if (family in _NATIVE and column.type.name != "oid") or (
            family == "string" and column.type.name in _NATIVE_TEXT
        ):  # (oid is unsigned: ADBC reads it as a signed int32)
            out.append(Selected(name, True, False))
        elif family in _SENTINELS:
            high, low = _SENTINELS[family]
            expression = (
                f"CASE WHEN {name} = 'infinity' THEN {high} "
                f"WHEN {name} = '-infinity' THEN {low} ELSE {name} END"
            )
            out.append(Selected(expression, True, True))
        elif family == "decimal":
            out.append(Selected(f"{name}::text", False, False))
        else:
            # the type's output function, as pgoutput prints it (format turns NULL into '')
            output = f"CASE WHEN {name} IS NOT NULL THEN pg_catalog.format('%s', {name}) END"
            out.append(Selected(output, False, False))
    return out


def read_chunks(
    config: PostgresSourceConfig,
    table: PgTable,
    chunks: Sequence[Chunk],
    target: LsnPosition,
) -> Iterator[ChunkRows]:
    """The rows of ``chunks`` as of ``target``, in Arrow batches."""
    keys = partition_keys(table, chunks)
    contiguous = all(a.hi is not None and a.hi == b.lo for a, b in itertools.pairwise(chunks))
    ranges = [Chunk(chunks[0].lo, chunks[-1].hi)] if contiguous else list(chunks)
    rows = arrow_connect(config)
    try:
        cur = rows.cursor()
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cur.execute(
            "SELECT pg_catalog.pg_current_snapshot()::text, "
            "pg_catalog.pg_current_wal_insert_lsn()::text"
        )
        ((snapshot_text, insert_lsn),) = cur.fetchall()
        cur.close()
        snapshot = PgSnapshot.parse(snapshot_text)
        overrides = with_retries(
            config,
            f"reading the WAL window of {table.table_id}",
            lambda: window_overrides(
                config, table, keys, snapshot, lsn_from_text(insert_lsn), target
            ),
            final=True,
        )
        batches = _crossing(
            table, (b for chunk in ranges for b in _fetch(rows, table, chunk, config.decimal_mode))
        )
        if not overrides:
            yield from (ChunkRows((), columns=b) for b in batches)
        else:
            names = [c.name for c in table.columns]
            values = (tuple(r[n] for n in names) for b in batches for r in b.to_pylist())
            patched = apply_window(
                values, overrides, keys.key_of, keys.in_partition, str(table.table_id)
            )
            while batch := list(itertools.islice(patched, PATCHED_BATCH)):
                yield ChunkRows(batch)
        rows.commit()
    finally:
        rows.close()


#: SQLSTATE undefined_column: a column the batch reads with is gone.
UNDEFINED_COLUMN = "42703"
#: SQLSTATE undefined_table: the table is gone (dropped or renamed since the planning).
UNDEFINED_TABLE = "42P01"


def _crossing(table: PgTable, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches``, where a column the batch was planned with is gone by the SELECT (a drop
    or rename after the planning) is a crossed change: the chunk emits nothing and is read
    again at the change. The WAL describes the change only with the table's next row
    change, so until then the planner holds the table's chunks and keeps their key range
    (:meth:`PostgresDialect.columns_pending`), which needs the columns' numbers: without
    them (an older checkpoint's table) this stays an error. A table gone since the
    planning is one too: its drop's batch follows (the planner finds it gone), and its
    rows are gone."""
    try:
        yield from batches
    except Exception as exc:
        state = getattr(exc, "sqlstate", None)
        if state == UNDEFINED_TABLE:
            raise ChunkCrossedChange(f"the table is gone ({exc})") from exc
        if state != UNDEFINED_COLUMN:
            raise
        if not table.attnums:
            raise SchemaError(
                f"a column of {table.table_id} is gone since the batch was planned ({exc}); "
                "start the stream again from a new checkpoint (a new snapshot)"
            ) from exc
        raise ChunkCrossedChange(f"a column of the batch is gone ({exc})") from exc


def window_overrides(
    config: PostgresSourceConfig,
    table: PgTable,
    keys: PartitionKeys,
    snapshot: PgSnapshot,
    insert_lsn: int,
    target: LsnPosition,
) -> Overrides:
    """Per-key states at ``target`` for the partition's keys whose snapshot state differs:
    the transactions committed between ``target`` and ``insert_lsn``, judged by xid. Under
    ``changelog-mode: upsert`` only changes the target has and the snapshot lacks. A
    keyless table's (never under upsert: discovery leaves it out) are net copies per row
    value, which need no order among the changes."""
    low, high = sorted((target.lsn, insert_lsn))
    if low == high:
        return {}
    flagged = []
    try:
        for located in read_located(config, {table.table_id: table}, LsnPosition(low), high):
            seen = snapshot.sees(located.xid)
            wanted = located.commit_lsn < target.lsn
            if seen == wanted:
                continue
            for change in located.block.changes():
                if keys.touches(change.before, change.after):
                    flagged.append((change, seen, wanted))
    except TruncateInRange as exc:
        # the rows it removed cannot be put back: the chunk emits nothing, and the
        # truncate's own batch reads its range again (snapshot/progress.py, ChunkSpan)
        raise ChunkCrossedChange(f"its window crosses a truncate: {exc}") from exc
    except ColumnsChangedInRange as exc:  # the same, in the change's new shape
        raise ChunkCrossedChange(f"its window crosses a change of columns: {exc}") from exc
    if table.keyless:
        return visibility_delta(flagged, keys.in_partition)
    normalise = upsert_visibility_overrides if config.upsert else visibility_overrides
    return normalise(flagged, keys.key_of)


def _fetch(conn: Any, table: PgTable, chunk: Chunk, decimal_mode: str) -> Iterator[pa.RecordBatch]:
    """One chunk's rows as typed Arrow batches of the table's schema."""
    selected = selection(table, decimal_mode)
    schema = pa.schema(
        [pa.field(c.name, arrow_type(c, decimal_mode), c.nullable) for c in table.columns]
    )
    cur = conn.cursor()
    try:
        cur.execute(chunk_query(table, chunk, [s.expression for s in selected]))
        for batch in cur.fetch_record_batch():
            arrays = []
            for i, (column, how) in enumerate(zip(table.columns, selected, strict=True)):
                values = batch.column(i)
                if how.native:
                    if how.temporal:
                        _check_years(values, column)
                    target = schema.field(i).type
                    arrays.append(values if values.type == target else values.cast(target))
                else:
                    arrays.append(text_to_arrow(values, column, decimal_mode))
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)
    finally:
        cur.close()


def _check_years(values: pa.Array, column: PgColumn) -> None:
    """Dates and timestamps outside 0001-9999 (BC, or years Spark cannot hold) fail as
    their text does on the WAL path."""
    if values.null_count == len(values):
        return
    low, high = pc.min_max(values).values()
    dates = pa.array([low.value, high.value], values.type)
    days = dates.cast(pa.date32()) if not pa.types.is_date32(values.type) else dates
    first, last = days.cast(pa.int32()).to_pylist()
    if first < _DAY_ONE or last > _DAY_LAST:
        raise PgValueError(
            f"column '{column.name}' ({column.type.declared}) holds a value before year 1 or "
            "after year 9999, which Spark cannot hold; change or exclude those rows"
        )


#: Days from 1970-01-01 to 0001-01-01 and to 9999-12-31.
_DAY_ONE = -719162
_DAY_LAST = 2932896

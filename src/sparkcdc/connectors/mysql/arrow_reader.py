"""Chunk reads straight into Arrow (connectorx) with low/high watermark normalisation.

Why: the classic reader (mysqlclient) builds a Python tuple per row and Arrow arrays from
them; that costs ~0.7 us of client CPU per row against ~0.4 us for connectorx, which
decodes the wire protocol into Arrow in Rust (docs/snapshot-reader.md has the profile).

connectorx has no transaction API, so a read cannot report its own binlog position. The
low/high watermark of Flink CDC's incremental snapshot replaces it: before the SELECT we
open a ``START TRANSACTION WITH CONSISTENT SNAPSHOT`` and take its exact position L (every
transaction at or before L is committed, so the later SELECT sees it), after the SELECT
another one, H (every transaction the SELECT saw is committed before H's snapshot, so it
is at or before H). The rows are therefore the table at some point T in [L, H], and the
log window ``(min(L, P), max(H, P)]`` holds every change between T and the batch's target
P, whatever T is: snapshot/normalize.window_overrides folds it. When the window has no
change of the partition's keys (the usual case) the Arrow columns pass through untouched.

Only tables whose every column connectorx delivers in a type that casts exactly to the
declared Arrow type use this reader (:func:`arrow_unsupported`); values connectorx cannot
decode at all (zero dates, which make it panic) raise :class:`ArrowReadError` before
anything was yielded, and the caller falls back to the classic reader for the partition.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote as url_quote

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog import read_changes
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.connection import connect, with_retries
from sparkcdc.connectors.mysql.discovery import CapturedTable
from sparkcdc.connectors.mysql.keys import chunk_key_order, row_key
from sparkcdc.connectors.mysql.positions import snapshot_position
from sparkcdc.connectors.mysql.types import MAX_DECIMAL_PRECISION, MySqlColumn, arrow_type
from sparkcdc.connectors.mysql.types import value_family as family_of
from sparkcdc.core.position import BinlogPosition
from sparkcdc.core.rows import Row
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.normalize import apply_overrides, window_overrides

log = logging.getLogger(__name__)

#: Value families whose connectorx Arrow type casts exactly to ``arrow_type`` (checked
#: value by value against the classic reader in tests/integration/test_mysql_arrow_reader.py).
#: Not here: BIT (connectorx gives raw bytes), TIME (chrono rejects negative and >24 h
#: values), DECIMAL beyond 28 digits or 10 decimals (rust_decimal; connectorx's
#: decimal128(38, 10)), MySQL 8 binary JSON, spatial types (connectorx panics).
ARROW_FAMILIES = frozenset(
    {
        "int",
        "uint64",
        "decimal",
        "float32",
        "float64",
        "date",
        "datetime",
        "timestamp",
        "year",
        "string",
        "enum",
        "set",
        "binary",
    }
)
#: rust_decimal's 96-bit mantissa, and connectorx's fixed decimal128(38, 10) output.
MAX_ARROW_DECIMAL_PRECISION, MAX_ARROW_DECIMAL_SCALE = 28, 10
#: Character sets whose text connectorx (utf8mb4 connection) returns as the server stores it.
ARROW_CHARSETS = frozenset({None, "utf8mb4", "utf8mb3", "utf8", "latin1", "ascii"})
#: TIMESTAMP text is rendered in the session zone: read it as UTC, like the classic reader.
SESSION_SETUP = ["SET time_zone = '+00:00'"]


class ArrowReadError(RuntimeError):
    """connectorx could not read or convert a partition; nothing has been yielded."""


def column_unsupported(column: MySqlColumn) -> str | None:
    """Why ``column`` cannot take the Arrow path (None: it can)."""
    family = family_of(column)
    if family == "bool" and column.data_type != "bit":
        return None  # TINYINT(1): int8, cast to bool is != 0 like the classic converter
    if family not in ARROW_FAMILIES:
        return f"column '{column.name}' ({column.column_type}) is not read exactly by connectorx"
    if family == "decimal" and (
        (column.precision or 0) > MAX_ARROW_DECIMAL_PRECISION
        or (column.scale or 0) > MAX_ARROW_DECIMAL_SCALE
        or (column.precision or 0) > MAX_DECIMAL_PRECISION
    ):
        return f"column '{column.name}' ({column.column_type}) exceeds connectorx's decimals"
    if family in ("string", "enum", "set") and column.charset not in ARROW_CHARSETS:
        return f"column '{column.name}' has character set {column.charset}"
    return None


def arrow_unsupported(table: CapturedTable, config: MySqlSourceConfig) -> str | None:
    """Why ``table`` cannot use the Arrow reader (None: it can)."""
    if config.tls:
        return "TLS ('jdbc.properties.ssl*') is not passed to connectorx"
    try:
        import connectorx  # noqa: F401
    except ImportError:
        return "connectorx is not installed (pip install 'sparkcdc[mysql]')"
    for column in table.columns:
        reason = column_unsupported(column)
        if reason is not None:
            return reason
    return None


def connectorx_url(config: MySqlSourceConfig) -> str:
    """connectorx's connection URL (user and password percent-encoded)."""
    user = url_quote(config.username, safe="")
    password = url_quote(config.password.reveal(), safe="")
    return f"mysql://{user}:{password}@{config.hostname}:{config.port}"


def partition_queries(cur: Any, table: CapturedTable, chunks: Sequence[Chunk]) -> list[str]:
    """The partition as literal SQL (connectorx takes no parameters). Contiguous chunks, as
    the planner makes them, become one range SELECT: one connection and one consistent
    read instead of one per chunk. Bounds are rendered by :func:`sql_literal`."""
    from sparkcdc.connectors.mysql.snapshot_reader import chunk_query

    columns = ", ".join(_quote(c.name) for c in table.columns)
    contiguous = all(a.hi is not None and a.hi == b.lo for a, b in itertools.pairwise(chunks))
    ranges = [Chunk(chunks[0].lo, chunks[-1].hi)] if contiguous else list(chunks)
    queries = []
    for chunk in ranges:
        sql, args = chunk_query(table, chunk, columns)
        queries.append(sql % tuple(sql_literal(cur.connection, a) for a in args))
    return queries


def sql_literal(conn: Any, value: Any) -> str:
    """``value`` as SQL text for a connectorx query (a Rust string, so UTF-8): bytes as a
    hex literal (binary keys are not text), the rest escaped by mysqlclient."""
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    literal = conn.literal(value)
    return literal.decode("utf-8") if isinstance(literal, bytes) else str(literal)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _consistent_position(conn: Any) -> BinlogPosition:
    """The exact binlog position of a consistent snapshot opened now (a watermark)."""
    with conn.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
    try:
        return snapshot_position(conn)
    finally:
        with conn.cursor() as cur:
            cur.execute("COMMIT")


def _read_arrow(config: MySqlSourceConfig, queries: list[str]) -> pa.Table:
    import connectorx

    try:
        table = connectorx.read_sql(
            connectorx_url(config),
            queries if len(queries) > 1 else queries[0],
            return_type="arrow",
            protocol="binary",
            pre_execution_query=SESSION_SETUP,
        )
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # connectorx panics (zero dates) are BaseExceptions
        raise ArrowReadError(f"connectorx: {str(exc).splitlines()[0][:300]}") from None
    if not isinstance(table, pa.Table):
        raise ArrowReadError(f"connectorx returned {type(table).__name__}, not an Arrow table")
    return table


def _cast(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """connectorx's columns in the declared types; Arrow's safe casts refuse any loss."""
    if table.num_columns != len(schema):
        raise ArrowReadError(f"connectorx returned {table.num_columns} columns")
    try:
        columns = [
            col if col.type == field.type else col.cast(field.type)
            for col, field in zip(table.columns, schema, strict=True)
        ]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise ArrowReadError(f"casting connectorx's columns: {exc}") from None
    return pa.Table.from_arrays(columns, schema=schema)


def read_chunks_arrow(
    config: MySqlSourceConfig,
    table: CapturedTable,
    chunks: Sequence[Chunk],
    target: BinlogPosition,
    server_id: int,
    batch_rows: int,
) -> Iterator[ChunkRows]:
    """The rows of ``chunks`` as of ``target`` in Arrow batches of ``batch_rows`` rows.

    All reading happens before this returns (connectorx materialises the partition,
    bounded by ``rows-per-partition``): an :class:`ArrowReadError` from here means nothing
    was emitted and the classic reader can take over.
    """
    order = chunk_key_order(table, config)
    key_of = row_key(table, config)
    k = table.chunk_key_index
    schema = pa.schema(
        [pa.field(c.name, arrow_type(c), nullable=c.nullable) for c in table.columns]
    )
    conn = connect(config)
    try:
        with conn.cursor() as cur:
            queries = partition_queries(cur, table, chunks)
        low = _consistent_position(conn)
        data = _cast(_read_arrow(config, queries), schema)
        high = _consistent_position(conn)
    finally:
        conn.close()

    def in_partition(row: Row) -> bool:
        return any(order.in_chunk(row[k], c) for c in chunks)

    start, end = min(low, target), max(high, target)
    overrides: dict[Any, Row | None] = {}
    if start < end:

        def window() -> dict[Any, Row | None]:
            changes = (
                c
                for c in read_changes(config, {table.table_id: table}, start, end, server_id)
                if (c.before is not None and in_partition(c.before))
                or (c.after is not None and in_partition(c.after))
            )
            return window_overrides(changes, key_of, target.version)

        overrides = with_retries(config, f"reading the binlog window {start}..{end}", window)
    return _emit(data, overrides, key_of, in_partition, batch_rows)


def _emit(
    data: pa.Table,
    overrides: dict[Any, Row | None],
    key_of: Any,
    in_partition: Any,
    batch_rows: int,
) -> Iterator[ChunkRows]:
    if not overrides:  # nothing changed in the window: the columns go out as read
        for columns in data.combine_chunks().to_batches(max_chunksize=batch_rows):
            if columns.num_rows:
                yield ChunkRows((), columns=columns)
        return
    # rare: some keys changed while the partition was read; patch them as Python rows
    names = data.schema.names
    rows = (tuple(r[n] for n in names) for r in data.to_pylist())
    batch: list[Row] = []
    for row in apply_overrides(rows, overrides, key_of, in_partition):
        batch.append(row)
        if len(batch) >= batch_rows:
            yield ChunkRows(batch)
            batch = []
    if batch:
        yield ChunkRows(batch)

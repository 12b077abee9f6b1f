"""Chunk reads straight into Arrow buffers in C, inside one consistent snapshot.

Why: per snapshot row the Python readers spend 0.5-0.8 us of CPU (a Python object per
value in mysqlclient; per-value allocations in connectorx), more than the server needs to
send it. ``csrc/mysqlarrow.c`` streams the text protocol through libmariadb
(``mysql_use_result``) and parses each value once into its column's Arrow buffer; this
module wraps the buffers zero-copy (``pa.Array.from_buffers``).

The partition is read exactly like the classic reader reads it (snapshot/consistent.py:
one ``START TRANSACTION WITH CONSISTENT SNAPSHOT``, whose binlog position S the server
reports; the log between S and the batch position P folded into per-key overrides), with
memory bounded by one batch, and every column type is read: the text of each type is what
the classic reader parses, so both give the same values (tested value by
value in tests/integration/test_mysql_native_reader.py).
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
from collections.abc import Iterator, Sequence
from decimal import Decimal
from enum import IntEnum
from types import TracebackType
from typing import Any

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import open_with_retries
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.secure import key_file, tls_properties
from sparkcdc.connectors.mysql.server.types import MySqlColumn, arrow_type, value_family
from sparkcdc.connectors.mysql.snapshot.chunk_query import chunk_query
from sparkcdc.connectors.mysql.snapshot.consistent import (
    consistent_snapshot,
    crossed_change,
    partition_keys,
)
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.window import apply_window

log = logging.getLogger(__name__)


class Kind(IntEnum):
    """Column kinds of csrc/mysqlarrow.c (keep in sync): how a value's text is parsed."""

    I8 = 1
    I16 = 2
    I32 = 3
    I64 = 4
    BOOL_INT = 5
    BOOL_BIT = 6
    DECIMAL = 7
    F32 = 8
    F64 = 9
    DATE = 10
    DATETIME = 11
    UTF8 = 12
    BINARY = 13


_INT_KINDS = {8: Kind.I8, 16: Kind.I16, 32: Kind.I32, 64: Kind.I64}
_FAMILY_KINDS = {
    "uint64": Kind.DECIMAL,  # decimal128(20, 0) from its text
    "decimal": Kind.DECIMAL,
    "decimal_text": Kind.UTF8,  # DECIMAL(p > 38): the server's plain text is the value
    "float32": Kind.F32,  # read widened to DOUBLE: exact (snapshot_select_expression)
    "float64": Kind.F64,
    "bits": Kind.BINARY,  # BIT(n): the text protocol sends its bytes
    "date": Kind.DATE,
    "datetime": Kind.DATETIME,
    "timestamp": Kind.DATETIME,  # the session runs in UTC
    "time": Kind.UTF8,  # the server's text is the canonical value
    "year": Kind.I32,
    "string": Kind.UTF8,  # utf8mb4 session: the server converts every character set
    "json": Kind.UTF8,
    "enum": Kind.UTF8,
    "set": Kind.UTF8,
    "binary": Kind.BINARY,
    "geometry": Kind.BINARY,
}


def column_kind(column: MySqlColumn) -> Kind:
    """The C parser for ``column``'s text (every family has one)."""
    family = value_family(column)
    if family == "int":
        return _INT_KINDS[arrow_type(column).bit_width]
    if family == "bool":
        return Kind.BOOL_BIT if column.data_type == "bit" else Kind.BOOL_INT
    return _FAMILY_KINDS[family]


def native_unsupported(config: MySqlSourceConfig) -> str | None:
    """Why the native reader cannot be used (None: it can). It reads every column type."""
    try:
        from sparkcdc.connectors.mysql.snapshot import _mysqlarrow  # noqa: F401
    except ImportError as exc:  # a broken build: the Python readers still work
        return f"its C extension is not built ({exc}); reinstall with pip install -e ."
    return None


class NativeConnection:
    """A libmariadb session (``_mysqlarrow.Connection``) with the small cursor interface
    that positions.py and connection.query use for control statements."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def cursor(self) -> _Cursor:
        return _Cursor(self)

    def literal(self, value: Any) -> str:
        """``value`` as a SQL literal (chunk bounds, positions)."""
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "1" if value else "0"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, Decimal):
            return format(value, "f")
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, bytes | bytearray):
            return f"X'{bytes(value).hex()}'"
        if isinstance(value, dt.datetime):
            return f"'{value.replace(tzinfo=None).isoformat(sep=' ')}'"
        if isinstance(value, dt.date):
            return f"'{value.isoformat()}'"
        return "'" + str(self.raw.escape(str(value))) + "'"

    def execute(self, sql: str) -> None:
        self.raw.query(sql)

    def close(self) -> None:
        self.raw.close()


class _Cursor:
    def __init__(self, conn: NativeConnection) -> None:
        self.conn = conn
        self.rows: list[tuple[Any, ...]] = []
        self.description: list[tuple[str]] = []

    def __enter__(self) -> _Cursor:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.rows = []

    def execute(self, sql: str, args: Sequence[Any] | None = None) -> None:
        if args:
            sql = sql % tuple(self.conn.literal(a) for a in args)
        names, self.rows = self.conn.raw.query(sql)
        self.description = [(n,) for n in names]

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


#: ``jdbc.properties.sslMode`` -> the C connection's TLS level: 0 clear text, 1 TLS
#: required, 2 TLS verifying the server's certificate *and* name (libmariadb checks both, as
#: it does for mysqlclient's VERIFY_CA). ``preferred`` is required, as for binlog reads:
#: data is never read in clear text when TLS was asked for.
TLS_LEVELS = {"disabled": 0, "preferred": 1, "required": 1, "verify_ca": 2, "verify_identity": 2}


def tls_arguments(config: MySqlSourceConfig) -> dict[str, Any]:
    """The ``jdbc.properties.*`` options as ``_mysqlarrow.Connection`` arguments: TLS (a
    given CA verifies) and the RSA key policy (server/secure.py)."""
    tls = tls_properties(config)
    public_key = key_file(config)
    arguments: dict[str, Any] = {} if public_key is None else {"server_public_key": public_key}
    if not tls:
        return arguments
    return {
        **arguments,
        "tls": TLS_LEVELS[tls["sslMode"]],
        "ssl_ca": tls.get("sslCa"),
        "ssl_cert": tls.get("sslCert"),
        "ssl_key": tls.get("sslKey"),
    }


def connect_native(config: MySqlSourceConfig) -> NativeConnection:
    """A libmariadb session in UTC, retried and with errors scrubbed like ``connect``."""
    from sparkcdc.connectors.mysql.snapshot import _mysqlarrow

    def attempt() -> NativeConnection:
        raw = _mysqlarrow.Connection(
            config.hostname,
            config.port,
            config.username,
            config.password.reveal(),
            connect_timeout=max(1, int(config.connect_timeout)),
            read_timeout=max(1, int(config.connect_timeout)),  # a stall fails, is retried
            **tls_arguments(config),
        )
        raw.query("SET time_zone = '+00:00'")
        return NativeConnection(raw)

    return open_with_retries(config, attempt, _mysqlarrow.Error)


def read_chunks_native(
    config: MySqlSourceConfig,
    table: CapturedTable,
    chunks: Sequence[Chunk],
    target: BinlogPosition,
    server_id: int,
    batch_rows: int,
) -> Iterator[ChunkRows]:
    """The rows of ``chunks`` as of ``target``, in Arrow batches of up to ``batch_rows``.

    Contiguous chunks (as the planner makes them) are one range SELECT. When the log
    window between the snapshot and ``target`` touches none of the partition's keys (the
    usual case) the C-built columns go to Spark untouched; otherwise the rows are patched
    as Python values, as the classic reader does.
    """
    keys = partition_keys(config, table, chunks)  # before the transaction
    kinds = tuple(int(column_kind(c)) for c in table.columns)
    scales = tuple((c.scale or 0) if value_family(c) == "decimal" else 0 for c in table.columns)
    types = [arrow_type(c) for c in table.columns]
    schema = pa.schema(
        [pa.field(c.name, t, c.nullable) for c, t in zip(table.columns, types, strict=True)]
    )

    contiguous = all(a.hi is not None and a.hi == b.lo for a, b in itertools.pairwise(chunks))
    ranges = [Chunk(chunks[0].lo, chunks[-1].hi)] if contiguous else list(chunks)
    conn = connect_native(config)

    def batches() -> Iterator[pa.RecordBatch]:
        for chunk in ranges:
            sql, args = chunk_query(table, chunk)
            sql = sql % tuple(conn.literal(a) for a in args)
            for rows, buffers in conn.raw.stream(sql, kinds, scales, batch_rows):
                arrays = [_array(t, rows, b) for t, b in zip(types, buffers, strict=True)]
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)

    try:
        with consistent_snapshot(conn, config, table, keys, target, server_id) as overrides:
            if not overrides:
                yield from (ChunkRows((), columns=b) for b in batches())
            else:
                rows = (tuple(r[n] for n in schema.names) for b in batches() for r in b.to_pylist())
                patched = apply_window(
                    rows, overrides, keys.key_of, keys.in_partition, str(table.table_id)
                )
                while batch := list(itertools.islice(patched, batch_rows)):
                    yield ChunkRows(batch)
    except Exception as exc:
        crossed = crossed_change(exc)
        if crossed is None:
            raise
        raise crossed from exc
    finally:
        conn.close()


def _array(type_: pa.DataType, rows: int, buffers: tuple[Any, Any, Any]) -> pa.Array:
    validity, values, offsets = buffers
    mask = None if validity is None else pa.py_buffer(validity)
    if offsets is None:
        return pa.Array.from_buffers(type_, rows, [mask, pa.py_buffer(values)])
    return pa.Array.from_buffers(type_, rows, [mask, pa.py_buffer(offsets), pa.py_buffer(values)])

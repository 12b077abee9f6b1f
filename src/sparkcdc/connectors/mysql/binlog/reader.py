"""Reading row changes from the binlog between two positions.

python-mysql-replication handles the protocol; we drive it with file/position (its
``is_mariadb=True`` mode ignores positions, see docs/stack-notes.md) and never rely on its
automatic reconnects: a failed range read raises and the caller retries the whole range,
which is idempotent because ranges are bounded.

Rows are decoded by the compiled decoder (``rowdecode``, docs/binlog-decoder.md) from the
event's raw bytes; the library's own per-column Python decoding (``event.rows`` +
:class:`RowDecoder`) is the reference path, used for table maps the compiled plan does not
cover and selectable with ``decoder="reference"`` for tests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from typing import Any, Literal

from sparkcdc.connectors.mysql.binlog.ddl_columns import changes_columns
from sparkcdc.connectors.mysql.binlog.ddl_guard import CONSEQUENCES, tables_removed
from sparkcdc.connectors.mysql.binlog.mysql_json import JsonPrinting
from sparkcdc.connectors.mysql.binlog.position import POS_BITS, BinlogPosition, file_index
from sparkcdc.connectors.mysql.binlog.rowdecode import (
    FastRowDecoder,
    WireColumn,
    refuse_images_without_columns,
)
from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import (
    KIND_CODES,
    ColumnSink,
    ColumnSinks,
)
from sparkcdc.connectors.mysql.binlog.table_drift import table_map_drift
from sparkcdc.connectors.mysql.binlog.table_names import name_columns
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import (
    replication_connect,
    replication_settings,
    retries,
)
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import binlog_converter, restore_empty_sets
from sparkcdc.core.errors import SchemaError, lost_log
from sparkcdc.core.rows import BlockKind, ChangeBlock, Row, RowChange
from sparkcdc.core.table import TableId

log = logging.getLogger(__name__)


class _RowMetadataAdvice(logging.Filter):
    """python-mysql-replication warns at every connection to a server whose
    ``binlog_row_metadata`` is not FULL (and on MySQL 5.7); its rows are named here by the
    schema history (table_names.py), so the advice is noise in every batch's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage().upper()
        return "BINLOG_ROW_METADATA" not in message and "MYSQL-REPLICATION VERSION" not in message


logging.getLogger("pymysqlreplication").addFilter(_RowMetadataAdvice())

#: Server error for a dump request whose file is gone (ER_MASTER_FATAL_ERROR_READING_BINLOG).
ER_BINLOG_READ = 1236

_UNSEEN: Any = object()

#: Which row decoder :func:`read_changes` uses: the compiled one (falling back per table map
#: to the reference where it does not apply) or only the library's Python decoding.
DecoderChoice = Literal["fast", "reference"]

#: Bytes before a rows event's post-header in the library's packet: pymysql's OK byte and
#: the 19-byte event header.
_EVENT_HEADER = 20


class RowDecoder:
    """Turns one table's row-event dicts into tuples in the captured column order."""

    def __init__(
        self,
        table: CapturedTable,
        config: MySqlSourceConfig,
        json_printing: JsonPrinting = "mysql8",
    ) -> None:
        self.table = table
        self.names = table.column_names
        self.converters: list[Callable[[Any], Any] | None] = [
            binlog_converter(c, config.server_time_zone, json_printing) for c in table.columns
        ]

    def __call__(self, values: dict[str, Any], none_sources: Mapping[str, str] | None) -> Row:
        if none_sources:  # the library reports an empty SET as None; tell it from NULL
            values = restore_empty_sets(values, none_sources)
        try:
            raw = [values[n] for n in self.names]
        except KeyError as exc:
            raise SchemaError(
                f"a binlog row of {self.table.table_id} has no column {exc}; its columns are "
                f"{sorted(values)}: its table map was not named from the schema history "
                "(a bug: report it with the binlog position)"
            ) from None
        return tuple(
            v if conv is None or v is None else conv(v)
            for v, conv in zip(raw, self.converters, strict=True)
        )


class FastPath:
    """Compiled decoders per table map (the library's ``Table`` object of a table id), built
    on first use; ``None`` for table maps the compiled plan does not cover."""

    def __init__(self, tables: Mapping[TableId, CapturedTable]) -> None:
        self.tables = tables
        self._decoders: dict[int, tuple[Any, FastRowDecoder | None]] = {}

    def decoder(self, event: Any, table_id: TableId, mapped: Any) -> FastRowDecoder | None:
        """The compiled decoder of ``event``'s table map ``mapped`` (the caller looked it up
        already: one dict lookup per event less on the hot path)."""
        cached = self._decoders.get(event.table_id)
        if cached is not None and cached[0] is mapped:
            return cached[1]
        fast: FastRowDecoder | None = None
        if mapped is not None:
            wire = [WireColumn.from_library(c) for c in mapped.columns]
            fast = FastRowDecoder(wire, self.tables[table_id])
            if not fast.covered:
                log.info(
                    "binlog rows of %s use the reference decoder: %s", table_id, fast.plan.reason
                )
                fast = None
        self._decoders[event.table_id] = (mapped, fast)
        return fast

    @staticmethod
    def _body(event: Any) -> tuple[bytes, int, int] | None:
        """The rows event's row images as (packet bytes, start, end), or None when the
        library's packet is not positioned where expected (then the reference path reads)."""
        wrapper = event.packet
        packet = wrapper.packet
        start = packet._position
        if start != _EVENT_HEADER + wrapper.read_bytes or not event.complete:
            return None
        return packet.get_all_data(), start, _EVENT_HEADER + event.event_size

    def rows(self, event: Any, fast: FastRowDecoder, update: bool) -> list[Row] | None:
        """The event's row images (alternating before/after for updates), or None (see
        :meth:`_body`)."""
        body = self._body(event)
        if body is None:
            return None
        present2 = event.columns_present_bitmap2 if update else None
        return fast.decode(*body, event.columns_present_bitmap, present2)

    def into(
        self,
        event: Any,
        fast: FastRowDecoder,
        kind: BlockKind,
        sink: ColumnSink,
        version: int,
        timestamp: int,
    ) -> int | None:
        """:meth:`rows` written into ``sink``'s Arrow buffers (with the block's first
        version and commit time for the change columns); the number of images."""
        body = self._body(event)
        if body is None:
            return None
        present2 = event.columns_present_bitmap2 if kind == "update" else None
        return fast.decode_into(
            sink,
            *body,
            event.columns_present_bitmap,
            present2,
            version,
            timestamp,
            KIND_CODES[kind],
        )


def check_table_map(mapped: Any, table: CapturedTable, file: str, event: Any) -> None:
    """Stop at a table map that no longer describes ``table`` (table_drift.py); name its
    columns from ``table``'s, position by position, where the event did not
    (table_names.py: rows are decoded by position, named by the schema history)."""
    if mapped is None:
        return
    drift = table_map_drift([WireColumn.from_library(c) for c in mapped.columns], table)
    if drift is None:
        name_columns(mapped.columns, table.columns)
    else:
        at = f"{file}:{event.packet.log_pos - event.packet.event_size}"
        raise SchemaError(
            f"the columns of {table.table_id} changed while captured ({drift}; binlog "
            f"{at}) with no statement in the binlog that says so: it was made with the "
            "binlog off (sql_log_bin=0), or on a server whose changes this one does not "
            "log, or a statement was read wrongly into the schema history; where the "
            "change falls in the log is unknown and the rows around it "
            "cannot be decoded for sure. Start the stream again from a new checkpoint (a "
            "new snapshot)"
        )


def check_statement(
    event: Any, captured: Mapping[tuple[str, str], CapturedTable], file: str
) -> None:
    """Stop at a statement that removes or renames a captured table (ddl_guard.py) or
    changes its columns (ddl_columns.py): a read's range is planned to hold none, its rows
    are decoded by position with the columns as of its start, and a change that keeps
    every type at every position (a rename) would leave no trace in the table maps that
    come after it. (A chunk's log window that crosses a change then reads nothing:
    ChunkCrossedChange.)"""
    default = event.schema.decode("utf-8", "replace") if event.schema else ""
    changed = changes_columns(event.query, default, captured)
    if changed is not None:
        at = f"{file}:{event.packet.log_pos - event.packet.event_size}"
        raise SchemaError(
            f"the columns of {changed.table_id} change inside a range read with its columns "
            f"as of the range's start (binlog {at}: {event.query.strip()[:200]}). The "
            "planning scan places every such change at a batch boundary, so this one was "
            "missed (report it with the position); the read stops rather than decode the "
            "rows after it with the columns before it"
        )
    removed = tables_removed(event.query, default, captured)
    if removed is not None:
        kind, names = removed
        at = f"{file}:{event.packet.log_pos - event.packet.event_size}"
        tables = ", ".join(f"{db}.{table}" for db, table in names)
        raise SchemaError(
            f"{kind} of {tables} (binlog {at}: {event.query.strip()[:200]}): "
            f"{CONSEQUENCES[kind]}, and such changes are not followed yet. Start the stream "
            "again from a new checkpoint (a new snapshot)"
        )


def read_changes(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    server_id: int,
    decoder: DecoderChoice = "fast",
) -> Iterator[RowChange]:
    """Row changes of ``tables`` in ``(start, end]``, in log order.

    ``decoder="reference"`` decodes every row with the library (the tests' reference).
    """
    for block in read_change_blocks(config, tables, start, end, server_id, decoder):
        yield from block.changes()


class _TableRoute:
    """What a range read needs per captured table to turn its rows events into blocks.

    Built on the table's first rows event (its JSON printing is known once connected). Its
    :meth:`block` is the per-event decode; the read loop passes it the table map it looked
    up already, so the compiled decoder's cache does not look it up again and the hot path
    makes as many calls per event as a single loop would. ``__slots__`` keeps its attribute
    reads about as cheap as locals."""

    __slots__ = ("fast_path", "kinds", "row_decoder", "sink_types", "sinks", "table_id")

    def __init__(
        self,
        table_id: TableId,
        row_decoder: RowDecoder,
        fast_path: FastPath | None,
        sinks: ColumnSinks | None,
        kinds: Mapping[type, BlockKind],
    ) -> None:
        self.table_id = table_id  # the captured TableId object itself: lookups by identity
        self.row_decoder = row_decoder
        self.fast_path = fast_path
        self.sinks = sinks
        self.sink_types: list[Any] | None = sinks.types.get(table_id) if sinks is not None else None
        self.kinds = kinds

    def block(self, event: Any, mapped: Any, file: str, gtid: str) -> ChangeBlock:
        """``event``'s rows as one block: into the table's Arrow buffers when the compiled
        decoder covers its table map ``mapped`` and a sink takes them, else as row tuples
        (compiled, or the library's reference decoding where the plan does not apply)."""
        table_id, fast_path, sinks = self.table_id, self.fast_path, self.sinks
        event_start = event.packet.log_pos - event.packet.event_size
        base = (file_index(file) << POS_BITS) | event_start
        timestamp = int(event.timestamp)
        kind = self.kinds.get(type(event))
        exact = kind is not None  # a subclass (e.g. partial JSON updates) is not compiled
        if kind is None:
            kind = self._subclass_kind(event)
        images: list[Row] | None = None
        if fast_path is not None and exact:
            fast = fast_path.decoder(event, table_id, mapped)
            if fast is not None and sinks is not None and self.sink_types is not None:
                sink = sinks.sink_for(table_id, fast.arrow_layout(self.sink_types))
                sunk = (
                    None
                    if sink is None
                    else fast_path.into(event, fast, kind, sink, base, timestamp)
                )
                if sunk is not None:
                    return ChangeBlock(
                        table_id, kind, [], base, timestamp, file, event_start, gtid, sunk
                    )
            if fast is not None:
                images = fast_path.rows(event, fast, kind == "update")
        if images is None:
            images = self._reference_images(event, kind)
        return ChangeBlock(table_id, kind, images, base, timestamp, file, event_start, gtid)

    def _reference_images(self, event: Any, kind: BlockKind) -> list[Row]:
        """The library's decoding of ``event``'s rows (before/after alternating for an
        update), for table maps the compiled plan does not cover."""
        refuse_images_without_columns(
            getattr(event, "columns_present_bitmap", None),
            getattr(event, "columns_present_bitmap2", None),
            event.event_size - event.packet.read_bytes,
        )
        decode = self.row_decoder
        if kind != "update":
            return [decode(row["values"], row.get("none_sources")) for row in event.rows]
        images: list[Row] = []
        for row in event.rows:
            images.append(decode(row["before_values"], row.get("before_none_sources")))
            images.append(decode(row["after_values"], row.get("after_none_sources")))
        return images

    def _subclass_kind(self, event: Any) -> BlockKind:
        """The kind of a rows event whose class is a subclass of one of the three."""
        for event_type, kind in self.kinds.items():
            if isinstance(event, event_type):
                return kind
        return "update"


def _row_event_kinds() -> dict[type, BlockKind]:
    """The library's rows event classes and the block kind each makes (imported here: the
    module is imported where no binlog is read)."""
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    return {WriteRowsEvent: "insert", UpdateRowsEvent: "update", DeleteRowsEvent: "delete"}


def _open_stream(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    server_id: int,
    kinds: Mapping[type, BlockKind],
) -> Any:
    """The library's binlog stream from ``start``, for ``tables``' rows events and the
    events that bound or change them; not blocking (the range's end is in the log).

    Its reader forgets the table maps at a new file: a restart renumbers tables and always
    starts a new file, where an id of a captured table may name another table, whose map
    the library skips (``only_tables``) and would leave the old one in place for its rows.
    (A reconnect resumes in the same file, mid-transaction: maps stay.)"""
    from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, RotateEvent

    from sparkcdc.connectors.mysql.binlog import mysql_json
    from sparkcdc.connectors.mysql.binlog.counted_stream import CountedBinLogStream

    mysql_json.install()  # JSON columns as the server's text (MySQL's binary JSON)
    return CountedBinLogStream(
        connection_settings=replication_settings(config),
        pymysql_wrapper=replication_connect(config),
        server_id=server_id,
        resume_stream=True,
        blocking=False,
        log_file=start.file,
        log_pos=start.pos,
        is_mariadb=False,
        only_events=[
            *kinds,
            MariadbGtidEvent,
            GtidEvent,  # MySQL's: uuid:N
            RotateEvent,
            QueryEvent,  # DDL (MariaDB writes no BEGIN query: a GTID event starts a trx)
        ],
        only_schemas=sorted({t.database for t in tables}),
        only_tables=sorted({t.table for t in tables}),
        freeze_schema=True,
    )


def _route(
    names: tuple[str, str],
    captured: Mapping[tuple[str, str], TableId],
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    stream: Any,
    route_parts: tuple[FastPath | None, ColumnSinks | None, Mapping[type, BlockKind]],
) -> _TableRoute | None:
    """The route of a (schema, table) seen for the first time in a range read; None when
    it is not captured."""
    found = captured.get(names)
    if found is None:
        return None
    # JSON printed as this server prints it (known once connected)
    row_decoder = RowDecoder(tables[found], config, stream.server_flavor.json_printing)
    fast_path, sinks, kinds = route_parts
    return _TableRoute(found, row_decoder, fast_path, sinks, kinds)


def read_change_blocks(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    server_id: int,
    decoder: DecoderChoice = "fast",
    sinks: ColumnSinks | None = None,
    skip: int = 0,
) -> Iterator[ChangeBlock]:
    """:func:`read_changes` one rows event at a time: the decoder's row list as it is, so
    the executor builds Arrow columns without an object per row.

    With ``sinks``, events of its tables that the compiled decoder covers go straight into
    the table's Arrow column buffers (blocks with ``sunk`` set, no tuples). The first
    ``skip`` blocks are not decoded nor yielded (a retry resuming after what it delivered).
    """
    if not tables or end <= start:
        return
    from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, RotateEvent

    kinds = _row_event_kinds()
    stream = _open_stream(config, tables, start, server_id, kinds)
    parts = (FastPath(tables) if decoder == "fast" else None, sinks, kinds)
    by_names = {(t.database, t.table): t for t in tables}
    by_tables = {names: tables[table_id] for names, table_id in by_names.items()}
    routes: dict[tuple[str, str], _TableRoute | None] = {}  # None: not captured
    checked: dict[int, Any] = {}  # table id -> the table map object found to match
    end_key, gtid, current_file, index = end.key, start.gtid, start.file, -1
    with _lost_log_named(start), closing(stream):
        for event in stream:
            if isinstance(event, RotateEvent):
                if event.next_binlog != current_file:  # a new file: forget the maps
                    stream.table_map.clear()
                    current_file = event.next_binlog
                continue
            event_end, file = event.packet.log_pos, stream.log_file
            if event_end == 0:
                continue  # artificial events the server sends at connect time
            if (file_index(file), event_end) > end_key:
                break
            if isinstance(event, (MariadbGtidEvent, GtidEvent)):
                gtid = event.gtid
                continue
            if isinstance(event, QueryEvent):
                check_statement(event, by_tables, file)
                continue
            names = (event.schema, event.table)
            route = routes.get(names, _UNSEEN)
            if route is _UNSEEN:
                route = routes[names] = _route(names, by_names, config, tables, stream, parts)
            if route is None:
                continue
            mapped = event.table_map.get(event.table_id)
            if checked.get(event.table_id) is not mapped:
                check_table_map(mapped, tables[route.table_id], file, event)
                checked[event.table_id] = mapped
            index += 1
            if index >= skip:
                yield route.block(event, mapped, file, gtid)


@contextmanager
def _lost_log_named(start: BinlogPosition) -> Iterator[None]:
    """A dump request the server refuses for its file (purged, or a wrong position) raised
    as the lost log it is, so the pipeline's recovery (a new snapshot) can act on it."""
    from pymysql.err import OperationalError

    try:
        yield
    except OperationalError as exc:
        if exc.args and exc.args[0] == ER_BINLOG_READ:
            raise lost_log(
                f"cannot read the binlog from {start}: {exc.args[-1]}. The binlog was purged "
                "or the position is invalid"
            ) from None
        raise


def read_changes_with_retries(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    server_id: int,
    decoder: DecoderChoice = "fast",
) -> Iterator[RowChange]:
    """:func:`read_changes`, surviving lost connections (see :func:`read_blocks_with_retries`)."""
    for block in read_blocks_with_retries(config, tables, start, end, server_id, decoder):
        yield from block.changes()


def read_blocks_with_retries(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    server_id: int,
    decoder: DecoderChoice = "fast",
    sinks: ColumnSinks | None = None,
) -> Iterator[ChangeBlock]:
    """:func:`read_change_blocks`, surviving lost connections: a bounded range reads the
    same events in the same order every time, so a retry re-reads it and skips the blocks
    (rows events) already delivered, without decoding them (nothing reaches ``sinks``
    twice). Gives up after ``connect.max-retries``; never skips a change."""
    from pymysql.err import OperationalError

    delivered = 0
    policy, attempt = retries(config), 0
    while True:
        try:
            for block in read_change_blocks(
                config, tables, start, end, server_id, decoder, sinks, skip=delivered
            ):
                delivered += 1
                yield block
            return
        except OperationalError as exc:
            what = f"binlog read {start}..{end} (after {delivered} events)"
            attempt = policy.pause(attempt, what, exc, final=True)

"""Reading row changes from the binlog between two positions.

python-mysql-replication handles the protocol; we drive it with file/position (its
``is_mariadb=True`` mode ignores positions, see STACK-NOTES) and never rely on its
automatic reconnects: a failed range read raises and the caller retries the whole range,
which is idempotent because ranges are bounded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.connection import (
    RETRYABLE_CODES,
    backoff,
    replication_settings,
)
from sparkcdc.connectors.mysql.discovery import CapturedTable
from sparkcdc.connectors.mysql.types import binlog_converter, restore_empty_sets
from sparkcdc.core.errors import PositionLostError, SchemaError
from sparkcdc.core.position import POS_BITS, BinlogPosition, file_index
from sparkcdc.core.rows import Row, RowChange
from sparkcdc.core.table import TableId

log = logging.getLogger(__name__)

#: Server error for a dump request whose file is gone (ER_MASTER_FATAL_ERROR_READING_BINLOG).
ER_BINLOG_READ = 1236


class RowDecoder:
    """Turns one table's row-event dicts into tuples in the captured column order."""

    def __init__(self, table: CapturedTable, config: MySqlSourceConfig) -> None:
        self.table = table
        self.names = table.column_names
        self.converters: list[Callable[[Any], Any] | None] = [
            binlog_converter(c, config.server_time_zone) for c in table.columns
        ]

    def __call__(self, values: dict[str, Any], none_sources: Mapping[str, str] | None) -> Row:
        if none_sources:  # the library reports an empty SET as None; tell it from NULL
            values = restore_empty_sets(values, none_sources)
        try:
            raw = [values[n] for n in self.names]
        except KeyError as exc:
            raise SchemaError(
                f"a binlog row of {self.table.table_id} has no column {exc}; its columns are "
                f"{sorted(values)}. The table's schema changed while captured (schema changes "
                "are not supported yet) or binlog_row_metadata was not FULL when it was written"
            ) from None
        return tuple(
            v if conv is None or v is None else conv(v)
            for v, conv in zip(raw, self.converters, strict=True)
        )


def read_changes(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    server_id: int,
) -> Iterator[RowChange]:
    """Row changes of ``tables`` in ``(start, end]``, in log order."""
    if not tables or end <= start:
        return
    from pymysql.err import OperationalError
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import MariadbGtidEvent, RotateEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    decoders = {tid: RowDecoder(t, config) for tid, t in tables.items()}
    stream = BinLogStreamReader(
        connection_settings=replication_settings(config),
        server_id=server_id,
        resume_stream=True,
        blocking=False,
        log_file=start.file,
        log_pos=start.pos,
        is_mariadb=False,
        only_events=[
            WriteRowsEvent,
            UpdateRowsEvent,
            DeleteRowsEvent,
            MariadbGtidEvent,
            RotateEvent,
        ],
        only_schemas=sorted({t.database for t in tables}),
        only_tables=sorted({t.table for t in tables}),
        freeze_schema=True,
    )
    end_key = end.key
    gtid = start.gtid
    try:
        for event in stream:
            if isinstance(event, RotateEvent):
                continue
            event_end = event.packet.log_pos
            file = stream.log_file
            if event_end == 0:
                continue  # artificial events the server sends at connect time
            if (file_index(file), event_end) > end_key:
                break
            if isinstance(event, MariadbGtidEvent):
                gtid = event.gtid
                continue
            table_id = TableId(event.schema, event.table)
            decoder = decoders.get(table_id)
            if decoder is None:
                continue
            event_start = event_end - event.packet.event_size
            base = (file_index(file) << POS_BITS) | event_start
            timestamp = int(event.timestamp)
            for index, row in enumerate(event.rows):
                if isinstance(event, WriteRowsEvent):
                    before, after = None, decoder(row["values"], row.get("none_sources"))
                elif isinstance(event, DeleteRowsEvent):
                    before, after = decoder(row["values"], row.get("none_sources")), None
                else:
                    before = decoder(row["before_values"], row.get("before_none_sources"))
                    after = decoder(row["after_values"], row.get("after_none_sources"))
                yield RowChange(
                    table_id, before, after, base + index, timestamp, file, event_start, gtid
                )
    except OperationalError as exc:
        if exc.args and exc.args[0] == ER_BINLOG_READ:
            raise PositionLostError(
                f"cannot read the binlog from {start}: {exc.args[-1]}. The binlog was purged "
                "or the position is invalid; restart with a new checkpoint"
            ) from None
        raise
    finally:
        stream.close()


def read_changes_with_retries(
    config: MySqlSourceConfig,
    tables: Mapping[TableId, CapturedTable],
    start: BinlogPosition,
    end: BinlogPosition,
    server_id: int,
) -> Iterator[RowChange]:
    """:func:`read_changes`, surviving lost connections: a bounded range reads the same
    changes in the same order every time, so a retry re-reads it and skips the changes
    already delivered. Gives up after ``connect.max-retries``; never skips a change."""
    from pymysql.err import OperationalError

    delivered = 0
    attempt = 0
    while True:
        try:
            for index, change in enumerate(read_changes(config, tables, start, end, server_id)):
                if index < delivered:
                    continue
                delivered += 1
                yield change
            return
        except OperationalError as exc:
            code = exc.args[0] if exc.args else None
            if code not in RETRYABLE_CODES or attempt >= config.connect_max_retries:
                raise
            delay = backoff(attempt)
            attempt += 1
            log.warning(
                "binlog read %s..%s lost its connection (%s) after %d changes; "
                "retry %d/%d in %.1fs",
                start,
                end,
                exc.args[0],
                delivered,
                attempt,
                config.connect_max_retries,
                delay,
            )
            time.sleep(delay)

"""The MySQL/MariaDB dialect of the snapshot framework (snapshot/dialect.py).

Positions are binlog file + offset (+ GTID state); chunks are read inside ``START
TRANSACTION WITH CONSISTENT SNAPSHOT``, whose exact binlog position MariaDB reports; the log
is read as a replication client, one server id per concurrent reader.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from sparkcdc.connectors.mysql.binlog.failover import position_elsewhere, server_identity
from sparkcdc.connectors.mysql.binlog.limit import (
    MAX_LOG_PIECES,
    Boundary,
    advance_log,
    range_bytes,
    split_at_boundaries,
    split_log,
)
from sparkcdc.connectors.mysql.binlog.locate import (
    first_transaction_time,
    position_for_gtid,
    position_for_timestamp,
)
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import (
    current_position,
    earliest_position,
    ensure_available,
    gtid_at,
)
from sparkcdc.connectors.mysql.binlog.reader import read_blocks_with_retries
from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import ColumnSinks
from sparkcdc.connectors.mysql.binlog.schema_scan import first_schema_change
from sparkcdc.connectors.mysql.binlog.start_columns import check_columns_since
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import connect, query, retries
from sparkcdc.connectors.mysql.server.discovery import (
    CapturedTable,
    describe_table,
    discover_tables,
)
from sparkcdc.connectors.mysql.server.flavor import flavor_of
from sparkcdc.connectors.mysql.server.types import (
    MySqlColumn,
    arrow_type,
    reads_tinyint1_as_boolean,
)
from sparkcdc.connectors.mysql.server.validation import validate_server
from sparkcdc.connectors.mysql.snapshot.chunk_ends import key_stats, next_chunk_end
from sparkcdc.connectors.mysql.snapshot.keys import chunk_key_order
from sparkcdc.connectors.mysql.snapshot.reader import read_chunks
from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.core.rows import ChangeBlock
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import CHANGE_TYPE_VALUES, ChunkRows
from sparkcdc.snapshot.abilities import (
    DetectsLostLog,
    FollowsTableDrops,
    LimitedReaders,
    MeasuresLog,
    NamesServers,
    SnapshotsAtPosition,
    TellsChangeTimes,
)
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats
from sparkcdc.snapshot.dialect import Dialect
from sparkcdc.snapshot.keyless import KeepsGrownOneChunk, KeylessHelp
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.retry import Retries, lost_mid_read
from sparkcdc.snapshot.schema_change import SchemaChange

log = logging.getLogger(__name__)

_COLUMN_FIELDS = [f.name for f in dataclasses.fields(MySqlColumn)]


class MySqlDialect(
    Dialect[BinlogPosition, CapturedTable],
    KeepsGrownOneChunk[CapturedTable],
    FollowsTableDrops[BinlogPosition, CapturedTable],
    DetectsLostLog[BinlogPosition],
    NamesServers[BinlogPosition],
    MeasuresLog[BinlogPosition],
    TellsChangeTimes[BinlogPosition],
    LimitedReaders,
    SnapshotsAtPosition[BinlogPosition],
):
    format_name = "mysql-cdc"

    def __init__(self, config: MySqlSourceConfig) -> None:
        self.config = config
        self._conn: Any = None
        #: Tables discovery left out for having no primary key (``snapshot/keyless.py``),
        #: and of them those too large to read as one chunk or met under a watermark,
        #: described (``still_captured``: a checkpoint reading one as one chunk keeps it).
        self._keyless: dict[TableId, KeylessHelp] = {}
        self.over_bound: dict[TableId, CapturedTable] = {}
        #: The range the last schema-change scan walked and its transaction boundaries.
        self._walked: tuple[tuple[int, int], tuple[int, int], list[Boundary]] | None = None
        #: The connection the server identity was read on, and the identity.
        self._origin: tuple[Any, str] | None = None
        #: Positions of other servers carried to this one (failover), by where they came from.
        self._carried: dict[tuple[str, str, str, int], BinlogPosition] = {}

    @property
    def settings(self) -> MySqlSourceConfig:
        return self.config

    @property
    def flavor(self) -> str:
        """``mariadb`` or ``mysql``: the family of the server connected to now."""
        return flavor_of(self.conn).family

    @property
    def retries(self) -> Retries:
        return retries(self.config)

    @property
    def _scan_id(self) -> int:
        """Server id for the driver's own short binlog scans (the last of the range)."""
        return self.config.server_ids[1]

    @property
    def conn(self) -> Any:
        """The driver's connection, reconnected if it dropped since the last batch."""
        if self._conn is not None:
            try:
                self._conn.ping()
            except Exception:  # dropped: reconnect below
                self._conn.close()
                self._conn = None
        if self._conn is None:
            self._conn = connect(self.config)
        return self._conn

    # -- discovery and types ------------------------------------------------------------
    def discover(self) -> list[CapturedTable]:
        validate_server(self.conn, self.config.username)
        if self.config.snapshot_consistency == "exact" and self.flavor != "mariadb":
            raise SourceConfigurationError(
                "'scan.snapshot.consistency' is 'exact', which needs MariaDB's position of a "
                "consistent snapshot; this server has none: set it to 'auto' or 'watermark'"
            )
        found = discover_tables(
            self.conn, self.config, self._keyless, self.over_bound, self._watermark
        )
        for table in found:
            chunk_key_order(table, self.config)  # fails up front for keys we cannot order
        return found

    @property
    def _watermark(self) -> str | None:
        """How snapshots are placed when only by a watermark (chunk readers place theirs
        so: ``snapshot/consistent.py: placed``), else None (MariaDB's exact position)."""
        if self.config.snapshot_consistency == "watermark":
            return "'scan.snapshot.consistency' is 'watermark'"
        if not flavor_of(self.conn).exact_snapshot:
            return "MySQL reports no snapshot's binlog position"
        return None

    def matches(self, table_id: TableId) -> bool:
        return self.config.matches(table_id.database, table_id.table)

    def left_out(self, table_id: TableId) -> str | None:
        says = self._keyless.get(table_id)
        return None if says is None else says.left_out

    def key_order(self, table: CapturedTable) -> KeyOrder:
        return chunk_key_order(table, self.config)

    def arrow_fields(self, table: CapturedTable) -> list[pa.Field]:
        return [pa.field(c.name, arrow_type(c), nullable=c.nullable) for c in table.columns]

    def comments(self, table: CapturedTable) -> Comments:
        """TABLE_COMMENT and COLUMN_COMMENT as discovery read them, and a column's
        ``COMMENT`` in the ALTER that added or changed it (``include-comments.enabled``)."""
        if not self.config.include_comments:
            return NO_COMMENTS
        return Comments.of(table.comment, ((c.name, c.comment) for c in table.columns))

    # -- positions ----------------------------------------------------------------------
    def position_from_json(self, data: Mapping[str, Any]) -> BinlogPosition:
        return BinlogPosition.from_json(dict(data))

    def log_origin(self) -> str:
        conn = self.conn  # a reconnect may reach another server (a virtual IP moved)
        if self._origin is None or self._origin[0] is not conn:
            self._origin = (conn, server_identity(conn))
        return self._origin[1]

    def position_elsewhere(self, data: Mapping[str, Any], origin: str, here: str) -> BinlogPosition:
        position = self.position_from_json(data)
        key = (origin, here, position.file, position.pos)
        if key not in self._carried:  # planning parses the same offsets more than once
            self._carried[key] = position_elsewhere(
                self.conn, self.config, position, origin, here, self.flavor, self._scan_id
            )
            log.warning(
                "the checkpoint's position %s was read from server %s; continuing from the "
                "same GTID state on server %s at %s",
                position,
                origin,
                here,
                self._carried[key],
            )
        return self._carried[key]

    def current_position(self) -> BinlogPosition:
        return current_position(self.conn)

    def log_bytes(self, start: BinlogPosition, end: BinlogPosition) -> int:
        return range_bytes(self.conn, start, end)

    def first_change_time(self, position: BinlogPosition) -> float | None:
        found = first_transaction_time(self.config, position)
        return None if found is None else float(found)

    def startup_position(self, mode: str) -> BinlogPosition:
        """Where ``mode`` starts; at an older position only when the captured tables'
        columns are the same there as now (binlog/start_columns.py)."""
        if mode == "latest-offset":
            return self.current_position()
        if mode == "earliest-offset":
            position = earliest_position(self.conn)
        elif mode == "timestamp":
            millis = self.config.timestamp_millis or 0
            position = position_for_timestamp(self.conn, self.config, millis, self._scan_id)
        elif self.config.specific_file is not None and self.config.specific_pos is not None:
            file, pos = self.config.specific_file, self.config.specific_pos
            position = BinlogPosition(file, pos, gtid_at(self.conn, file, pos))
            ensure_available(self.conn, position)
        else:
            gtids = self.config.specific_gtid or ""
            position = position_for_gtid(self.conn, self.config, gtids, self.flavor, self._scan_id)
            ensure_available(self.conn, position)
        tables = {
            t.table_id: t
            for t in discover_tables(
                self.conn, self.config, self._keyless, self.over_bound, self._watermark
            )
        }
        check_columns_since(
            position,
            self.current_position(),
            lambda start, end: self.schema_change(start, end, tables),
            mode,
        )
        return position

    def ensure_available(self, position: BinlogPosition) -> None:
        ensure_available(self.conn, position)

    def snapshot_target(self) -> BinlogPosition | None:
        return self.config.snapshot_position

    # -- planning -------------------------------------------------------------------------
    def key_stats(self, table: CapturedTable) -> KeyStats:
        return key_stats(self.conn, table)

    def next_chunk_end(self, table: CapturedTable, lo: Key, size: int) -> Key:
        return next_chunk_end(self.conn, table, self.key_order(table), lo, size)

    def limit_log(
        self,
        start: BinlogPosition,
        end: BinlogPosition,
        max_rows: int | None,
        tables: Sequence[TableId],
    ) -> tuple[BinlogPosition, int]:
        if max_rows is None:  # a binlog position is complete: nothing to scan
            return end, 0
        return advance_log(self.conn, start, end, max_rows, [str(t) for t in tables])

    def schema_change(
        self,
        start: BinlogPosition,
        end: BinlogPosition,
        tables: Mapping[TableId, CapturedTable],
        watch_created: bool = False,
    ) -> SchemaChange[BinlogPosition, CapturedTable] | None:
        walked: list[Boundary] = []
        mariadb = self.flavor == "mariadb"
        to_capture = self.config.matches if watch_created else None
        change = first_schema_change(
            self.conn,
            start,
            end,
            tables,
            self._default_charset,
            mariadb,
            walked,
            to_capture,
            lambda table: dataclasses.replace(
                describe_table(
                    self.conn,
                    table.table_id,
                    table.chunk_key,
                    self.config.tinyint1_boolean,
                    self.config.include_comments,
                ),
                comment=table.comment,
            ),
        )
        stop = end if change is None else change.boundary
        self._walked = (start.key, stop.key, walked) if stop > start else None
        if change is not None and change.table is not None and not self.config.include_comments:
            # an ALTER's COMMENT '...' is read only when asked, as discovery reads them
            columns = tuple(dataclasses.replace(c, comment=None) for c in change.table.columns)
            change = dataclasses.replace(
                change, table=dataclasses.replace(change.table, columns=columns)
            )
        return change

    def _default_charset(self, table: TableId) -> str | None:
        rows = query(
            self.conn,
            "SELECT TABLE_COLLATION FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
            (table.database, table.table),
        )
        collation = rows[0][0] if rows and rows[0][0] else None
        return None if collation is None else str(collation).split("_")[0]

    def table_to_json(self, table: CapturedTable) -> dict[str, Any]:
        # one list per column under the field names once: ~80 bytes a column, not ~200
        return {
            "table": table.table_id.key,
            "fields": _COLUMN_FIELDS,
            "columns": [list(dataclasses.astuple(c)) for c in table.columns],
            "primary_key": list(table.primary_key),
            "chunk_key": table.chunk_key,
            **({"comment": table.comment} if table.comment else {}),
        }

    def table_from_json(self, data: Mapping[str, Any]) -> CapturedTable:
        names = data["fields"]
        table = CapturedTable(
            TableId.from_key(data["table"]),
            tuple(MySqlColumn(**dict(zip(names, c, strict=True))) for c in data["columns"]),
            tuple(data["primary_key"]),
            data["chunk_key"],
            data.get("comment"),
        )
        return with_tinyint1_option(table, self.config.tinyint1_boolean)

    def split_log(self, start: BinlogPosition, end: BinlogPosition) -> list[BinlogPosition]:
        """Large ranges are decoded by several Spark tasks in parallel
        (docs/binlog-decoder.md); each piece needs its own server id, so they take at most
        half the ids: the batch's chunk partitions get the rest (``max_readers``)."""
        pieces = min(MAX_LOG_PIECES, max(1, self.max_readers() // 2))
        walked = self._walked
        if walked is not None and walked[:2] == (start.key, end.key):  # planned just now
            return split_at_boundaries(self.conn, start, end, walked[2], max_pieces=pieces)
        return split_log(self.conn, start, end, max_pieces=pieces)

    def max_readers(self) -> int:
        low, high = self.config.server_ids
        return high - low + 1

    def check_readers(self, count: int) -> None:
        low, high = self.config.server_ids
        if count > self.max_readers():
            log.warning(
                "a batch reads with %d concurrent binlog readers but 'server-id' %d-%d has "
                "only %d ids: readers sharing an id knock each other off the server; give a "
                "wider range",
                count,
                low,
                high,
                high - low + 1,
            )

    # -- reads --------------------------------------------------------------------------
    def read_chunks(
        self,
        table: CapturedTable,
        chunks: Sequence[Chunk],
        target: BinlogPosition,
        reader: int,
    ) -> Iterator[ChunkRows]:
        rows = read_chunks(self.config, table, chunks, target, self.config.server_id(reader))
        return lost_mid_read(retries(self.config), f"reading chunks of {table.table_id}", rows)

    def read_log(
        self,
        tables: Mapping[TableId, CapturedTable],
        start: BinlogPosition,
        end: BinlogPosition,
        reader: int,
        arrow_columns: Mapping[TableId, Sequence[pa.DataType]],
    ) -> BinlogStream:
        return BinlogStream(self.config, tables, start, end, reader, arrow_columns)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}  # executors open their own connections

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"])  # type: ignore[misc]


def with_tinyint1_option(table: CapturedTable, tinyint1_boolean: bool) -> CapturedTable:
    """A table of the checkpoint with ``treat-tinyint1-as-boolean.enabled`` as configured
    now. A checkpoint written before the option existed reads as ``true`` (the only
    behaviour then). Refused when a TINYINT(1) column of it was captured with the other
    value: its target column has that type and its rows were written so."""
    if all(c.tinyint1_boolean == tinyint1_boolean for c in table.columns):
        return table
    columns = tuple(
        dataclasses.replace(c, tinyint1_boolean=tinyint1_boolean) for c in table.columns
    )
    affected = [
        old.name
        for old, new in zip(table.columns, columns, strict=True)
        if reads_tinyint1_as_boolean(old) != reads_tinyint1_as_boolean(new)
    ]
    if affected:
        was = "true" if not tinyint1_boolean else "false"
        raise SourceConfigurationError(
            f"option 'treat-tinyint1-as-boolean.enabled' is "
            f"'{'true' if tinyint1_boolean else 'false'}', but table {table.table_id} was "
            f"captured with '{was}' (its TINYINT(1) columns {', '.join(affected)} have that "
            f"type in the target): set it back to '{was}', or start a new checkpoint and "
            "target to read them otherwise"
        )
    return dataclasses.replace(table, columns=columns)


class BinlogStream:
    """A bounded binlog read; the compiled decoder writes the images of tables with Arrow
    columns into their :class:`ColumnSinks` (no tuples)."""

    def __init__(
        self,
        config: MySqlSourceConfig,
        tables: Mapping[TableId, CapturedTable],
        start: BinlogPosition,
        end: BinlogPosition,
        reader: int,
        arrow_columns: Mapping[TableId, Sequence[pa.DataType]],
    ) -> None:
        self.config, self.tables, self.start, self.end = config, tables, start, end
        self.server_id = config.server_id(reader)
        self.sinks = ColumnSinks(arrow_columns, CHANGE_TYPE_VALUES) if arrow_columns else None

    def __iter__(self) -> Iterator[ChangeBlock]:
        return read_blocks_with_retries(
            self.config, self.tables, self.start, self.end, self.server_id, sinks=self.sinks
        )

    def take(self, table: TableId) -> list[pa.Array]:
        if self.sinks is None:
            raise ValueError(f"no Arrow columns were asked for {table}")
        return self.sinks.take(table)

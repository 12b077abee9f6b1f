"""Read-only questions to a pipeline's source from the driver: where the log ends now,
how many bytes a position is behind it, how many rows a table holds (an estimate).

One connection (the connector's driver-side one, as discovery uses), opened on first use
and shared by the runner's thread and the metrics endpoint's, so calls hold a lock. It
never writes to the database.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.metrics import LogHead
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.schema_change import ColumnMoves

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OffsetColumns:
    """A table's columns as an offset has them, and the last change that made them."""

    columns: Any  #: Spark StructType
    statement: str  #: empty when the columns never changed while captured
    moves: ColumnMoves  #: the columns that change renamed and dropped


class SourceProbe:
    def __init__(self, connector: Any, config: Any) -> None:
        self._connector = connector
        self._config = config
        self._source: Any = None
        self._lock = threading.Lock()
        self._columns: dict[str, Any] = {}  #: Spark schemas of offsets' table JSON
        self.last_error: str | None = None  #: why the last question failed

    @property
    def _dialect(self) -> Any:
        if self._source is None:
            self._source = self._connector.create_source(self._config)
        return self._source.dialect

    def position(self, offset: str) -> Any:
        """The log position of a source offset (JSON text); no connection needed."""
        with self._lock:
            return self._dialect.position_from_json(json.loads(offset)["log"])

    def table_columns(self, offset: str) -> dict[TableId, OffsetColumns]:
        """Each table's columns at the offset (a Spark StructType), for connectors that
        keep them there, with the change that made them last; no connection needed."""
        import pyarrow as pa

        from sparkcdc.spark.schema import to_spark_schema

        found: dict[TableId, OffsetColumns] = {}
        with self._lock:
            for key, progress in json.loads(offset)["tables"].items():
                schema = progress.get("schema")
                if schema is None:
                    continue
                text = json.dumps(schema["table"], sort_keys=True)
                columns = self._columns.get(text)
                if columns is None:
                    dialect = self._dialect
                    table = dialect.table_from_json(schema["table"])
                    columns = to_spark_schema(pa.schema(dialect.arrow_fields(table)))
                    self._columns[text] = columns
                found[TableId.from_key(key)] = OffsetColumns(
                    columns, str(schema.get("change", "")), ColumnMoves.from_json(schema)
                )
        return found

    def tables_added(self, offset: str, known: Collection[TableId]) -> list[SinkTable]:
        """The tables the offset captures that are not ``known`` (created while the
        pipeline runs), with their columns and key as the offset has them (what the
        source decodes their rows with); no connection needed."""
        import pyarrow as pa

        from sparkcdc.spark.schema import to_spark_schema

        added = []
        with self._lock:
            for key, progress in json.loads(offset)["tables"].items():
                table_id = TableId.from_key(key)
                if table_id in known:
                    continue
                schema = progress.get("schema")
                if schema is None:
                    raise SparkCdcError(
                        f"the source captures {table_id}, which the pipeline did not know when "
                        "it started, without its columns in the offset: restart the pipeline"
                    )
                table = self._dialect.table_from_json(schema["table"])
                columns = to_spark_schema(pa.schema(self._dialect.arrow_fields(table)))
                added.append(SinkTable(table_id, columns, tuple(table.primary_key)))
        return added

    def describe(self, offset: str) -> str:
        return str(self.position(offset))

    def estimated_rows(self, tables: Sequence[TableId]) -> dict[TableId, int | None]:
        """The server's row estimate of each table (None where it cannot be had)."""
        with self._lock:
            try:
                found = self._source_tables()
                estimates: dict[TableId, int | None] = {}
                for table_id in tables:
                    table = found.get(table_id)
                    if table is None:
                        estimates[table_id] = None
                        continue
                    stats = self._dialect.key_stats(table)
                    estimates[table_id] = 0 if stats.empty else max(1, stats.approximate_rows)
                return estimates
            except Exception as exc:  # estimates only steer the progress display
                self.last_error = str(exc)
                log.warning("could not estimate the tables' rows: %s", exc)
                self._reset()
                return dict.fromkeys(tables)

    def log_head(self, offset: str, *, waiting: bool = False) -> LogHead | None:
        """The server's log end now and how many bytes ``offset``'s position is behind it
        (None if the server cannot be reached: metrics must not stop the pipeline);
        ``waiting``: also when the first change after the position was written (a read of
        the log, so for ``status``, not for every metrics scrape)."""
        with self._lock:
            try:
                dialect = self._dialect
                position = dialect.log_position(json.loads(offset))
                head = dialect.current_position()
                behind = 0 if head <= position else dialect.log_bytes(position, head)
                since, known = None, waiting and dialect.tells_change_times
                if known and head > position:
                    since = dialect.first_change_time(position)
                self.last_error = None
                return LogHead(str(head), behind, since, known)
            except Exception as exc:  # a probe failure is reported, never raised
                self.last_error = str(exc)
                log.warning("could not read the source's log position: %s", exc)
                self._reset()
                return None

    def _source_tables(self) -> dict[TableId, Any]:
        self._dialect  # noqa: B018  (opens the source)
        return dict(self._source.tables)

    def _reset(self) -> None:
        if self._source is not None:
            try:
                self._source.close()
            except Exception:
                log.debug("closing the probe's source failed", exc_info=True)
            self._source = None

    def close(self) -> None:
        with self._lock:
            self._reset()

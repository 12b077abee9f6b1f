"""Read-only questions to a pipeline's source from the driver: where the log ends now,
how many bytes a position is behind it, how many rows a table holds (an estimate), the
tables' columns an offset holds.

Over the pipeline's one source handle (snapshot/handle.py: one connection, opened on first
use and shared by the runner's thread and the metrics endpoint's). Questions to the server
never stop the pipeline: a failure is logged and reported as unknown. It never writes to
the database.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.metrics import LogHead
from sparkcdc.pipeline.tables import sink_table
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.handle import SourceHandle
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.schema_change import ColumnMoves

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OffsetColumns:
    """A table's columns as an offset has them, and the last change that made them."""

    columns: Any  #: Spark StructType
    statement: str  #: empty when the columns never changed while captured
    moves: ColumnMoves  #: the columns that change renamed and dropped
    #: The table's comments as the offset has them (``include-comments.enabled``)
    comments: Comments = NO_COMMENTS


class SourceProbe:
    def __init__(self, handle: SourceHandle[Any, Any]) -> None:
        self.handle = handle
        self._lock = threading.Lock()
        #: The tables of offsets' table JSON (their columns and key), by its text
        self._columns: dict[str, SinkTable] = {}
        self.last_error: str | None = None  #: why the last question failed

    def position(self, offset: str) -> Any:
        """The log position of a source offset (JSON text); no connection needed."""
        return self.handle.stored_position(SourceOffset.parse(offset).log_at())

    def table_columns(self, offset: str) -> dict[TableId, OffsetColumns]:
        """Each table's columns at the offset (a Spark StructType), for connectors that
        keep them there, with the change that made them last; no connection needed."""
        parsed = SourceOffset.parse(offset)
        found: dict[TableId, OffsetColumns] = {}
        for table_id in parsed.tables:
            schema = parsed.schema_of(table_id)
            if schema is not None:
                table = self.sink_table(TableId("", ""), schema.table)
                found[table_id] = OffsetColumns(
                    table.schema, schema.change, schema.moves, table.comments
                )
        return found

    def spark_columns(self, table: Mapping[str, Any]) -> Any:
        """The Spark StructType of a table as the connector's JSON has it (an offset's
        ``schema`` entry); no connection needed."""
        return self.sink_table(TableId("", ""), table).schema

    def sink_table(self, table_id: TableId, table: Mapping[str, Any]) -> SinkTable:
        """``table_id`` as the pipeline writes it, from the connector's JSON of the table
        (an offset's ``schema`` entry): its columns and key, as the source decodes its rows
        with them; no connection needed."""
        with self._lock:
            text = json.dumps(table, sort_keys=True)
            found = self._columns.get(text)
            if found is None:
                found = self._columns[text] = sink_table(self.handle.columns(table))
        return dataclasses.replace(found, source=table_id)

    def describe(self, offset: str) -> str:
        return str(self.position(offset))

    def estimated_rows(self, tables: Sequence[TableId]) -> dict[TableId, int | None]:
        """The server's row estimate of each table (None where it cannot be had)."""
        with self._lock:
            try:
                return self.handle.estimated_rows(tables)
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
                handle = self.handle
                position = handle.position(SourceOffset.parse(offset).log_at())
                head = handle.head()
                behind = handle.bytes_behind(position, head)
                since, known = None, waiting and handle.tells_change_times
                if known and head > position:
                    since = handle.first_change_time(position)
                self.last_error = None
                return LogHead(str(head), behind, since, known)
            except Exception as exc:  # a probe failure is reported, never raised
                self.last_error = str(exc)
                log.warning("could not read the source's log position: %s", exc)
                self._reset()
                return None

    def _reset(self) -> None:
        try:
            self.handle.close()
        except Exception:
            log.debug("closing the probe's source failed", exc_info=True)

    def close(self) -> None:
        with self._lock:
            self._reset()

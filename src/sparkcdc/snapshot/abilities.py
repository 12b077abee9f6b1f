"""What a dialect may be able to do beyond the required hooks, one small interface each.

A connector's dialect subclasses :class:`~sparkcdc.snapshot.dialect.Dialect` (what every
database answers) and the abilities below that its database has; the framework asks
``isinstance`` and does without the rest. This replaces on/off flags and default no-op
methods on one large class: what a connector can do is in its class line, and a missing
ability is a missing method, never a silent default (flink-cdc-base keeps its optional
behaviour on separate interfaces too, e.g. ``notifyCheckpointComplete``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.core.position import LogPosition
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.schema_change import SchemaChange

log = logging.getLogger(__name__)

P = TypeVar("P", bound=LogPosition)
T = TypeVar("T")


class FollowsSchemaChanges(ABC, Generic[P, T]):
    """The log tells changes of a captured table's columns (and truncates): the driver
    makes each a batch of its own, and every table's offset entry carries its columns
    from the first offset on (docs/design.md, "Schema changes"). Without it a connector
    stops at such changes while reading the log (its own table check)."""

    @abstractmethod
    def schema_change(
        self, start: P, end: P, tables: Mapping[TableId, T], watch_created: bool = False
    ) -> SchemaChange[P, T] | None:
        """The first change of the columns of one of ``tables`` (their shapes as of
        ``start``) in ``(start, end]``, or None. With ``watch_created``, also the first
        statement that creates a table the table options match that is not in ``tables``
        (``SchemaChange.created``)."""

    @abstractmethod
    def table_to_json(self, table: T) -> dict[str, Any]:
        """A table's columns as JSON, for the offset."""

    @abstractmethod
    def table_from_json(self, data: Mapping[str, Any]) -> T:
        """The inverse of :meth:`table_to_json`."""


class FollowsTableDrops(FollowsSchemaChanges[P, T]):
    """:meth:`schema_change` also reports DROP TABLE / DATABASE
    (``SchemaChange.dropped_tables``): a captured table a restart no longer finds, which
    the table options still match, is kept with its columns from the offset until the log
    reaches its drop."""

    @abstractmethod
    def matches(self, table_id: TableId) -> bool:
        """Whether the table options match ``table_id`` (whether or not it exists)."""

    def left_out(self, table_id: TableId) -> str | None:
        """Why discovery left out a table the options match although it exists (a table
        without a primary key: ``snapshot/keyless.py``), or None: it was not found. A
        captured table left out is not kept until a drop that never comes: the restart
        fails with this reason."""
        return None

    def still_captured(self, table_id: TableId, checkpointed: T) -> T | None:
        """The table as discovery described it, when discovery left it out only for a
        reason that decides when a table joins the capture, and the checkpoint captures
        it as ``checkpointed`` (a keyless table read as one chunk that has grown past the
        bound since: it streams on); None: :meth:`left_out` stands."""
        return None


class UnloggedDdl(ABC):
    """The log records no DDL (PostgreSQL's WAL): a drop is found in the catalog, and may
    be known before the position reaches it, so the driver asks for schema changes while
    :attr:`drops_waiting` even when the log did not move; a table created again under a
    dropped one's name is found by discovering again right after the drop."""

    @property
    @abstractmethod
    def drops_waiting(self) -> bool:
        """Whether a drop of a captured table is known but not reported yet."""


class PendingColumns(ABC, Generic[T]):
    """The database can change a table's columns before its log shows the change
    (PostgreSQL: the WAL describes it only with the table's next row change)."""

    @abstractmethod
    def columns_pending(self, tables: Mapping[TableId, T]) -> set[TableId]:
        """Of ``tables`` (shapes as of the batch's start; their snapshot or a re-read
        runs), those whose columns changed in a way the log does not show yet, so that a
        chunk read now could not be read in the batch's shape. Their chunks wait, and
        their chunk spans stay in the offset, until the log shows the change."""


class ReleasesLog(ABC, Generic[P]):
    """The database keeps log for the stream until told (PostgreSQL's replication slot)."""

    @abstractmethod
    def committed(self, position: P) -> None:
        """Spark has committed every batch up to ``position`` (it never replays before
        it): release log kept for the stream. Called on the driver, late (when the next
        batch starts)."""


class DetectsLostLog(ABC, Generic[P]):
    """The database can tell that the log from a position is gone (purged binlogs, a
    dropped slot): a restart then stops with the way out instead of reading short."""

    @abstractmethod
    def ensure_available(self, position: P) -> None:
        """Fail with ``PositionLostError`` (and the fix) if the log at ``position`` can no
        longer be read."""


class NamesServers(ABC, Generic[P]):
    """Positions belong to one server's log and the database can tell its servers apart
    (MySQL's server UUID, MariaDB's server id): offsets record their server, and a
    position read against another one is carried over or refused (snapshot/origins.py)."""

    format_name: str

    @abstractmethod
    def log_origin(self) -> str | None:
        """The identity of the server the connection reads now (None: not known)."""

    def position_elsewhere(self, data: Mapping[str, Any], origin: str, here: str) -> P:
        """The position on this server (``here``) of ``data``, a position taken on server
        ``origin``: the connector translates it through a server-independent name of the
        point (a GTID state) or fails, as here."""
        raise SourceConfigurationError(
            f"the checkpoint's log position was read from server {origin}, but the source "
            f"is connected to server {here}, and a {self.format_name} position cannot be "
            f"carried to another server: connect to server {origin} again, or start with a "
            "new checkpoint"
        )


class MeasuresLog(ABC, Generic[P]):
    """The database can say how much log lies between two positions (metrics, status)."""

    @abstractmethod
    def log_bytes(self, start: P, end: P) -> int | None:
        """Bytes of log in ``(start, end]``, or None if it cannot tell now."""


class TellsChangeTimes(ABC, Generic[P]):
    """The log tells when its transactions were written before they are decoded (not
    PostgreSQL's WAL): ``status`` shows how long the oldest change not read has waited."""

    @abstractmethod
    def first_change_time(self, position: P) -> float | None:
        """When the first transaction after ``position`` was written (epoch seconds), or
        None when the log holds none after it."""


class LimitedReaders(ABC):
    """Concurrent readers of one batch must be told apart by the database (MySQL's server
    ids): a batch's chunk partitions grow to stay within :meth:`max_readers`."""

    @abstractmethod
    def max_readers(self) -> int | None:
        """How many readers of one batch the database can tell apart (None: any)."""

    def check_readers(self, count: int) -> None:
        """A batch reads with ``count`` concurrent readers: warn if the database cannot
        tell them apart (a connector says how to give it more)."""
        limit = self.max_readers()
        if limit is not None and count > limit:
            log.warning(
                "a batch reads with %d concurrent readers; the database tells only %d apart",
                count,
                limit,
            )


class SnapshotsAtPosition(ABC, Generic[P]):
    """Batch reads can be normalised to a given earlier position still in the log
    (``scan.snapshot.position``: what ``sparkcdc verify`` compares a target at)."""

    @abstractmethod
    def snapshot_target(self) -> P | None:
        """The position a batch read's snapshot is normalised to (None: the log now)."""

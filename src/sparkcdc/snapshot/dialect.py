"""The small interface a database connector implements; everything else is the framework.

The incremental-snapshot algorithm (offsets, read budgets, partition planning, the emission
rule, normalising chunks to a batch's log position) is engine-neutral and lives in
:mod:`sparkcdc.snapshot.driver`. A connector answers only what depends on its database:
which tables there are and their columns, where the log is, where the next chunk ends,
how to read chunks inside a consistent snapshot (normalised to a target position) and a
bounded log range, and how its values map to Arrow. This is flink-cdc-base's
``DataSourceDialect`` + ``JdbcSourceChunkSplitter`` split, shaped for Spark micro-batches
(docs/design.md, "The dialect seam").

A dialect instance lives in one process: the driver's for planning, a pickled copy (its
settings only, no connection) in each executor for reads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import pyarrow as pa

from sparkcdc.core.errors import SourceConfigurationError, SourceUnavailableError
from sparkcdc.core.position import LogPosition
from sparkcdc.core.rows import ChangeBlock
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.retry import Retries
from sparkcdc.snapshot.schema_change import SchemaChange

P = TypeVar("P", bound=LogPosition)


class SourceTable(Protocol):
    """What the framework reads of a captured table; the connector's own table type
    carries more (column types, collations)."""

    @property
    def table_id(self) -> TableId: ...
    @property
    def column_names(self) -> tuple[str, ...]: ...
    @property
    def primary_key(self) -> tuple[str, ...]: ...
    @property
    def key_indexes(self) -> tuple[int, ...]: ...
    @property
    def chunk_key_index(self) -> int: ...


T = TypeVar("T", bound=SourceTable)


class SourceSettings(Protocol):
    """What the driver reads of a connector's config (Flink CDC option names in comments).

    A connector's config subclasses :class:`sparkcdc.snapshot.options.SourceConfig`, whose
    shared option specs fill all of these but ``metadata``, which each connector declares
    itself (its metadata columns name its own log positions)."""

    @property
    def startup_mode(self) -> str: ...  # scan.startup.mode
    @property
    def chunk_size(self) -> int: ...  # scan.incremental.snapshot.chunk.size
    @property
    def rows_per_partition(self) -> int: ...  # scan.incremental.snapshot.rows-per-partition
    @property
    def rows_per_batch(self) -> int: ...  # scan.incremental.snapshot.rows-per-batch
    @property
    def fetch_size(self) -> int: ...  # scan.snapshot.fetch.size
    @property
    def factor_lower(self) -> float: ...  # chunk-key.even-distribution.factor.lower-bound
    @property
    def factor_upper(self) -> float: ...  # chunk-key.even-distribution.factor.upper-bound
    @property
    def metadata(self) -> tuple[str, ...]: ...  # metadata.list
    @property
    def max_rows_per_trigger(self) -> int | None: ...  # maxRowsPerTrigger
    @property
    def newly_added_tables(self) -> bool: ...  # scan.newly-added-table.enabled
    @property
    def envelope(self) -> bool: ...  # scan.envelope.enabled
    @property
    def signal_file(self) -> str | None: ...  # signal.file (Debezium's file channel)
    @property
    def pause_file(self) -> str | None: ...  # pause.file


class LogStream(Iterable[ChangeBlock], Protocol):
    """A bounded log read. Blocks with ``sunk`` set had their images written into Arrow
    column buffers instead of tuples (a connector's fast path); :meth:`take` hands over a
    table's buffered columns since the last take."""

    def take(self, table: TableId) -> list[pa.Array]: ...


class Dialect(ABC, Generic[P, T]):
    """One database engine's answers to the framework (see the module docstring)."""

    #: The Spark format / pipeline source name family, for messages (``mysql-cdc``).
    format_name: str
    #: The log tells when its transactions were written before they are decoded
    #: (:meth:`first_change_time`; not PostgreSQL's WAL).
    tells_change_times: bool = False

    @property
    @abstractmethod
    def settings(self) -> SourceSettings:
        """The connector's validated options (engine-neutral part)."""

    # -- discovery and types ------------------------------------------------------------
    @abstractmethod
    def discover(self) -> list[T]:
        """The captured tables. Checks up front that the server is set up for CDC and that
        every chunk key can be ordered, failing with the fix in the message."""

    def inspect(self) -> list[T]:
        """The tables :meth:`discover` would capture, checked the same way, with the server
        left as it is (no replication slot or publication made): what ``sparkcdc
        validate`` shows. Connectors whose discovery changes nothing need not override it."""
        return self.discover()

    @abstractmethod
    def key_order(self, table: T) -> KeyOrder:
        """How the database orders ``table``'s chunk key (collations, NULLs)."""

    @abstractmethod
    def arrow_fields(self, table: T) -> list[pa.Field]:
        """The table's columns as Arrow fields: the same types from snapshot and log."""

    def table_metadata(self, table: T) -> Mapping[str, Any]:
        """Values of the ``metadata.list`` columns that are the same for every row of
        ``table`` (its names); MySQL's database is the table's namespace, PostgreSQL names
        its database and schema apart."""
        return {"database_name": table.table_id.database, "table_name": table.table_id.table}

    # -- positions ------------------------------------------------------------------------
    @abstractmethod
    def position_from_json(self, data: Mapping[str, Any]) -> P:
        """The inverse of ``P.to_json`` (offsets in Spark's checkpoint)."""

    @abstractmethod
    def current_position(self) -> P:
        """The end of the log now (the last committed transaction)."""

    def log_origin(self) -> str | None:
        """The identity of the server whose log the connection reads now (MySQL's server
        UUID, MariaDB's server id), stored next to each offset's position: a position
        means something only on the server that wrote it. None: the database cannot tell
        its servers apart (no check)."""
        return None

    def check_origin(self, planned: str | None) -> None:
        """In an executor, before a partition is read: fail when this process reaches
        another server than the one the batch was planned on (``planned``, the planner's
        :meth:`log_origin`; None: not known). The partition's positions belong to that
        server's log; read on another (the host name leads elsewhere since, as after a
        failover that moved a virtual IP), they would fail or read a wrong range. The
        batch then fails before anything is written, and a restart plans it again on the
        server reached then (carrying its positions over, :meth:`log_position`)."""
        if planned is None:
            return
        try:
            here = self.retries.run("reaching the source", self.log_origin, final=True)
        finally:
            self.close()  # the reads open their own connections
        if here is not None and here != planned:
            raise SourceUnavailableError(
                f"this batch was planned on server {planned}, but a Spark task reading it "
                f"reached server {here} (the source's host leads to another server now, "
                "as after a failover): nothing of the batch was written. Run the pipeline "
                "again: it plans the batch again on the server it reaches, carrying the "
                "log position over, or says what to do"
            )

    def position_elsewhere(self, data: Mapping[str, Any], origin: str, here: str) -> P:
        """The position on this server (``here``) of ``data``, a position taken on server
        ``origin`` (a replica failed over to another): the connector translates it
        through a server-independent name of the point (a GTID state) or fails."""
        raise SourceConfigurationError(
            f"the checkpoint's log position was read from server {origin}, but the source "
            f"is connected to server {here}, and a {self.format_name} position cannot be "
            f"carried to another server: connect to server {origin} again, or start with a "
            "new checkpoint"
        )

    def log_position(self, offset: Mapping[str, Any]) -> P:
        """An offset's log position (offset JSON with ``log`` and, when the dialect names
        servers, ``origin``) as a position of the server connected now: translated when
        the offset was made on another server (failover), else as stored."""
        origin, here = offset.get("origin"), None
        if origin is not None:
            here = self.log_origin()
        if origin is None or here is None or origin == here:
            return self.position_from_json(offset["log"])
        return self.position_elsewhere(offset["log"], str(origin), here)

    @abstractmethod
    def startup_position(self, mode: str) -> P:
        """Where the log starts for a startup mode without a snapshot (``latest-offset``,
        ``earliest-offset``, ``timestamp``, ``specific-offset``); checked to be readable."""

    @abstractmethod
    def ensure_available(self, position: P) -> None:
        """Fail with the fix if the log at ``position`` can no longer be read (purged)."""

    def log_bytes(self, start: P, end: P) -> int | None:
        """Bytes of log in ``(start, end]`` (how far a position is behind the head, for
        metrics and ``status``), or None if the database cannot tell."""
        return None

    def first_change_time(self, position: P) -> float | None:
        """When the first transaction after ``position`` was written to the log (epoch
        seconds; how long the oldest change not yet read has waited, for ``status``), or
        None when the log holds no transaction after ``position``. Only called when
        :attr:`tells_change_times`."""
        return None

    def snapshot_target(self) -> P | None:
        """Batch reads: the position a snapshot is normalised to when not now (verify)."""
        return None

    # -- planning (driver) ------------------------------------------------------------------
    @abstractmethod
    def key_stats(self, table: T) -> KeyStats:
        """Minimum, maximum and estimated rows of the chunk key (steer split sizes only)."""

    @abstractmethod
    def next_chunk_end(self, table: T, lo: Key, size: int) -> Key:
        """The first key about ``size`` rows past ``lo`` (None: the table ends before)."""

    @abstractmethod
    def limit_log(
        self, start: P, end: P, max_rows: int | None, tables: Sequence[TableId]
    ) -> tuple[P, int]:
        """Where a batch starting at ``start`` ends, given the log's end now (``end``): the
        last transaction boundary in ``(start, end]`` that keeps the row changes of
        ``tables`` within ``max_rows`` (at least one transaction; ``None``: no limit), and
        the rows it holds. Called whenever the log moved: a connector whose positions carry
        more than the log's address (PostgreSQL's change count) completes ``end`` here, and
        may stop before ``end`` (``start`` itself: no batch yet) for reasons of its own."""

    @abstractmethod
    def split_log(self, start: P, end: P) -> list[P]:
        """``[start, cut..., end]``: transaction boundaries cutting a log range into
        pieces that executors decode in parallel (just ``[start, end]`` is always right)."""

    #: Whether :meth:`schema_change` and the table JSON are implemented: then every table's
    #: offset entry carries its columns from the start.
    follows_schema_changes: bool = False
    #: Whether :meth:`schema_change` reports DROP TABLE (``SchemaChange.dropped_tables``):
    #: then a captured table a restart no longer finds, which the table options still
    #: match, is kept (with its columns from the offset) until the log reaches its drop.
    follows_table_drops: bool = False

    #: Whether the log records CREATE TABLE (then a table created again under a dropped
    #: one's name is found there; else by discovering again right after the drop).
    logs_table_creates: bool = True

    @property
    def retries(self) -> Retries:
        """The connector's retry policy for lost connections (``connect.max-retries``):
        planning a batch runs again under it when the server drops the connection mid-way
        (a restart between the health check and a query). No retries by default."""
        return Retries(0, lambda exc: False, str)

    @property
    def drops_waiting(self) -> bool:
        """Whether a drop of a captured table is known but not reported yet (its log has
        no trace of it: PostgreSQL), so :meth:`schema_change` is asked even when the log
        did not move."""
        return False

    def matches(self, table_id: TableId) -> bool:
        """Whether the table options match ``table_id`` (whether or not it exists)."""
        del table_id
        return False

    def schema_change(
        self, start: P, end: P, tables: Mapping[TableId, T], watch_created: bool = False
    ) -> SchemaChange[P, T] | None:
        """The first change of the columns of one of ``tables`` (their shapes as of
        ``start``) in ``(start, end]``, or None. With ``watch_created``, also the first
        statement that creates a table the table options match that is not in ``tables``
        (``SchemaChange.created``). Connectors that do not follow schema changes answer
        None and stop at them while reading the log (their table check)."""
        return None

    def columns_pending(self, tables: Mapping[TableId, T]) -> set[TableId]:
        """Of ``tables`` (shapes as of the batch's start; their snapshot or a re-read
        runs), those whose columns the database changed in a way its log does not show
        yet, so that a chunk read now could not be read in the batch's shape (PostgreSQL:
        the WAL describes a change only with the table's next row change). Their chunks
        wait, and their chunk spans stay in the offset, until the log shows the change.
        Logs that record every change answer none."""
        del tables
        return set()

    def table_to_json(self, table: T) -> dict[str, Any]:
        """A table's columns as JSON, for the offset (with :meth:`schema_change`)."""
        raise NotImplementedError(f"{type(self).__name__} does not follow schema changes")

    def table_from_json(self, data: Mapping[str, Any]) -> T:
        raise NotImplementedError(f"{type(self).__name__} does not follow schema changes")

    def max_readers(self) -> int | None:
        """How many readers of one batch the database can tell apart (MySQL: the server
        ids); a batch's chunk partitions grow to stay within it. None: any number."""
        return None

    def check_readers(self, count: int) -> None:
        """A batch reads with ``count`` concurrent log readers; warn if the database
        cannot tell them apart (MySQL's server ids)."""

    # -- reads (executors) -------------------------------------------------------------------
    @abstractmethod
    def read_chunks(
        self, table: T, chunks: Sequence[Chunk], target: P, reader: int
    ) -> Iterator[ChunkRows]:
        """The rows of ``chunks`` as of ``target``: read lock-free in one consistent
        snapshot whose log position S the database reports, then normalised from S to
        ``target`` with the log window between them (snapshot/normalize.py). ``reader`` is
        the partition's index among the batch's concurrent readers."""

    @abstractmethod
    def read_log(
        self,
        tables: Mapping[TableId, T],
        start: P,
        end: P,
        reader: int,
        arrow_columns: Mapping[TableId, Sequence[pa.DataType]],
    ) -> LogStream:
        """The changes of ``tables`` in ``(start, end]``, surviving lost connections
        without skipping or repeating one. Tables in ``arrow_columns`` may come as Arrow
        columns of those types (``ChangeBlock.sunk``) instead of tuples."""

    def committed(self, position: P) -> None:
        """Spark has committed every batch up to ``position`` (it never replays before it):
        a connector may release log the database keeps for it (PostgreSQL's replication
        slot). Called on the driver, late (when the next batch starts)."""

    def close(self) -> None:
        """Release the driver's connection (executors open their own per read)."""

"""The small interface a database connector implements; everything else is the framework.

The incremental-snapshot algorithm (offsets, read budgets, partition planning, the emission
rule, normalising chunks to a batch's log position) is engine-neutral and lives in the
driver's pieces (:mod:`sparkcdc.snapshot.driver`). A connector answers only what depends on
its database:
which tables there are and their columns, where the log is, where the next chunk ends,
how to read chunks inside a consistent snapshot (normalised to a target position) and a
bounded log range, and how its values map to Arrow. This is flink-cdc-base's
``DataSourceDialect`` + ``JdbcSourceChunkSplitter`` split, shaped for Spark micro-batches
(docs/design.md, "The dialect seam"). What only some databases can do (follow schema
changes, release log, tell servers apart...) is a small interface of its own
(snapshot/abilities.py) that a dialect also subclasses.

A dialect instance lives in one process: the driver's for planning, a pickled copy (its
settings only, no connection) in each executor for reads.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import pyarrow as pa

from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.position import LogPosition
from sparkcdc.core.rows import ChangeBlock
from sparkcdc.core.table import TableId
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.chunks import Chunk, Key, KeyStats
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.retry import Retries

if TYPE_CHECKING:
    from sparkcdc.snapshot.options import TablePatterns

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
    @property
    def one_chunk(self) -> bool: ...  # keyless, no chunk key column: read as one chunk


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
    def tables(self) -> TablePatterns: ...  # tables (or the namespace and table options)
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

    @property
    @abstractmethod
    def settings(self) -> SourceSettings:
        """The connector's validated options (engine-neutral part)."""

    @property
    def retries(self) -> Retries:
        """The connector's retry policy for lost connections (``connect.max-retries``):
        planning a batch runs again under it when the server drops the connection mid-way
        (a restart between the health check and a query). No retries by default."""
        return Retries(0, lambda exc: False, str)

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

    def comments(self, table: T) -> Comments:
        """The table's and its columns' comments when the source reads them
        (``include-comments.enabled``), for the targets sinks create; none by default."""
        return NO_COMMENTS

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

    @abstractmethod
    def startup_position(self, mode: str) -> P:
        """Where the log starts for a startup mode without a snapshot (``latest-offset``,
        ``earliest-offset``, ``timestamp``, ``specific-offset``); checked to be readable."""

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

    def close(self) -> None:
        """Release the driver's connection (executors open their own per read)."""

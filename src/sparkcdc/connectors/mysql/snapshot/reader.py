"""Which chunk reader reads a partition: native (C into Arrow) or classic (mysqlclient).

Its own module so that neither reader imports the other.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.snapshot.classic_reader import read_chunks_classic
from sparkcdc.connectors.mysql.snapshot.native_reader import native_unsupported, read_chunks_native
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.formats.changelog_arrow import ChunkRows
from sparkcdc.snapshot.chunks import Chunk

log = logging.getLogger(__name__)

#: The native reader's batches: Spark's JVM spends ~0.1-0.15 us less per row on 64k-row
#: batches than on 16k ones (docs/snapshot-reader.md); a batch is bounded in bytes too.
NATIVE_BATCH_ROWS = 65_536


def native_batch_rows(config: MySqlSourceConfig) -> int:
    """Rows per Arrow batch of the native reader: ``scan.snapshot.fetch.size``, at least
    65536."""
    return max(config.fetch_size, NATIVE_BATCH_ROWS)


def reader_for(config: MySqlSourceConfig) -> str:
    """``native`` or ``classic``, by option ``scan.snapshot.reader``: ``auto`` takes the
    native reader (C, every column type) unless its extension is not built (a broken
    install; the reason is logged once)."""
    if config.snapshot_reader == "classic":
        return "classic"
    why_not = native_unsupported(config)
    if why_not is None:
        return "native"
    if config.snapshot_reader == "native":
        raise SourceConfigurationError(
            f"'scan.snapshot.reader' is 'native' but {why_not}. Use 'auto' or 'classic'"
        )
    if not _explained:
        _explained.append(why_not)
        log.info("snapshot chunks are read by the classic reader: %s", why_not)
    return "classic"


_explained: list[str] = []
#: MySQL's ER_TABLE_DEF_CHANGED, and how often a read is made again for it.
TABLE_DEF_CHANGED = 1412
TABLE_DEF_RETRIES = 3


def read_chunks(
    config: MySqlSourceConfig,
    table: CapturedTable,
    chunks: Sequence[Chunk],
    target: BinlogPosition,
    server_id: int,
) -> Iterator[ChunkRows]:
    """The rows of ``chunks`` as of ``target``, by the reader ``reader_for`` picks.

    A DDL of the table between the read's consistent snapshot and its SELECT fails the
    SELECT with ER_TABLE_DEF_CHANGED (1412): the read is made again in a new snapshot,
    whose log window then holds the DDL (a change of the columns is then found there,
    ChunkCrossedChange; any other DDL changes nothing)."""
    for attempt in range(1, TABLE_DEF_RETRIES + 1):
        yielded = False
        try:
            for rows in _read_once(config, table, chunks, target, server_id):
                yielded = True
                yield rows
            return
        except Exception as exc:
            args = getattr(exc, "args", ())
            if yielded or not args or args[0] != TABLE_DEF_CHANGED or attempt == TABLE_DEF_RETRIES:
                raise
            log.info("%s changed while its chunks were read; reading them again", table.table_id)


def _read_once(
    config: MySqlSourceConfig,
    table: CapturedTable,
    chunks: Sequence[Chunk],
    target: BinlogPosition,
    server_id: int,
) -> Iterator[ChunkRows]:
    if reader_for(config) == "native":
        return read_chunks_native(
            config, table, chunks, target, server_id, native_batch_rows(config)
        )
    return read_chunks_classic(config, table, chunks, target, server_id)

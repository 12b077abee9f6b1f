"""One partition's read inside a consistent snapshot, normalised to the batch's position.

Both chunk readers (classic and native) read a partition the same way: key order and row
keys are prepared before the transaction (a collation's weight table takes a moment to
load), then one ``START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY`` (MVCC, no locks),
whose exact binlog position S MariaDB reports; the log window between S and the target
position P is read once and folded into per-key overrides (snapshot/normalize.py), or for a
table without a primary key into net copies per row value (snapshot/multiset.py). Where the
server reports no such position (MySQL), or ``scan.snapshot.consistency`` is ``watermark``,
S is the binlog's end read after the snapshot opened, a high watermark: the window from P
to it is read backwards (docs/design.md, "Watermark chunks"); a keyless chunk is exact
there only if the window does not touch it. Only how rows are fetched differs between the
readers.

A change of the table's columns between P and S (the chunk is read after its batch was
planned) makes the chunk unreadable in the batch's shape: the window then holds a table map
with other columns, or the SELECT names a column that is gone. Both raise
:class:`ChunkCrossedChange`; the chunk's range is read again after the change
(snapshot/progress.py, ``ChunkSpan``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import binlog_end, snapshot_position
from sparkcdc.connectors.mysql.binlog.reader import read_changes
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import query, with_retries
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.flavor import flavor_of
from sparkcdc.connectors.mysql.snapshot.keys import chunk_key_order, row_key
from sparkcdc.core.errors import (
    ChunkCrossedChange,
    SchemaError,
    SourceConfigurationError,
    SparkCdcError,
)
from sparkcdc.core.rows import Row
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.keys import PartitionKeys
from sparkcdc.snapshot.multiset import window_touches
from sparkcdc.snapshot.window import Window, fold_window

log = logging.getLogger(__name__)

#: The partition's folded log window (snapshot/window.py).
Overrides = Window
#: MySQL's ER_BAD_FIELD_ERROR: a SELECT of a column the table no longer has.
UNKNOWN_COLUMN = 1054
#: ER_NO_SUCH_TABLE and ER_TABLE_DEF_CHANGED: the table was dropped (or replaced) after the
#: snapshot began and before the SELECT (the log window read first ends before that).
TABLE_GONE = (1146, 1412)


def crossed_change(exc: BaseException) -> ChunkCrossedChange | None:
    """The chunk read's error as a crossed change, if it is one (a column or the table
    gone since the batch was planned: the change's batch follows, or stops the stream);
    None for any other error."""
    args = getattr(exc, "args", ())
    if not args or (args[0] != UNKNOWN_COLUMN and args[0] not in TABLE_GONE):
        return None
    detail = args[1] if len(args) > 1 else str(exc)
    what = "a column of the batch" if args[0] == UNKNOWN_COLUMN else "the table"
    return ChunkCrossedChange(f"{what} is gone ({detail})")


def partition_keys(
    config: MySqlSourceConfig, table: CapturedTable, chunks: Sequence[Chunk]
) -> PartitionKeys:
    """The partition's key order and row identity (collations: a weight table to load)."""
    if table.one_chunk:
        return PartitionKeys.of_one_chunk(row_key(table, config), tuple(chunks))
    return PartitionKeys(
        chunk_key_order(table, config), row_key(table, config), table.chunk_key_index, tuple(chunks)
    )


@contextmanager
def consistent_snapshot(
    conn: Any,
    config: MySqlSourceConfig,
    table: CapturedTable,
    keys: PartitionKeys,
    target: BinlogPosition,
    server_id: int,
) -> Iterator[Overrides]:
    """Open the read-only consistent snapshot on ``conn`` (a connection with ``cursor()``)
    and yield the overrides that move the partition's rows from its position to
    ``target``; commit when the caller has read its rows."""
    committed_up_to(conn, config, target)
    with conn.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
    snapshot_at, exact = placed(conn, config, target)
    window = window_overrides(
        config, table, snapshot_at, target, server_id, keys.key_of, keys.in_partition, exact
    )
    yield window
    with conn.cursor() as cur:
        cur.execute("COMMIT")


def committed_up_to(conn: Any, config: MySqlSourceConfig, target: BinlogPosition) -> None:
    """On MySQL, wait until every transaction before ``target`` has finished its engine
    commit (``@@gtid_executed``, which a transaction joins only then, holds ``target``'s
    GTID set), so a snapshot opened next sees them all: the watermark's assumption A
    (docs/design.md, "Watermark chunks") is then checked, not assumed. A commit that takes
    longer than half of ``connect.timeout`` is logged and the read goes on as before."""
    if not target.gtid or not flavor_of(conn).gtid_sets:
        return
    # half the connection's read timeout (the native reader's is connect.timeout): a wait
    # as long as it would lose the connection before the server answers
    timeout = max(1, int(config.connect_timeout) // 2)
    ((waited,),) = query(conn, "SELECT WAIT_FOR_EXECUTED_GTID_SET(%s, %s)", (target.gtid, timeout))
    if timed_out(waited):
        log.warning(
            "transactions before %s had not finished committing after %d s; the chunk is "
            "read anyway (a transaction still committing would be missing from its rows)",
            target,
            timeout,
        )


def timed_out(waited: Any) -> bool:
    """WAIT_FOR_EXECUTED_GTID_SET's answer: 0 when the set was committed, 1 on timeout, NULL
    on an error. The native reader's connection answers in text (``'0'``), which is true
    as a Python value: read as a number, or every chunk would say it timed out."""
    return waited is None or int(waited) != 0


def placed(
    conn: Any, config: MySqlSourceConfig, target: BinlogPosition
) -> tuple[BinlogPosition, bool]:
    """Where the snapshot just opened on ``conn`` stands in the binlog, as far as the
    window to ``target`` must reach, and whether that is the snapshot's exact position
    (else a high watermark).

    A watermark is the binlog's end read after the snapshot opened. A transaction is
    written to the binlog before its engine commit makes it visible, so the snapshot sees
    nothing beyond it; with every transaction up to ``target`` visible, each key's state
    at ``target`` is the before-image of its first change in the window, or the snapshot's
    row where the window has none (docs/design.md, "Watermark chunks").
    """
    mode = config.snapshot_consistency
    exact = None if mode == "watermark" else snapshot_position(conn)
    if exact is not None:
        return exact, True
    if mode == "exact":
        raise SourceConfigurationError(
            "'scan.snapshot.consistency' is 'exact', but the server does not report the "
            "binlog position of a consistent snapshot (binlog_snapshot_file/position, which "
            "MariaDB has): set it to 'auto' or 'watermark'"
        )
    high = binlog_end(conn)
    if high < target:
        raise SparkCdcError(
            f"the binlog ends at {high}, before the batch's position {target}: the server "
            "is not the one the batch was planned on (its binlog restarted?). Point the "
            "source at that server, or start from a new checkpoint"
        )
    return high, False


def window_overrides(
    config: MySqlSourceConfig,
    table: CapturedTable,
    snapshot_at: BinlogPosition,
    target: BinlogPosition,
    server_id: int,
    key_of: Callable[[Row], Any],
    relevant: Callable[[Row], bool],
    exact: bool = True,
) -> Overrides:
    """Per-key states at ``target`` for the ``relevant`` keys changed between the snapshot
    and ``target``: forward (last after-image) or backward (first before-image); for a
    keyless table the window's net copies per row value. A keyless chunk placed by a
    watermark (not ``exact``) whose window touches it cannot be normalised: it raises."""
    forward = snapshot_at <= target
    low, high = (snapshot_at, target) if forward else (target, snapshot_at)

    def window() -> list[Any]:
        return [
            c
            for c in read_changes(config, {table.table_id: table}, low, high, server_id)
            if (c.before is not None and relevant(c.before))
            or (c.after is not None and relevant(c.after))
        ]

    try:
        changes = with_retries(
            config, f"reading the binlog window {low}..{high}", window, final=True
        )
    except SchemaError as exc:  # a table map with other columns, or the table dropped
        raise ChunkCrossedChange(f"its window {low}..{high} crosses a change: {exc}") from exc
    if table.keyless and not exact and window_touches(changes, relevant):
        raise SourceConfigurationError(
            f"table {table.table_id} has no primary key, and its chunk was read in a snapshot "
            f"the server places only between {low} and {high}, where changes touch the "
            "chunk's rows: rows without a key cannot be placed exactly there (docs/"
            "design.md, 'Tables without a primary key'). Capture it from MariaDB "
            "('scan.snapshot.consistency' 'exact'), give it a primary key, or take the "
            "snapshot while it is not written. A restart replays this same batch and fails "
            "again: start a new checkpoint (and target) once the table is quiet, or leave the "
            "table out of 'tables' (with 'scan.newly-added-table.enabled' 'true')"
        )
    return fold_window(changes, forward, key_of, relevant, table.keyless)

"""Finding a binlog position from a GTID set or a timestamp (startup modes).

Transactions start with a GTID event; its start position is a transaction boundary we
can resume from. The scanners read GTID events only (python-mysql-replication skips the
rest without decoding rows), from the newest binlog file that can contain the answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.mysql.binlog.gtid import (
    InterleavedGtidError,
    MariaDbGtid,
    MariaDbGtidPosition,
    MySqlGtidSet,
    resume_index,
)
from sparkcdc.connectors.mysql.binlog.mysql_gtids import gtid_set_at
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import (
    binlog_files,
    current_position,
    gtid_at,
    gtid_purged,
)
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import replication_connect, replication_settings
from sparkcdc.core.errors import PositionLostError, SourceConfigurationError


@dataclass(frozen=True)
class TransactionStart:
    file: str
    pos: int
    timestamp: int
    gtid: str


def transaction_starts(
    config: MySqlSourceConfig, file: str, server_id: int, *, one_file: bool = False
) -> Iterator[TransactionStart]:
    """Every transaction start from the beginning of ``file`` to the end of the binlog."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import GtidEvent, MariadbGtidEvent

    stream = BinLogStreamReader(
        connection_settings=replication_settings(config),
        pymysql_wrapper=replication_connect(config),
        server_id=server_id,
        resume_stream=True,
        blocking=False,
        log_file=file,
        log_pos=4,
        is_mariadb=False,
        only_events=[MariadbGtidEvent, GtidEvent],
    )
    try:
        for event in stream:
            if one_file and stream.log_file != file:
                return
            end = event.packet.log_pos
            yield TransactionStart(
                stream.log_file,
                end - event.packet.event_size,
                int(event.timestamp),
                str(event.gtid),
            )
    finally:
        stream.close()


def first_transaction_time(config: MySqlSourceConfig, position: BinlogPosition) -> int | None:
    """The binlog time (epoch seconds) of the first transaction at or after ``position``,
    or None when the log ends there (``sparkcdc status``: how long the oldest change not
    yet read has waited).

    Read with server id 0, as ``mysqlbinlog`` reads: the server does not take it for a
    replica reconnecting, so the dump does not end a running pipeline's connection that
    has the same id as this one would (its ids are the configured range's)."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent

    stream = BinLogStreamReader(
        connection_settings=replication_settings(config),
        pymysql_wrapper=replication_connect(config),
        server_id=0,
        resume_stream=True,
        blocking=False,
        log_file=position.file,
        log_pos=position.pos,
        is_mariadb=False,
        # a transaction starts with a GTID event (MariaDB, MySQL with GTIDs) or BEGIN
        only_events=[MariadbGtidEvent, GtidEvent, QueryEvent],
    )
    try:
        for event in stream:
            return int(event.timestamp)
        return None
    finally:
        stream.close()


def position_for_gtid(
    conn: Any,
    config: MySqlSourceConfig,
    text: str,
    flavor: str,
    server_id: int,
    end: BinlogPosition | None = None,
) -> BinlogPosition:
    """The start of the first transaction not in the GTID set/position ``text``.

    ``end``: a binlog end read before this call whose GTID state covers ``text``: when
    the scan meets no transaction outside ``text`` the answer is ``end``. Without it the
    binlog's end after the scan is taken, which skips transactions committed while the
    scan ran (right for a start position given by hand, wrong for a stream's own)."""
    files = [name for name, _ in binlog_files(conn)]
    if flavor == "mariadb":
        target = MariaDbGtidPosition.parse(text)
        oldest_state = MariaDbGtidPosition.parse(gtid_at(conn, files[0], 4))
        if not target.covers(oldest_state):
            raise PositionLostError(
                f"GTID position {text} is older than the oldest binlog ({files[0]} starts at "
                f"GTID {oldest_state}): the transactions after it were purged"
            )
        start_file = files[0]
        for name in files[1:]:
            if target.covers(MariaDbGtidPosition.parse(gtid_at(conn, name, 4))):
                start_file = name
            else:
                break
        seen: list[TransactionStart] = []

        def gtids() -> Iterator[MariaDbGtid]:
            for tx in transaction_starts(config, start_file, server_id):
                seen.append(tx)
                yield MariaDbGtid.parse(tx.gtid)

        try:
            index = resume_index(target, gtids())
        except InterleavedGtidError as exc:
            raise SourceConfigurationError(
                f"'scan.startup.specific-offset.gtid-set' {text}: {exc}. Use a GTID position "
                "taken on this server (@@gtid_binlog_pos), or "
                "'scan.startup.specific-offset.file'/'.pos'"
            ) from None
        if index is None:
            return end if end is not None else current_position(conn)
        tx = seen[index]
        return BinlogPosition(tx.file, tx.pos, gtid_at(conn, tx.file, tx.pos))
    return _mysql_position_for_gtid(conn, config, text, server_id, end, files[0])


def _mysql_position_for_gtid(
    conn: Any,
    config: MySqlSourceConfig,
    text: str,
    server_id: int,
    end: BinlogPosition | None,
    oldest: str,
) -> BinlogPosition:
    """MySQL: the server finds the first transaction outside the set, as it does for a
    replica (``COM_BINLOG_DUMP_GTID``, auto-position); the position is exact only when
    every transaction of the set comes before it in this server's binlog."""
    target = MySqlGtidSet.parse(text)
    lost = gtid_purged(conn).minus(target)
    if not lost.empty:
        raise PositionLostError(
            f"GTID set {text or '(empty)'} lacks transactions the server has purged ({lost}, "
            "@@gtid_purged): the changes after it are gone from the binlog"
        )
    if target.empty:
        return BinlogPosition(oldest, 4, gtid_at(conn, oldest, 4))
    first = first_outside(config, str(target), server_id)
    if first is None:
        return end if end is not None else current_position(conn)
    file, pos = first
    before = gtid_set_at(conn, file, pos)
    later = target.minus(before)
    if not later.empty:
        raise SourceConfigurationError(
            f"GTID set {text}: its transactions {later} are not in this server's binlog "
            f"before {file}:{pos}, where the first transaction outside the set starts: they "
            "come later in this binlog (the server applied them in another order) or it "
            "does not have them (another topology, or a replica behind). Resuming from any "
            "binlog position would deliver transactions twice or lose some; use a GTID set "
            "taken on this server (@@gtid_executed), or 'scan.startup.specific-offset.file'/"
            "'.pos'"
        )
    return BinlogPosition(file, pos, str(before))


def first_outside(config: MySqlSourceConfig, gtids: str, server_id: int) -> tuple[str, int] | None:
    """Where the first transaction not in the MySQL GTID set ``gtids`` starts (file and
    position), as the server's GTID dump finds it; None when the binlog has none."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.event import GtidEvent

    stream = BinLogStreamReader(
        connection_settings=replication_settings(config),
        pymysql_wrapper=replication_connect(config),
        server_id=server_id,
        blocking=False,
        auto_position=gtids,
        is_mariadb=False,
        only_events=[GtidEvent],
    )
    try:
        for event in stream:
            return str(stream.log_file), event.packet.log_pos - event.packet.event_size
        return None
    finally:
        stream.close()


def position_for_timestamp(
    conn: Any, config: MySqlSourceConfig, millis: int, server_id: int
) -> BinlogPosition:
    """The start of the first transaction committed at or after ``millis`` (epoch ms).

    Binlog timestamps have second resolution: a transaction in the same second as
    ``millis`` counts as at or after it.
    """
    seconds = millis // 1000
    files = [name for name, _ in binlog_files(conn)]
    start_file = files[0]
    for name in reversed(files):  # newest file whose first transaction is not after t
        first = next(iter(transaction_starts(config, name, server_id, one_file=True)), None)
        if first is not None and first.timestamp <= seconds:
            start_file = name
            break
    for tx in transaction_starts(config, start_file, server_id):
        if tx.timestamp >= seconds:
            return BinlogPosition(tx.file, tx.pos, gtid_at(conn, tx.file, tx.pos))
    return current_position(conn)

"""Reading binlog positions from the server (the statements each flavour needs:
server/flavor.py)."""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.mysql.binlog.gtid import MariaDbGtidPosition, MySqlGtidSet
from sparkcdc.connectors.mysql.binlog.mysql_gtids import gtid_set_at
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, file_index
from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.connectors.mysql.server.flavor import flavor_of
from sparkcdc.core.errors import SourceConfigurationError, SparkCdcError, lost_log


def current_position(conn: Any) -> BinlogPosition:
    """The end of the binlog now: a transaction boundary (``SHOW MASTER STATUS``, MySQL
    8.4's ``SHOW BINARY LOG STATUS``), with the GTID state there.

    Called once per trigger, so it must be cheap for the server: ``BINLOG_GTID_POS(file,
    pos)`` rescans the binlog file from its start (~50 ms of server CPU 380 MB into a file).
    MariaDB updates ``@@gtid_binlog_pos`` when a transaction's GTID event is written, under
    the binlog lock that ``SHOW MASTER STATUS`` also takes; equal reads of it before and
    after the status mean no transaction was binlogged in between, so it is the state at
    that position. Under a stream of commits the pair is retried, then the rescan is used.
    MySQL's set comes from the binlog itself (mysql_gtids.py: the new events only).
    """
    if flavor_of(conn).gtid_sets:
        file, pos = _master_status(conn)
        return BinlogPosition(file, pos, gtid_at(conn, file, pos))
    for _ in range(CONSISTENT_READ_ATTEMPTS):
        before = _gtid_binlog_pos(conn)
        file, pos = _master_status(conn)
        if _gtid_binlog_pos(conn) == before:
            return BinlogPosition(file, pos, normalised_gtid(before))
    return BinlogPosition(file, pos, gtid_at(conn, file, pos))


#: Tries at reading ``@@gtid_binlog_pos`` unchanged around ``SHOW MASTER STATUS``.
CONSISTENT_READ_ATTEMPTS = 3


def _master_status(conn: Any) -> tuple[str, int]:
    statement = flavor_of(conn).binlog_status
    rows = query(conn, statement)
    if not rows:
        raise SourceConfigurationError(
            f"{statement} returned nothing: the binlog is off. Start the server with "
            "log-bin, binlog_format=ROW and binlog_row_image=FULL"
        )
    return str(rows[0][0]), int(rows[0][1])


def _gtid_binlog_pos(conn: Any) -> str:
    ((gtid,),) = query(conn, "SELECT @@gtid_binlog_pos")
    return str(gtid or "")


def normalised_gtid(text: str) -> str:
    """A MariaDB GTID position with its domains in ascending order (the server lists them
    in its own order, which differs between ``@@gtid_binlog_pos`` and ``BINLOG_GTID_POS``),
    so one position always has one text; anything else unchanged."""
    try:
        return str(MariaDbGtidPosition.parse(text))
    except SparkCdcError:
        return text


def gtid_at(conn: Any, file: str, pos: int) -> str:
    """The GTID state at a position: MariaDB's ``BINLOG_GTID_POS``, MySQL's executed set
    there (from the binlog: mysql_gtids.py)."""
    if flavor_of(conn).gtid_sets:
        return str(gtid_set_at(conn, file, pos))
    ((gtid,),) = query(conn, "SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
    return normalised_gtid(str(gtid or ""))


def gtid_purged(conn: Any) -> MySqlGtidSet:
    """MySQL's ``@@gtid_purged``: the transactions no binlog of the server holds any more."""
    ((text,),) = query(conn, "SELECT @@GLOBAL.gtid_purged")
    return MySqlGtidSet.parse(str(text or ""))


def binlog_files(conn: Any) -> list[tuple[str, int]]:
    """The binlog files the server still has, oldest first, with their sizes."""
    return [(str(r[0]), int(r[1])) for r in query(conn, "SHOW BINARY LOGS")]


def earliest_position(conn: Any) -> BinlogPosition:
    files = binlog_files(conn)
    return BinlogPosition(files[0][0], 4, gtid_at(conn, files[0][0], 4))


#: How to keep binlogs long enough, the end of every lost-log message.
_KEEP_LONGER = (
    "The changes in between are lost to CDC; keep binlogs longer (binlog_expire_logs_seconds, "
    "expire_logs_days) than a stream may stay stopped"
)


def ensure_available(conn: Any, position: BinlogPosition) -> None:
    """Fail clearly when the binlog holding ``position`` has been purged: its file is gone,
    or (MySQL) ``@@gtid_purged`` holds a transaction the position's GTID set lacks (the
    changes after the position are gone even where a file of that name is there again,
    after ``RESET MASTER``)."""
    files = binlog_files(conn)
    names = {name for name, _ in files}
    oldest = files[0][0] if files else "(none)"
    if position.file not in names:
        if files and file_index(position.file) > file_index(files[-1][0]):
            return  # not written yet: harmless, the stream waits for it
        raise lost_log(
            f"binlog file {position.file} (position {position.pos}"
            + (f", GTID {position.gtid}" if position.gtid else "")
            + f") has been purged from the server; the oldest binlog is {oldest}. "
            + _KEEP_LONGER
        )
    if position.gtid and flavor_of(conn).gtid_sets:
        missing = gtid_purged(conn).minus(MySqlGtidSet.parse(position.gtid))
        if not missing.empty:
            raise lost_log(
                f"the server has purged transactions {missing} that come after the position "
                f"{position} (@@gtid_purged); the oldest binlog is {oldest}. " + _KEEP_LONGER
            )


def snapshot_position(conn: Any) -> BinlogPosition | None:
    """The exact binlog position of the open consistent-snapshot transaction (MariaDB), or
    None where the server does not report one (MySQL).

    Read ``binlog_snapshot_file/position`` right after ``START TRANSACTION WITH CONSISTENT
    SNAPSHOT``; ``@@gtid_binlog_pos`` inside the transaction is not the snapshot's position.
    """
    if not flavor_of(conn).exact_snapshot:
        return None
    status = dict(query(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'"))
    file = status.get("Binlog_snapshot_file")
    pos = status.get("Binlog_snapshot_position")
    if not file or pos is None:
        return None
    return BinlogPosition(str(file), int(pos), gtid_at(conn, str(file), int(pos)))


def binlog_end(conn: Any) -> BinlogPosition:
    """The binlog's end now (file and position only): a watermark's upper bound needs no
    GTID state, and reading one costs the server a rescan (:func:`gtid_at`)."""
    file, pos = _master_status(conn)
    return BinlogPosition(file, pos, "")

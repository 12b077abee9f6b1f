"""Reading binlog positions from the server."""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.mysql.binlog.gtid import MariaDbGtidPosition
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, file_index
from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.core.errors import SourceConfigurationError, SparkCdcError, lost_log


def current_position(conn: Any) -> BinlogPosition:
    """The end of the binlog now: a transaction boundary (``SHOW MASTER STATUS``), with the
    GTID state there.

    Called once per trigger, so it must be cheap for the server: ``BINLOG_GTID_POS(file,
    pos)`` rescans the binlog file from its start (~50 ms of server CPU 380 MB into a file).
    MariaDB updates ``@@gtid_binlog_pos`` when a transaction's GTID event is written, under
    the binlog lock that ``SHOW MASTER STATUS`` also takes; equal reads of it before and
    after the status mean no transaction was binlogged in between, so it is the state at
    that position. Under a stream of commits the pair is retried, then the rescan is used.
    """
    for _ in range(CONSISTENT_READ_ATTEMPTS):
        before = _gtid_binlog_pos(conn)
        file, pos = _master_status(conn)
        if before is None:  # MySQL: GTIDs come from the events
            break
        if _gtid_binlog_pos(conn) == before:
            return BinlogPosition(file, pos, normalised_gtid(before))
    return BinlogPosition(file, pos, gtid_at(conn, file, pos))


#: Tries at reading ``@@gtid_binlog_pos`` unchanged around ``SHOW MASTER STATUS``.
CONSISTENT_READ_ATTEMPTS = 3
#: "Unknown system variable": MySQL has no ``gtid_binlog_pos``.
ER_UNKNOWN_SYSTEM_VARIABLE = 1193


def _master_status(conn: Any) -> tuple[str, int]:
    rows = query(conn, "SHOW MASTER STATUS")
    if not rows:
        raise SourceConfigurationError(
            "SHOW MASTER STATUS returned nothing: the binlog is off. Start the server with "
            "log-bin, binlog_format=ROW and binlog_row_image=FULL"
        )
    return str(rows[0][0]), int(rows[0][1])


def _gtid_binlog_pos(conn: Any) -> str | None:
    try:
        ((gtid,),) = query(conn, "SELECT @@gtid_binlog_pos")
    except Exception as exc:
        if exc.args and exc.args[0] == ER_UNKNOWN_SYSTEM_VARIABLE:
            return None
        raise
    return str(gtid or "")


def normalised_gtid(text: str) -> str:
    """A MariaDB GTID position with its domains in ascending order (the server lists them
    in its own order, which differs between ``@@gtid_binlog_pos`` and ``BINLOG_GTID_POS``),
    so one position always has one text; anything else unchanged."""
    try:
        return str(MariaDbGtidPosition.parse(text))
    except SparkCdcError:
        return text


#: "FUNCTION ... does not exist": MySQL has no BINLOG_GTID_POS.
ER_SP_DOES_NOT_EXIST = 1305


def gtid_at(conn: Any, file: str, pos: int) -> str:
    """The GTID state at a position (MariaDB's ``BINLOG_GTID_POS``; empty elsewhere)."""
    try:
        ((gtid,),) = query(conn, "SELECT BINLOG_GTID_POS(%s, %s)", (file, pos))
    except Exception as exc:
        if exc.args and exc.args[0] == ER_SP_DOES_NOT_EXIST:  # MySQL: GTIDs come from events
            return ""
        raise  # a lost connection must not store an empty GTID in the offset
    return normalised_gtid(str(gtid or ""))


def binlog_files(conn: Any) -> list[tuple[str, int]]:
    """The binlog files the server still has, oldest first, with their sizes."""
    return [(str(r[0]), int(r[1])) for r in query(conn, "SHOW BINARY LOGS")]


def earliest_position(conn: Any) -> BinlogPosition:
    files = binlog_files(conn)
    return BinlogPosition(files[0][0], 4, gtid_at(conn, files[0][0], 4))


def ensure_available(conn: Any, position: BinlogPosition) -> None:
    """Fail clearly when the binlog holding ``position`` has been purged."""
    files = binlog_files(conn)
    names = {name for name, _ in files}
    if position.file in names:
        return
    oldest = files[0][0] if files else "(none)"
    if files and file_index(position.file) > file_index(files[-1][0]):
        return  # not written yet: harmless, the stream waits for it
    raise lost_log(
        f"binlog file {position.file} (position {position.pos}"
        + (f", GTID {position.gtid}" if position.gtid else "")
        + f") has been purged from the server; the oldest binlog is {oldest}. The changes in "
        "between are lost to CDC; keep binlogs longer (binlog_expire_logs_seconds, "
        "expire_logs_days) than a stream may stay stopped"
    )


def snapshot_position(conn: Any) -> BinlogPosition | None:
    """The exact binlog position of the open consistent-snapshot transaction (MariaDB), or
    None where the server does not report one (MySQL).

    Read ``binlog_snapshot_file/position`` right after ``START TRANSACTION WITH CONSISTENT
    SNAPSHOT``; ``@@gtid_binlog_pos`` inside the transaction is not the snapshot's position.
    """
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

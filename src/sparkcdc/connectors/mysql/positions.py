"""Reading binlog positions from the server."""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.mysql.connection import query
from sparkcdc.core.errors import PositionLostError, SourceConfigurationError
from sparkcdc.core.position import BinlogPosition, file_index


def current_position(conn: Any) -> BinlogPosition:
    """The end of the binlog now: a transaction boundary (``SHOW MASTER STATUS``)."""
    rows = query(conn, "SHOW MASTER STATUS")
    if not rows:
        raise SourceConfigurationError(
            "SHOW MASTER STATUS returned nothing: the binlog is off. Start the server with "
            "log-bin, binlog_format=ROW and binlog_row_image=FULL"
        )
    file, pos = rows[0][0], int(rows[0][1])
    return BinlogPosition(file, pos, gtid_at(conn, file, pos))


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
    return str(gtid or "")


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
    raise PositionLostError(
        f"binlog file {position.file} (position {position.pos}"
        + (f", GTID {position.gtid}" if position.gtid else "")
        + f") has been purged from the server; the oldest binlog is {oldest}. The changes in "
        "between are lost to CDC: restart the query with a new checkpoint (a fresh snapshot), "
        "and keep binlogs longer (expire_logs_days / binlog_expire_logs_seconds)"
    )


def snapshot_position(conn: Any) -> BinlogPosition:
    """The exact binlog position of the open consistent-snapshot transaction (MariaDB).

    Read ``binlog_snapshot_file/position`` right after ``START TRANSACTION WITH CONSISTENT
    SNAPSHOT``; ``@@gtid_binlog_pos`` inside the transaction is not the snapshot's position.
    """
    status = dict(query(conn, "SHOW STATUS LIKE 'binlog_snapshot_%'"))
    file = status.get("Binlog_snapshot_file")
    pos = status.get("Binlog_snapshot_position")
    if not file or pos is None:
        raise SourceConfigurationError(
            "the server does not report binlog_snapshot_file/position (MariaDB does); "
            "MySQL servers are not supported for snapshots yet"
        )
    return BinlogPosition(str(file), int(pos), gtid_at(conn, str(file), int(pos)))

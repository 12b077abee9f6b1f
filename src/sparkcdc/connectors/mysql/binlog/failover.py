"""Positions across servers: which server a binlog position belongs to, and the same point
on another server of the replication topology (a replica failed over to another).

A file and byte offset mean something only in the binlog of the server that wrote it;
replicas of one primary name their files alike, so a position read on the wrong server
would be accepted and read from a meaningless place. Offsets therefore record the server
(``origin``) and a restart connected to another one carries the position over by its GTID
state, which is the same on every server of a topology (MariaDB: the
``domain-server-seq`` of each domain's last transaction; MySQL: the set of transactions
before it, ``uuid:1-N``). The new server must have every
transaction of that state in its binlog (``log_slave_updates``), else the changes it has not
applied yet would come after the translated position and be emitted twice.
"""

from __future__ import annotations

from typing import Any

from sparkcdc.connectors.mysql.binlog.gtid import MariaDbGtidPosition, MySqlGtidSet
from sparkcdc.connectors.mysql.binlog.locate import position_for_gtid
from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.positions import current_position
from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.connection import query
from sparkcdc.core.errors import SourceConfigurationError


def server_identity(conn: Any) -> str:
    """MySQL's ``server_uuid``, else (MariaDB has none) ``server-id``: unique within a
    replication topology, which replication itself requires."""
    rows = query(conn, "SHOW GLOBAL VARIABLES WHERE Variable_name = 'server_uuid'")
    if rows and rows[0][1]:
        return str(rows[0][1])
    ((server_id,),) = query(conn, "SELECT @@server_id")
    return str(server_id)


def position_elsewhere(
    conn: Any,
    config: MySqlSourceConfig,
    position: BinlogPosition,
    origin: str,
    here: str,
    flavor: str,
    scan_id: int,
) -> BinlogPosition:
    """``position`` (read on server ``origin``) on this server (``here``): the start of
    the first transaction that is not in its GTID state."""
    moved = f"the checkpoint's position {position} was read from server {origin}; the source "
    moved += f"is connected to server {here}"
    if not position.gtid:
        raise SourceConfigurationError(
            f"{moved}, and the position has no GTID state to find the same point here "
            "(positions carry one with GTIDs on: MariaDB, MySQL with gtid_mode=ON): connect "
            f"to server {origin} again, or start with a new checkpoint"
        )
    head = current_position(conn)
    if not _covers(head.gtid, position.gtid, flavor):
        wait = (
            "SELECT MASTER_GTID_WAIT(...)"
            if flavor == "mariadb"
            else "SELECT WAIT_FOR_EXECUTED_GTID_SET(...)"
        )
        raise SourceConfigurationError(
            f"{moved}, which has not yet written every transaction the checkpoint has read "
            f"to its binlog (its binlog ends at GTID {head.gtid or '(none)'}, the "
            f"checkpoint is at {position.gtid}): it lags behind, or does not log what it "
            "replicates (log_slave_updates / log_replica_updates OFF). Start again once it "
            f"has caught up ({wait} on it tells when)"
        )
    # the binlog's end read before the scan: a transaction committed during the scan
    # comes after it and must not be skipped
    return position_for_gtid(conn, config, position.gtid, flavor, scan_id, end=head)


def _covers(head: str, wanted: str, flavor: str) -> bool:
    """Whether a binlog ending at GTID state ``head`` holds every transaction of ``wanted``."""
    if flavor == "mariadb":
        return MariaDbGtidPosition.parse(head).covers(MariaDbGtidPosition.parse(wanted))
    return MySqlGtidSet.parse(wanted).issubset(MySqlGtidSet.parse(head))

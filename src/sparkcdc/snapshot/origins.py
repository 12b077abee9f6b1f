"""Which server a log position belongs to (docs/design.md, "Which server a position belongs
to").

A binlog file and offset mean something only on the server that wrote it. A dialect that
tells servers apart (:class:`~sparkcdc.snapshot.abilities.NamesServers`) has every offset
record its server (``"origin"``); parsing one compares it with the server connected now, and
a position of another server is carried over by the connector or refused. Dialects without
the ability read positions as stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sparkcdc.core.errors import SourceUnavailableError
from sparkcdc.snapshot.abilities import NamesServers
from sparkcdc.snapshot.dialect import Dialect, P
from sparkcdc.snapshot.offset import LogAt, SourceOffset


def server_of(dialect: Dialect[Any, Any]) -> str | None:
    """The server the dialect's connection reads now (None: servers are not told apart)."""
    return dialect.log_origin() if isinstance(dialect, NamesServers) else None


def position_of(dialect: Dialect[P, Any], offset: LogAt | Mapping[str, Any]) -> P:
    """An offset's log position (:class:`LogAt`, or the offset's JSON) as a position of
    the server connected now: translated when the offset was made on another server
    (failover), else as stored."""
    at = LogAt.of(offset)
    here = None if at.origin is None else server_of(dialect)
    if at.origin is None or here is None or at.origin == here:
        return dialect.position_from_json(at.log)
    assert isinstance(dialect, NamesServers)  # else ``here`` would be None
    position: P = dialect.position_elsewhere(at.log, at.origin, here)
    return position


def offset_json(dialect: Dialect[P, Any], offset: SourceOffset[P]) -> dict[str, Any]:
    """An offset as Spark stores it, with the server its log position was read from
    (``origin``) when the dialect names servers: a restart connected to another server (a
    replica failed over) translates the position or fails, never reads a position of one
    server on another."""
    origin = server_of(dialect)
    if origin is not None:
        offset = dataclasses.replace(offset, origin=origin)
    return offset.to_json()


def check_origin(dialect: Dialect[Any, Any], planned: str | None) -> None:
    """In an executor, before a partition is read: fail when this process reaches another
    server than the one the batch was planned on (``planned``; None: not known). The
    partition's positions belong to that server's log; read on another (the host name
    leads elsewhere since, as after a failover that moved a virtual IP), they would fail or
    read a wrong range. The batch then fails before anything is written, and a restart
    plans it again on the server reached then (carrying its positions over)."""
    if planned is None or not isinstance(dialect, NamesServers):
        return
    try:
        here = dialect.retries.run("reaching the source", dialect.log_origin, final=True)
    finally:
        dialect.close()  # the reads open their own connections
    if here is not None and here != planned:
        raise SourceUnavailableError(
            f"this batch was planned on server {planned}, but a Spark task reading it "
            f"reached server {here} (the source's host leads to another server now, "
            "as after a failover): nothing of the batch was written. Run the pipeline "
            "again: it plans the batch again on the server it reaches, carrying the "
            "log position over, or says what to do"
        )

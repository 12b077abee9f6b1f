"""A PyMySQL connection that sends the server no file but the one the sink wrote.

``LOAD DATA LOCAL INFILE`` makes the *server* name the file the client then sends, and
PyMySQL sends whatever it names: a hostile target, or anyone between us and it (TLS to
a target is unverified unless a CA is given), could read ``/proc/self/environ`` (the
pipeline's ``${VAR}`` passwords), the pipeline file or cloud keys from every process
that writes. Here a request is served only while a bulk load runs
(:attr:`OwnFilesConnection.sendable`) and only for exactly the file that load's
statement names; any other request gets no byte of anything (an empty file, which ends
the server's read) and fails the statement with :class:`ForeignFileRequest`.

PyMySQL is imported lazily, as everywhere in the sink (config validation needs no driver).
"""

from __future__ import annotations

import os
from typing import Any

from sparkcdc.core.errors import SparkCdcError


class ForeignFileRequest(SparkCdcError):
    """The server asked for a local file the sink did not offer; nothing was sent."""


def connection_class() -> type[Any]:
    """The PyMySQL connection class with the guard (made on first use)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _make_class()
    return _CLASS


_CLASS: type[Any] | None = None


def _make_class() -> type[Any]:
    from pymysql.connections import Connection, MySQLResult

    class OwnFileResult(MySQLResult):
        def _read_load_local_packet(self, first_packet: Any) -> None:
            conn: Any = self.connection
            asked = bytes(first_packet.get_all_data()[1:])
            offered = conn.sendable
            if offered is not None and asked == os.fsencode(offered):
                super()._read_load_local_packet(first_packet)  # type: ignore[misc]
                return
            try:
                conn.write_packet(b"")  # the end of the data: the file is empty
                conn._read_packet()  # the server's answer (OK or an error), read to stay in step
            except Exception:  # whatever it answered, the statement fails below
                pass
            shown = asked.decode("utf-8", "backslashreplace")
            raise ForeignFileRequest(
                f"jdbc sink: the target asked for the local file {shown!r}, "
                + (
                    f"not the one the bulk load wrote ({offered!r})"
                    if offered is not None
                    else "outside a bulk load"
                )
                + "; nothing of it was sent and the batch is not written. A MySQL/MariaDB "
                "server asks for the file its LOAD DATA LOCAL statement names: a server that "
                "asks for another is hostile or someone is between it and the pipeline (give "
                "'jdbc.properties.sslCa' so TLS verifies the server)"
            )

    class OwnFilesConnection(Connection):
        #: The one file a LOAD DATA LOCAL request may get now (None: none at all).
        sendable: str | None = None

        def _read_query_result(self, unbuffered: bool = False) -> Any:
            # PyMySQL's own, with the guarded result
            self._result = None
            result = OwnFileResult(self)
            if unbuffered:
                result.init_unbuffered_query()
            else:
                result.read()
            self._result = result
            if result.server_status is not None:
                self.server_status = result.server_status
            return result.affected_rows

    return OwnFilesConnection

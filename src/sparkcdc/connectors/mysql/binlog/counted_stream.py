"""A binlog stream whose reconnects count as retries.

python-mysql-replication re-requests a dump connection that was lost mid-read (errors
2013 and 2006) by itself, from the position it had reached: a retry that our policy
(``connect.max-retries``, snapshot/retry.py) never sees. The pipeline's metrics count the
source's retries (spark/read_counters.py), so the stream counts its own reconnects. Only a
reconnect is counted, not the first connection; a reconnect that fails raises to our
policy, which counts its own retry.
"""

from __future__ import annotations

from typing import Any

from pymysqlreplication import BinLogStreamReader

from sparkcdc.connectors.mysql.server.flavor import ServerFlavor
from sparkcdc.snapshot.retry import count_retry


class CountedBinLogStream(BinLogStreamReader):  # type: ignore[misc]
    _connections = 0

    def _BinLogStreamReader__connect_to_stream(self) -> Any:
        # the base's private method, by its mangled name: its reconnect calls it again
        if self._connections:
            count_retry()
        self._connections += 1
        return super()._BinLogStreamReader__connect_to_stream()

    @property
    def server_flavor(self) -> ServerFlavor:
        """The flavour of the server the dump connection is open to (its handshake's
        version; known once the stream has read an event)."""
        return ServerFlavor.parse(str(self._stream_connection.server_version))

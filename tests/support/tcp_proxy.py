"""A loopback TCP proxy that forwards slowly and can cut or freeze every open connection:
a network failure or a stall on demand, for tests of reconnects and read timeouts."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from sparkcdc.embedded.process import free_port


class CuttableProxy:
    """Forwards 127.0.0.1:port to a target, ``chunk`` bytes per ``pause`` seconds."""

    def __init__(self, target_port: int, *, chunk: int = 2048, pause: float = 0.002) -> None:
        self.target_port = target_port
        self.chunk, self.pause = chunk, pause
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._frozen: set[socket.socket] = set()
        self._closed = threading.Event()
        self.cuts = self.freezes = 0
        self.forwarded = 0  #: bytes sent to clients so far (a read in progress moves it)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            with self._lock:
                self._sockets += [client, upstream]
            for a, b, down in ((client, upstream, False), (upstream, client, True)):
                threading.Thread(target=self._pipe, args=(a, b, down), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, down: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(self.chunk):
                if source in self._frozen:  # a stall: nothing more is forwarded, ever
                    self._closed.wait()
                    return
                sink.sendall(data)
                if down:
                    with self._lock:
                        self.forwarded += len(data)
                time.sleep(self.pause)
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Reset every connection open now; new connections still work.

        ``shutdown`` comes first: closing a socket that another thread is blocked reading
        does not end the connection on Linux (the blocked ``recv`` keeps it alive), so the
        client would see a silent network instead of a reset."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with contextlib.suppress(OSError):
                s.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
                )
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()
        self.cuts += 1

    def freeze(self) -> None:
        """Stop forwarding on every connection open now, leaving it open: both ends see a
        healthy, silent connection (keepalives are answered by this host). New
        connections still work."""
        with self._lock:
            self._frozen.update(self._sockets)
        self.freezes += 1

    def close(self) -> None:
        self._listener.close()
        self._closed.set()
        self.cut()

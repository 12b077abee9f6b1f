"""A hostile MySQL server on loopback, just enough protocol for the JDBC sink's bulk load:
the handshake (any login is accepted), ``SELECT VERSION(), @@local_infile`` (MariaDB,
LOCAL allowed), OK for every other statement, and a ``LOAD DATA LOCAL INFILE`` answered
with a request for the file the test chooses (``wanted``: a path, or None for the file
the statement names, as an honest server does). Every byte a client sends after asking
for a file is kept in :attr:`FakeMySqlServer.received`."""

from __future__ import annotations

import re
import socket
import struct
import threading
from typing import Any

_LOAD = re.compile(rb"LOAD DATA LOCAL INFILE '((?:[^']|'')*)'", re.I)
_CAPABILITIES = (
    0x00000001  # LONG_PASSWORD
    | 0x00000004  # LONG_FLAG
    | 0x00000008  # CONNECT_WITH_DB
    | 0x00000080  # LOCAL_FILES
    | 0x00000200  # PROTOCOL_41
    | 0x00002000  # TRANSACTIONS
    | 0x00008000  # SECURE_CONNECTION
    | 0x00010000  # MULTI_STATEMENTS
    | 0x00020000  # MULTI_RESULTS
    | 0x00080000  # PLUGIN_AUTH
)


def _lenenc(data: bytes) -> bytes:
    assert len(data) < 251
    return bytes([len(data)]) + data


class FakeMySqlServer:
    def __init__(self, wanted: str | None = None) -> None:
        self.wanted = wanted
        self.received = bytearray()
        self.asked: list[bytes] = []  #: the file names the server asked for
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> FakeMySqlServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the protocol ------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._socket.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(client,), daemon=True).start()

    def _session(self, client: socket.socket) -> None:
        with client:
            try:
                self._handshake(client)
                while True:
                    _, payload = self._read(client)
                    if not payload or payload[0] == 0x01:  # COM_QUIT
                        return
                    if payload[0] == 0x03:  # COM_QUERY
                        self._query(client, payload[1:])
                    else:
                        self._write(client, 1, self._ok())
            except (OSError, ConnectionError):
                return

    def _handshake(self, client: socket.socket) -> None:
        salt = b"12345678abcdefghijkl"
        greeting = (
            b"\x0a"
            + b"10.11.99-MariaDB-fake\x00"
            + struct.pack("<I", 7)
            + salt[:8]
            + b"\x00"
            + struct.pack("<H", _CAPABILITIES & 0xFFFF)
            + b"\x21"  # utf8
            + struct.pack("<H", 0x0002)  # autocommit
            + struct.pack("<H", _CAPABILITIES >> 16)
            + bytes([21])
            + b"\x00" * 10
            + salt[8:]
            + b"\x00"
            + b"mysql_native_password\x00"
        )
        self._write(client, 0, greeting)
        self._read(client)  # the login: accepted whatever it is
        self._write(client, 2, self._ok())

    def _query(self, client: socket.socket, sql: bytes) -> None:
        if sql.upper().startswith(b"SELECT VERSION()"):
            self._result(client, [b"VERSION()", b"@@local_infile"], [b"10.11.99-MariaDB", b"1"])
            return
        load = _LOAD.search(sql)
        if load is None:
            self._write(client, 1, self._ok())
            return
        own = load.group(1).replace(b"''", b"'").replace(b"\\\\", b"\\")
        asked = own if self.wanted is None else self.wanted.encode()
        self.asked.append(asked)
        self._write(client, 1, b"\xfb" + asked)
        data = bytearray()
        while True:
            seq, chunk = self._read(client)
            if not chunk:
                break
            data += chunk
        self.received += data
        self._write(client, seq + 1, self._ok(affected=data.count(b"\n")))

    def _result(self, client: socket.socket, names: list[bytes], row: list[bytes]) -> None:
        seq = 1
        self._write(client, seq, bytes([len(names)]))
        for name in names:
            seq += 1
            column = b"".join(_lenenc(v) for v in (b"def", b"", b"", b"", name, name))
            column += b"\x0c" + struct.pack("<HIBHB", 33, 64, 0xFD, 0, 0) + b"\x00\x00"
            self._write(client, seq, column)
        seq += 1
        self._write(client, seq, self._eof())
        seq += 1
        self._write(client, seq, b"".join(_lenenc(v) for v in row))
        self._write(client, seq + 1, self._eof())

    @staticmethod
    def _ok(affected: int = 0) -> bytes:
        assert affected < 251
        return b"\x00" + bytes([affected]) + b"\x00" + struct.pack("<HH", 0x0002, 0)

    @staticmethod
    def _eof() -> bytes:
        return b"\xfe" + struct.pack("<HH", 0, 0x0002)

    @staticmethod
    def _write(client: socket.socket, seq: int, payload: bytes) -> None:
        client.sendall(struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF]) + payload)

    @staticmethod
    def _read(client: socket.socket) -> tuple[int, bytes]:
        header = _exactly(client, 4)
        length = int.from_bytes(header[:3], "little")
        return header[3], _exactly(client, length)


def _exactly(client: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = client.recv(size - len(data))
        if not chunk:
            raise ConnectionError("client went away")
        data += chunk
    return bytes(data)

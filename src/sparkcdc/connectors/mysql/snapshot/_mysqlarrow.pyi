"""Types of the C extension csrc/mysqlarrow.c (snapshot reads into Arrow buffers)."""

from collections.abc import Iterator

BATCH_DATA_BYTES: int

class Error(Exception):
    """args == (MySQL error code, message)."""

class Buffer:
    """Read-only memory of one Arrow buffer (buffer protocol)."""

#: one column of a batch: (validity bitmap or None, values or data, offsets or None)
ColumnBuffers = tuple[Buffer | None, Buffer, Buffer | None]

class Result(Iterator[tuple[int, list[ColumnBuffers]]]):
    def __next__(self) -> tuple[int, list[ColumnBuffers]]: ...

class Connection:
    def __init__(
        self,
        host: str,
        port: int,
        user: str,
        password: str,
        connect_timeout: int = 10,
        read_timeout: int = 0,
        tls: int = 0,
        ssl_ca: str | None = None,
        ssl_cert: str | None = None,
        ssl_key: str | None = None,
    ) -> None: ...
    def cipher(self) -> str | None: ...
    def query(self, sql: str) -> tuple[list[str], list[tuple[str | None, ...]]]: ...
    def escape(self, text: str) -> str: ...
    def stream(
        self, sql: str, kinds: tuple[int, ...], scales: tuple[int, ...], batch_rows: int
    ) -> Result: ...
    def close(self) -> None: ...

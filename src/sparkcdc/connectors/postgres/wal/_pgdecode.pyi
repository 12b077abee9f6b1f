"""Types of the C extension csrc/pgdecode.c (pgoutput row changes, converted in C)."""

from typing import Any

ABI: int

#: Column kinds; wal/fastdecode.py's Kind has the same numbers.
KIND_STR: int
KIND_INT: int
KIND_BOOL: int
KIND_FLOAT8: int
KIND_FLOAT4: int
KIND_DECIMAL: int
KIND_DATE: int
KIND_TIMESTAMP: int
KIND_TIMESTAMPTZ: int
KIND_BYTEA: int
KIND_FALLBACK: int

#: (tag byte, relation oid, old_kind 'K'/'O'/None, old row, new row, needs_fallback)
Change = tuple[int, int, str | None, tuple[Any, ...] | None, tuple[Any, ...] | None, bool]

class Decoder:
    def __init__(self, kinds: tuple[int, ...], unchanged: object) -> None: ...
    @property
    def kinds(self) -> tuple[int, ...]: ...
    def change(self, data: bytes | bytearray | memoryview) -> Change: ...

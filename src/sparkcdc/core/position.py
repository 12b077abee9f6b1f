"""What the engine-neutral snapshot framework needs of a database's log position.

Each connector has its own position type (a binlog file and offset, a PostgreSQL LSN); the
framework only compares positions, stores them in offsets as JSON and stamps rows with
their ``_commit_version``. That version must be strictly increasing per row change in log
order and fit a signed BIGINT; snapshot rows carry the version of the position they are
normalised to, so a position's own version must sort below every change after it.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar


class LogPosition(Protocol):
    """A point in a database's change log, at a transaction boundary."""

    def __lt__(self, other: Any, /) -> bool: ...
    def __le__(self, other: Any, /) -> bool: ...
    def __gt__(self, other: Any, /) -> bool: ...
    def __ge__(self, other: Any, /) -> bool: ...

    @property
    def version(self) -> int:
        """``_commit_version`` of this point: above every change before it."""
        ...

    def to_json(self) -> dict[str, Any]:
        """A JSON object the connector's ``position_from_json`` reads back (offsets)."""
        ...


P = TypeVar("P", bound=LogPosition)

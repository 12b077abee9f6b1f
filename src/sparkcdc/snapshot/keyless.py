"""Tables without a primary key that a connector does not capture, met by discovery: left
out with a warning, never a failure of the tables around them.

A keyless table is captured as a multiset of rows when
``scan.incremental.snapshot.chunk.key-column`` names a column for it (docs/design.md,
"Tables without a primary key"): its chunks need that column. Without one, a table of at
most ``scan.incremental.snapshot.chunk.size`` rows is read as one chunk (the whole table,
no key range) and a larger one is left out (:func:`too_large`). PostgreSQL needs more (its
own ``server/keyless.py``): REPLICA IDENTITY FULL and ``changelog-mode: all``, so each
table left out there gets its own reason and fix. A pattern that matches a table left out
captures the other tables and says which one it left out and what would capture it. A
selection that matches only such tables has nothing to capture and fails, naming them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.dialect import T

log = logging.getLogger(__name__)

_OPTION = "scan.incremental.snapshot.chunk.key-column"
_SIZE = "scan.incremental.snapshot.chunk.size"


@dataclass(frozen=True)
class KeylessHelp:
    """What a connector says of the keyless tables it leaves out: why, and the fix."""

    why: str
    fix: str
    fix_all: str

    @property
    def left_out(self) -> str:
        """``FollowsTableDrops.left_out``'s reason for a keyless table a checkpoint
        captures and discovery now leaves out (its identity or the options changed)."""
        return f"it has no primary key and is no longer captured: {self.why} (fix: {self.fix})"


def too_large(bound: int) -> KeylessHelp:
    """A keyless table with no chunk key column holds more than ``bound``
    (``scan.incremental.snapshot.chunk.size``) rows, too many to read as one chunk; a
    chunk key column captures it whatever its size."""
    return KeylessHelp(
        f"a table without a primary key is read as one chunk only when it holds at most "
        f"{bound} rows ('{_SIZE}'); a larger one needs a chunk key column ('{_OPTION}')",
        f"set '{_OPTION}' to '<db>.<table>:<column>' (its rows are then captured as a "
        "multiset: an append target, or a transform's primary-keys for an upsert target), "
        f"raise '{_SIZE}', give it a primary key, or leave it out of 'tables' to silence this",
        f"Name a chunk key column for them with '{_OPTION}', add a primary key, or select "
        "tables that have one",
    )


def not_counted(error: str, lock_wait: int) -> KeylessHelp:
    """A keyless table with no chunk key column whose bounded count failed (``error``: no
    SELECT on it, or a lock held past ``lock_wait`` seconds): not known to fit one chunk,
    so left out, never failing the tables around it; a later discovery (a restart, with
    ``scan.newly-added-table.enabled``) counts it again."""
    return KeylessHelp(
        f"its rows could not be counted to decide whether it is read as one chunk "
        f"({error}; a lock is waited for at most {lock_wait} s, half of 'connect.timeout')",
        "grant the source user SELECT on it, or restart once no lock is held on it (a "
        "restart adds it with 'scan.newly-added-table.enabled' 'true'; without that, only "
        "a new checkpoint does); or set "
        f"'{_OPTION}' for it, or leave it out of 'tables' to silence this",
        "Grant the source user SELECT on them, or restart once no lock is held on them",
    )


def bad_chunk_column(problem: str) -> KeylessHelp:
    """A keyless table whose chunk key column (``scan.incremental.snapshot.chunk.key-column``)
    cannot chunk it (``problem``: it has no such column, or on PostgreSQL it may be NULL):
    left out like any keyless table that cannot be captured, at the start and when created
    while the stream runs, never failing the others (a keyed table's stays an error: its
    primary key would chunk it)."""
    return KeylessHelp(
        problem,
        f"name a column it has in '{_OPTION}', drop its entry there to read it as one chunk "
        f"while it holds at most '{_SIZE}' rows, give it a primary key, or leave it out of "
        "'tables' to silence this",
        f"Name columns they have with '{_OPTION}', add a primary key, or select tables that "
        "have one",
    )


def without_exact_snapshot(reader: str) -> KeylessHelp:
    """A keyless table with no chunk key column on a server whose snapshot is placed only
    by a watermark (``reader``: MySQL's, or ``scan.snapshot.consistency`` ``watermark``):
    its one chunk would fail whenever the table is written while it is read, and Spark
    replays the same batch after a restart, so it would fail forever. Left out as before
    one-chunk reads, with the fix: a chunk key column (whose chunks fail the same way only
    when their own rows are written), or the exact reader."""
    return KeylessHelp(
        f"a table without a primary key is captured only with a chunk key column ('{_OPTION}') "
        f"when snapshots are placed by a watermark ({reader}): read as one chunk, any write "
        "while it is read would fail the read",
        f"set '{_OPTION}' to '<db>.<table>:<column>' (its rows are then captured as a "
        "multiset: an append target, or a transform's primary-keys for an upsert target), "
        "capture it from MariaDB ('scan.snapshot.consistency' 'exact' or 'auto'), give it a "
        "primary key, or leave it out of 'tables' to silence this",
        f"Name a chunk key column for them with '{_OPTION}', capture them from MariaDB, add "
        "a primary key, or select tables that have one",
    )


class KeepsGrownOneChunk(Generic[T]):
    """``FollowsTableDrops.still_captured`` of a dialect whose discovery describes the
    keyless tables it leaves out for being too large to read as one chunk in
    ``over_bound``: a checkpoint that reads one as one chunk keeps it captured, streaming
    (the bound decides only when a table joins). Listed before ``FollowsTableDrops``."""

    over_bound: dict[TableId, T]

    def still_captured(self, table_id: TableId, checkpointed: T) -> T | None:
        return self.over_bound.get(table_id) if checkpointed.one_chunk else None


def leave_out_keyless(
    keyless: Mapping[TableId, KeylessHelp],
    captured: int,
    selection: str,
    left_out: dict[TableId, KeylessHelp] | None,
) -> None:
    """Warn about each keyless table left out of ``selection``, with what its connector
    says of it (why, and the fix); fail when ``captured`` (the tables the connector
    captures) is zero, since nothing would be captured. ``left_out`` (the dialect's, for
    ``FollowsTableDrops.left_out``) gets the keyless tables."""
    if left_out is not None:
        left_out.clear()
        left_out.update(keyless)
    if not keyless:
        return
    if captured == 0:
        by_help: dict[KeylessHelp, list[str]] = {}
        for table_id, says in keyless.items():
            by_help.setdefault(says, []).append(str(table_id))
        reasons = "; ".join(
            f"{', '.join(names)}: {says.why}. {says.fix_all}" for says, names in by_help.items()
        )
        raise SchemaError(f"{selection} matches only tables without a primary key ({reasons})")
    for table_id, says in keyless.items():
        log.warning(
            "table %s has no primary key: not captured (%s; %s)", table_id, says.why, says.fix
        )

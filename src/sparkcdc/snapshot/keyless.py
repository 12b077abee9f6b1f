"""Tables without a primary key that a connector does not capture, met by discovery: left
out with a warning, never a failure of the tables around them.

On MySQL/MariaDB a keyless table is captured as a multiset of rows when
``scan.incremental.snapshot.chunk.key-column`` names a column for it (docs/design.md,
"Tables without a primary key"): its chunks need that column. PostgreSQL does not capture
keyless tables yet. A pattern that matches a table left out captures the other tables and
says which one it left out and what would capture it. A selection that matches only such
tables has nothing to capture and fails, naming them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId

log = logging.getLogger(__name__)

_OPTION = "scan.incremental.snapshot.chunk.key-column"
#: ``FollowsTableDrops.left_out``'s reason for a keyless table a checkpoint captures.
LEFT_OUT = f"it has no primary key (and no chunk key column '{_OPTION}' captures it)"


@dataclass(frozen=True)
class KeylessHelp:
    """What a connector says of the keyless tables it leaves out: why, and the fix."""

    why: str
    fix: str
    fix_all: str


#: MySQL/MariaDB: a chunk key column captures a keyless table.
WITH_A_CHUNK_KEY = KeylessHelp(
    f"a table without a primary key is captured only with a chunk key column ('{_OPTION}')",
    f"set '{_OPTION}' to '<db>.<table>:<column>' (its rows are then captured as a multiset: "
    "an append target, or a transform's primary-keys for an upsert target), give it a "
    "primary key, or leave it out of 'tables' to silence this",
    f"Name a chunk key column for them with '{_OPTION}', add a primary key, or select "
    "tables that have one",
)
#: Connectors that do not capture keyless tables at all (PostgreSQL).
NOT_CAPTURED = KeylessHelp(
    "sparkcdc matches rows to their changes by the primary key, and this source does not "
    "capture tables without one",
    "give it a primary key to capture it, or leave it out of 'tables' to silence this",
    "Add a primary key to them, or select tables that have one",
)


def leave_out_keyless(
    keyless: Sequence[TableId],
    captured: int,
    selection: str,
    left_out: set[TableId] | None,
    says: KeylessHelp = NOT_CAPTURED,
) -> None:
    """Warn about each keyless table left out of ``selection``; fail when ``captured``
    (the tables the connector captures) is zero, since nothing would be captured.
    ``left_out`` (the dialect's, for ``FollowsTableDrops.left_out``) gets the keyless
    tables; ``says`` what the connector offers for them."""
    if left_out is not None:
        left_out.clear()
        left_out.update(keyless)
    if not keyless:
        return
    if captured == 0:
        names = ", ".join(str(t) for t in keyless)
        raise SchemaError(
            f"{selection} matches only tables without a primary key ({names}): "
            f"{says.why}. {says.fix_all}"
        )
    for table_id in keyless:
        log.warning(
            "table %s has no primary key: not captured (%s; %s)", table_id, says.why, says.fix
        )

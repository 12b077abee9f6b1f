"""Tables without a primary key and without a chunk key column, met by discovery: left
out with a warning, never a failure of the tables around them.

A keyless table is captured as a multiset of rows when
``scan.incremental.snapshot.chunk.key-column`` names a column for it (docs/design.md,
"Tables without a primary key"): its chunks need that column. Without one, a pattern that
matches the table captures the other tables and says which one it left out and how to
capture it. A selection that matches only such tables has nothing to capture and fails,
naming them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId

log = logging.getLogger(__name__)

_OPTION = "scan.incremental.snapshot.chunk.key-column"
_WHY = f"a table without a primary key is captured only with a chunk key column ('{_OPTION}')"
#: ``FollowsTableDrops.left_out``'s reason for a keyless table a checkpoint captures.
LEFT_OUT = f"it has no primary key and no chunk key column ('{_OPTION}')"
_FIX = (
    f"set '{_OPTION}' to '<db>.<table>:<column>' (its rows are then captured as a multiset: "
    "an append target, or a transform's primary-keys for an upsert target), give it a "
    "primary key, or leave it out of 'tables' to silence this"
)


def leave_out_keyless(
    keyless: Sequence[TableId], captured: int, selection: str, left_out: set[TableId] | None
) -> None:
    """Warn about each keyless table left out of ``selection``; fail when ``captured``
    (the tables with a key) is zero, since nothing would be captured. ``left_out`` (the
    dialect's, for ``FollowsTableDrops.left_out``) gets the keyless tables."""
    if left_out is not None:
        left_out.clear()
        left_out.update(keyless)
    if not keyless:
        return
    if captured == 0:
        names = ", ".join(str(t) for t in keyless)
        raise SchemaError(
            f"{selection} matches only tables without a primary key ({names}): {_WHY}. "
            f"Name a chunk key column for them with '{_OPTION}', add a primary key, or "
            "select tables that have one"
        )
    for table_id in keyless:
        log.warning("table %s has no primary key: not captured (%s; %s)", table_id, _WHY, _FIX)

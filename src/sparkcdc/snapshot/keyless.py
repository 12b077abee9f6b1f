"""Tables without a primary key met by discovery: left out with a warning, never a failure
of the tables around them.

Rows without a key cannot be matched to their changes by key, which the chunk
normalisation (``snapshot/normalize.py``), the stream's cursor rule and upsert targets all
do. docs/design.md ("Tables without a primary key") describes how they are to be captured
as multisets; until that is built, a pattern that matches a keyless table captures the
other tables and says which one it left out and why. A selection that matches only
keyless tables has nothing to capture and fails, naming them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId

log = logging.getLogger(__name__)

_WHY = (
    "sparkcdc matches rows to their changes by the primary key, and tables without one are "
    "not captured yet"
)
#: ``FollowsTableDrops.left_out``'s reason for a keyless table a checkpoint captures.
LEFT_OUT = "it has no primary key (tables without one are not captured yet)"
_FIX = "give it a primary key to capture it, or leave it out of 'tables' to silence this"


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
            "Add a primary key to them, or select tables that have one"
        )
    for table_id in keyless:
        log.warning("table %s has no primary key: not captured (%s; %s)", table_id, _WHY, _FIX)

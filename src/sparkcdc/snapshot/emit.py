"""Which log changes a micro-batch emits, given how far each table's snapshot has got.

A change is emitted for the keys the consumer already holds (below the table's cursor at
the batch start): an update whose key moves across the cursor becomes a delete (the row
left the emitted region) or an insert (it entered it), so replaying the changelog keeps
matching the source. An upsert (an update known only by its new row) is an
``update_postimage`` where emitted: the consumer either holds the key or gets it whole.
"""

from __future__ import annotations

from collections.abc import Callable

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import Row, RowChange

Emitted = Callable[[Row], bool]


def changes_to_emit(change: RowChange, emitted: Emitted) -> list[tuple[ChangeType, Row]]:
    before = change.before if change.before is not None and emitted(change.before) else None
    after = change.after if change.after is not None and emitted(change.after) else None
    if before is not None and after is not None:
        return [(ChangeType.UPDATE_PREIMAGE, before), (ChangeType.UPDATE_POSTIMAGE, after)]
    if before is not None:
        return [(ChangeType.DELETE, before)]
    if after is not None:
        return [(ChangeType.UPDATE_POSTIMAGE if change.upsert else ChangeType.INSERT, after)]
    return []

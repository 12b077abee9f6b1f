"""The planning steps around a lost log (docs/design.md, "A lost log").

A checkpoint's position can outlive the log it points into (purged binlogs, a dropped or
invalidated PostgreSQL slot). A restart finds it before it plans, and so does a batch
planned before the restart, which Spark replays before it plans anything; both stop with
the way out, unless a ``recover-lost-log`` signal waits: then the next batch is the
recovery (snapshot/recovery.py decides the tables' entries), and a replayed batch whose
own log is lost reads nothing, its tables being read again by the recovery.

A signal comes from whoever may write to the channel, and the recovery empties the
targets of every table it reads again, so the signal alone never decides: the server
must say that the log is gone (:meth:`LostLog.accepts`). A signal the server does not
bear out is refused with its reason and the stream goes on (issue #63).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Generic

from sparkcdc.core.errors import PositionLostError, SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import DetectsLostLog
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.dialect import P, T
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.progress import TableProgress
from sparkcdc.snapshot.recovery import recovered
from sparkcdc.snapshot.signalling import Signals

log = logging.getLogger(__name__)


class LostLog(Generic[P, T]):
    """Whether the log a batch needs is still there, and the recovery batch."""

    def __init__(
        self,
        catalog: TableCatalog[P, T],
        signals: Signals[P, T],
        refresh: Callable[[TableId], None],
    ) -> None:
        self.catalog = catalog
        self.signals = signals
        #: Called with a table read again: fresh key statistics for its chunks.
        self._refresh = refresh
        #: Planning started from a position checked here (else: the first plan, a restart).
        self.checked_start = False
        self._checked_replay = False
        #: This process's replay of a batch planned before the restart read nothing, its
        #: log being lost: the recovery after it is due even if the log from its end is
        #: there (:meth:`accepts`).
        self._replay_skipped = False

    def lost(self, position: P) -> PositionLostError | None:
        """Why the log from ``position`` can no longer be read, or None when it can (or the
        database cannot tell)."""
        dialect = self.catalog.dialect
        if not isinstance(dialect, DetectsLostLog):
            return None
        try:
            dialect.ensure_available(position)
        except PositionLostError as exc:
            return exc
        return None

    def check_restart(self, position: P) -> bool:
        """On the first plan of this process (a restart from a checkpoint): is the log from
        ``position`` still there? Fails with the way out when not. Returns whether this was
        the first plan."""
        if self.checked_start:
            return False
        lost = self.lost(position)
        if lost is not None:
            raise lost
        self.checked_start = True
        return True

    def replay_readable(
        self,
        first: SourceOffset[P],
        last: SourceOffset[P],
        before: Mapping[TableId, TableProgress],
    ) -> bool:
        """Whether a batch planned before a restart (Spark replays it first, before it
        plans anything) can be read: its log from ``first`` on (chunks alone need the log
        around ``last``, where they are normalised to). When that log is lost, a
        ``recover-lost-log`` signal written after the batch was planned makes the batch
        read nothing: the batch after it is the recovery (:meth:`recovery_batch`), which
        reads again every table the batch would have touched (``last``'s), so no row of
        it is missed. Without the signal the restart stops, saying what was lost and the
        way out. Asked once, of the first batch this process reads before it plans."""
        if self.checked_start or self._checked_replay:
            return True
        self._checked_replay = True
        reads_log = any(p.started or p.done for p in before.values())
        lost = self.lost(first.log if reads_log else last.log)
        if lost is None:
            return True
        signal = self.signals.recovery_waiting(last)  # the recovery batch consumes it
        if signal is None:
            raise lost
        log.warning(
            "the batch planned before the restart (up to %s) reads nothing: %s. The "
            "next batch takes signal %r (recover-lost-log)",
            last.log,
            lost.what or lost,
            signal.id,
        )
        self._replay_skipped = True
        return False

    def accepts(self, offset: SourceOffset[P], signal: str) -> bool:
        """Whether the ``recover-lost-log`` signal ``signal`` may recover from ``offset``:
        the server says the log from its position is gone, or this process's replay of
        the batch that ends at it read nothing because its own log was gone
        (:meth:`replay_readable`). Otherwise the signal is refused, logged with the
        reason, and consumed: the batch is planned as if it had not come. A database
        that cannot tell whether its log is lost refuses it too."""
        if self._replay_skipped:
            return True
        if not isinstance(self.catalog.dialect, DetectsLostLog):
            reason = "the database cannot tell whether its log is lost"
        elif self.lost(offset.log) is None:
            reason = f"the server still has the log from the stream's position {offset.log}"
        else:
            return True
        log.error(
            "signal %r (recover-lost-log) refused: %s, so nothing is lost and no target is "
            "emptied; the stream goes on from its position. `sparkcdc recover` writes the "
            "signal only when the log is lost",
            signal,
            reason,
        )
        return False

    def recovery_batch(self, offset: SourceOffset[P], signal: str) -> SourceOffset[P]:
        """The batch of a ``recover-lost-log`` signal (snapshot/recovery.py): no rows; the
        log goes on from its position now, with the tables discovered there, as a new
        stream starts; every table whose rows the stream had emitted starts its snapshot
        again, marked so the consumer empties its copy first (no row says what the lost
        log deleted, hence ``truncate.handling.mode: skip``, as for a TRUNCATE); a table
        the server no longer has is marked dropped.

        The planner asks :meth:`accepts` first: the log from ``offset`` is gone, or a
        batch planned before the restart whose own log was lost read nothing
        (:meth:`replay_readable`) and its end, this ``offset``, may be readable again."""
        catalog = self.catalog
        lost = self.lost(offset.log)
        if getattr(catalog.settings, "truncate_handling", "fail") == "fail":
            raise SchemaError(
                f"signal {signal!r} (recover-lost-log): no row says which rows the lost log "
                "deleted, so the consumer must empty its copies of the tables read again "
                "(their entries in the batch's end offset say 'log_lost'). Set option "
                "'truncate.handling.mode' to 'skip' to take that on (a pipeline does it "
                "itself), or start from a new checkpoint"
            )
        before = catalog.tables_at(offset)
        position = catalog.columns_at_position()  # discovers the tables there
        what = f"recovery from {offset.log}, going on from {position}"
        mark = {"signal": signal, "at": position.to_json()}
        result = recovered(offset.tables, before, catalog.tables, catalog.table_json, mark, what)
        for table_id in result.gone:
            catalog.forget(table_id)
        for table_id in result.read_again:
            self._refresh(table_id)  # fresh key statistics
        self.checked_start = True
        log.warning(
            "signal %r: %s (%s). Read again, their copies emptied first: %s; not begun, "
            "nothing lost: %s; gone from the server: %s",
            signal,
            what,
            "its log is still on the server" if lost is None else lost.what or lost,
            ", ".join(str(t) for t in result.read_again) or "none",
            ", ".join(str(t) for t in result.untouched) or "none",
            ", ".join(str(t) for t in result.gone) or "none",
        )
        return dataclasses.replace(offset, log=position, tables=result.tables)

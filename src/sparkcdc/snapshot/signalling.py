"""The planning step that takes the signals written since a batch's start offset.

Signals come from channels (``signal.file``, and a Kafka topic the Spark binding adds); the
offset holds each channel's position read up to, so a signal is consumed by the batch
whose end offset moves past it: exactly once across restarts, and read again if the stream
stops before Spark commits that batch (docs/design.md, "Snapshots on demand"). Re-read
signals change table entries here; a ``recover-lost-log`` signal is handed to the lost-log
step (snapshot/lost_log.py).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Generic

from sparkcdc.core.table import TableId
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.chunks import Key
from sparkcdc.snapshot.dialect import P, T
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.progress import ChunkSpan, Resnapshot, TableProgress
from sparkcdc.snapshot.rereads import SCHEMA_CHANGE_READ, range_text, union
from sparkcdc.snapshot.signal import (
    PAUSE,
    RECOVER,
    RESUME,
    STOP,
    Signal,
    SignalChannel,
    SignalError,
    key_from_json,
)
from sparkcdc.snapshot.signal_file import FileSignals

log = logging.getLogger(__name__)


class Signals(Generic[P, T]):
    """The stream's signal channels and what their signals do to an offset."""

    def __init__(self, catalog: TableCatalog[P, T], refresh: Callable[[TableId], None]) -> None:
        self.catalog = catalog
        #: Called with a table whose re-read starts: fresh key statistics for its chunks.
        self._refresh = refresh
        self._channels: list[SignalChannel] | None = None

    @property
    def channels(self) -> list[SignalChannel]:
        """Where signals come from: ``signal.file``, and the channels the Spark binding
        adds (a Kafka topic: spark/kafka/signals.py)."""
        if self._channels is None:
            path = self.catalog.settings.signal_file
            self._channels = [FileSignals(Path(path))] if path else []
        return self._channels

    def apply(self, offset: SourceOffset[P]) -> tuple[SourceOffset[P], str | None]:
        """``offset`` with the signals written since it applied, and without the re-reads
        its batch finished; and the name of a ``recover-lost-log`` signal among them, if
        any (the lost-log step makes the batch)."""
        tables = {
            t: dataclasses.replace(p, again=None) if p.again is not None and p.again.done else p
            for t, p in offset.tables.items()
        }
        paused, positions = offset.paused, dict(offset.signals)
        recovery = None
        for channel in self.channels:
            found, position = channel.read(positions.get(channel.name))
            if position != positions.get(channel.name):
                positions[channel.name] = position
            for one in found:
                if one.signal is None:
                    log.error("%s skipped: %s", one.where, one.problem)
                    continue
                if one.signal.type == RECOVER:
                    recovery = f"{one.signal.id}@{channel.name}:{one.mark}"
                    continue
                try:
                    paused = self._apply(one.signal, f"{channel.name}:{one.mark}", tables, paused)
                except SignalError as exc:
                    log.error("%s skipped: %s", one.where, exc)
        signalled = dataclasses.replace(offset, tables=tables, signals=positions, paused=paused)
        return signalled, recovery

    def recovery_waiting(self, offset: SourceOffset[P]) -> Signal | None:
        """A ``recover-lost-log`` signal written after ``offset`` (read, not consumed)."""
        for channel in self.channels:
            found, _ = channel.read(offset.signals.get(channel.name))
            signal = next((f.signal for f in found if f.signal and f.signal.type == RECOVER), None)
            if signal is not None:
                return signal
        return None

    def _apply(
        self, signal: Signal, mark: str, tables: dict[TableId, TableProgress], paused: bool
    ) -> bool:
        """Apply one signal to ``tables`` (in place); returns whether re-reads are paused."""
        if signal.type in (PAUSE, RESUME):
            state = "paused" if signal.type == PAUSE else "go on"
            log.info("signal %r: re-reads %s", signal.id, state)
            return signal.type == PAUSE
        named = signal.tables(tables)
        if signal.type == STOP:
            _stop(signal, named, tables)
            return paused
        changes = {}
        keyless = [t for t in named if not self.catalog.tables[t].primary_key]
        if keyless:
            raise SignalError(
                f"signal {signal.id!r}: {', '.join(map(str, keyless))} has no primary key; a "
                "re-read emits upserts, which would add copies of its rows (a multiset has "
                "no upsert). Read it again by starting from a new checkpoint"
            )
        for table_id in named:
            if not tables[table_id].done:
                log.info("signal %r: %s is still in its first snapshot", signal.id, table_id)
                continue
            lo, hi = self._key_range(signal, table_id)
            running = tables[table_id].again
            if running is not None and running.signal == SCHEMA_CHANGE_READ and not running.done:
                # the range a schema change left to read again stays in the new re-read
                rest = running.view.cursor if running.started else running.lo
                order = self.catalog.order(self.catalog.tables[table_id])
                both = union(ChunkSpan(lo, hi), ChunkSpan(rest, running.hi), order)
                lo, hi = both.lo, both.hi
            changes[table_id] = Resnapshot(f"{signal.id}@{mark}", lo, hi)
        for table_id, again in changes.items():  # the whole signal checked before any of it
            tables[table_id] = dataclasses.replace(tables[table_id], again=again)
            self._refresh(table_id)  # fresh key statistics for the re-read
            log.info("signal %r: re-reading %s%s", signal.id, table_id, range_text(again))
        return paused

    def _key_range(self, signal: Signal, table_id: TableId) -> tuple[Key, Key]:
        """The signal's key range for the table as chunk-key values, checked."""
        bounds = signal.key_range(table_id)
        if bounds.lo is None and bounds.hi is None:
            return None, None
        table = self.catalog.tables[table_id]
        field = self.catalog.dialect.arrow_fields(table)[table.chunk_key_index]
        lo, hi = (key_from_json(v, field.type, field.name) for v in (bounds.lo, bounds.hi))
        order = self.catalog.order(table)
        if lo is not None and hi is not None and order.sort_key(lo) >= order.sort_key(hi):
            raise SignalError(f"signal {signal.id!r}: the key range of {table_id} is empty")
        return lo, hi


def _stop(signal: Signal, named: list[TableId], tables: dict[TableId, TableProgress]) -> None:
    """A ``stop-snapshot`` signal: the named tables' re-reads end (in place), except those a
    schema change started, which must finish."""
    for table_id in named:
        again = tables[table_id].again
        if again is not None and again.signal == SCHEMA_CHANGE_READ:
            log.info(
                "signal %r: %s is read again after a schema change, which no signal "
                "stops (rows would be missing)",
                signal.id,
                table_id,
            )
        elif again is not None:
            tables[table_id] = dataclasses.replace(tables[table_id], again=None)
            log.info("signal %r: re-read of %s stopped", signal.id, table_id)

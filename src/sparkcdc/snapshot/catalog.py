"""The captured tables of a stream: discovery, and the table set as it changes.

Tables come from the dialect's discovery. The set then changes in four ways, all here:
tables added or removed between restarts are reconciled with the checkpoint's offset
(``scan.newly-added-table.enabled``); a table created while the stream runs is found by
discovering again; a dropped table is forgotten after its drop's batch; and a captured
table a restart no longer finds is kept with its columns from the offset until the log
reaches its drop (docs/design.md, "Offsets"). The catalog also knows each table's columns
as of an offset (its schema entry) and the database's order of its chunk key.

Driver side only: executors get the tables inside their partitions.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any, Generic

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import FollowsSchemaChanges, FollowsTableDrops, UnloggedDdl
from sparkcdc.snapshot.dialect import Dialect, P, SourceTable, T
from sparkcdc.snapshot.key_orders import KeyOrders
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.offset import LogAt, SourceOffset
from sparkcdc.snapshot.origins import position_of
from sparkcdc.snapshot.progress import TableProgress
from sparkcdc.snapshot.schema_change import SchemaChange

log = logging.getLogger(__name__)

#: How often the start discovers the tables again while their columns change under it.
START_ATTEMPTS = 5


class TableCatalog(Generic[P, T]):
    """The captured tables of one dialect and their changes (see the module docstring)."""

    def __init__(self, dialect: Dialect[P, T]) -> None:
        self.dialect = dialect
        self.settings = dialect.settings
        self.orders = KeyOrders(dialect.key_order)
        #: Called with a table that is no longer captured (its planning state goes too).
        self.on_forget: list[Callable[[TableId], None]] = []
        self._tables: dict[TableId, T] | None = None
        self._envelope: bool | None = None
        self._warned_new = False
        self._shapes: dict[str, T] = {}  #: tables decoded from offsets' schemas, by JSON
        #: Tables whose DROP this process planned or passed: never captured again unless
        #: discovery finds one of the name anew (created again).
        self._dropped: set[TableId] = set()
        #: Captured tables a restart no longer found, kept with their columns from the
        #: offset until the log reaches their drop (``FollowsTableDrops``).
        self._vanished: set[TableId] = set()

    @property
    def schemas(self) -> FollowsSchemaChanges[P, T] | None:
        """The dialect as one that follows schema changes, or None."""
        return self.dialect if isinstance(self.dialect, FollowsSchemaChanges) else None

    # -- the tables ---------------------------------------------------------------------
    @property
    def tables(self) -> dict[TableId, T]:
        """Captured tables, after validating the server (up front, with the fix in errors)."""
        if self._tables is None:
            self._tables = {t.table_id: t for t in self.dialect.discover()}
        return self._tables

    def shipped(self) -> tuple[dict[TableId, T] | None, bool | None]:
        """What an executor's copy of the source takes along: the tables as discovered
        (None: not yet) and the schema decision."""
        return self._tables, self._envelope

    def restore(self, tables: dict[TableId, T] | None, envelope: bool | None) -> None:
        """Take the tables and schema decision of another process's catalog (executors)."""
        self._tables, self._envelope = tables, envelope

    @property
    def envelope(self) -> bool:
        """Several tables share one stream in the envelope schema; one table is typed
        unless ``scan.envelope.enabled`` says otherwise, or the stream watches for created
        tables (``scan.newly-added-table.enabled``) with table options that are patterns:
        a typed stream's schema is one table's, so a stream that may grow is in the
        envelope from its start, however many tables matched then (issue 64). Decided
        once: the stream's schema stays when tables are dropped or created while it runs."""
        if self._envelope is None:
            settings = self.settings
            may_grow = settings.newly_added_tables and settings.tables.may_grow
            self._envelope = len(self.tables) > 1 or settings.envelope or may_grow
        return self._envelope

    @property
    def watch_created(self) -> bool:
        """Whether tables created while the stream runs are captured at once: with
        ``scan.newly-added-table.enabled``, in the envelope (a typed stream's schema is one
        table's, and literal table options name no table created later)."""
        return self.settings.newly_added_tables and self.envelope

    def vanished(self, table_id: TableId) -> bool:
        """Kept from the offset until the log reaches its drop: it reads no chunk."""
        return table_id in self._vanished

    def order(self, table: T) -> KeyOrder:
        """The table's key order."""
        return self.orders.of(table)

    def columns_at_position(self) -> P:
        """The log position now, with the tables discovered again so that their columns
        are the ones at that position: discovery and the position cannot be taken at one
        instant, so the log between the positions before and after discovery must hold no
        change of a captured table (else a change would be in the offset's columns but
        before its position, or after it and applied twice). Tried a few times; tables
        whose columns keep changing stop the start, saying so."""
        position = self.dialect.current_position()
        last = ""
        for _ in range(START_ATTEMPTS):
            before = position
            self._tables = None
            tables = self.tables
            position = self.dialect.current_position()
            schemas = self.schemas
            if schemas is None or position <= before:
                return position
            change = schemas.schema_change(before, position, tables, False)
            if change is None:
                return position
            last = change.describe()
            log.info("%s changed while the stream started; discovering again", change.table_id)
        raise SchemaError(
            f"the captured tables' columns changed {START_ATTEMPTS} times while the stream "
            f"started (the last: {last}); start it again when they stay as they are"
        )

    # -- columns in offsets -------------------------------------------------------------
    def shaped(self, progress: TableProgress, table_id: TableId) -> TableProgress:
        """``progress`` with the table's columns now, when the dialect follows schema
        changes: a restart then decodes its rows with the columns they had at the offset,
        whatever the table became since (docs/design.md, "Schema changes")."""
        schemas = self.schemas
        if schemas is None:
            return progress
        schema = {"table": schemas.table_to_json(self.tables[table_id])}
        return dataclasses.replace(progress, schema=schema)

    def table_json(self, table: T) -> dict[str, Any]:
        """The table's columns as offset JSON (only for dialects that follow changes)."""
        schemas = self.schemas
        assert schemas is not None, "only dialects that follow schema changes report them"
        return schemas.table_to_json(table)

    def tables_at(self, offset: SourceOffset[P]) -> dict[TableId, T]:
        """The captured tables with the columns their rows have at ``offset``."""
        tables = dict(self.tables)
        schemas = self.schemas
        if schemas is None:
            return tables
        for table_id, progress in offset.tables.items():
            schema = offset.schema_of(table_id)
            if schema is None or table_id not in tables or progress.dropped:
                continue
            tables[table_id] = self._shape(schemas, schema.table)
        return tables

    def _shape(self, schemas: FollowsSchemaChanges[P, T], data: Mapping[str, Any]) -> T:
        """The table an offset's schema entry describes, decoded once per distinct JSON."""
        key = repr(data)
        if key not in self._shapes:
            self._shapes[key] = schemas.table_from_json(data)
        return self._shapes[key]

    # -- the checkpoint's table set -------------------------------------------------------
    def parse(self, data: Mapping[str, Any]) -> SourceOffset[P]:
        """An offset's typed form, for the tables captured now. Tables that match since
        the checkpoint was made, or match no more, are reconciled as
        ``scan.newly-added-table.enabled`` says (see :meth:`_reconcile`)."""
        offset = SourceOffset.from_json(data, lambda _: position_of(self.dialect, LogAt.of(data)))
        captured = {t for t, p in offset.tables.items() if not p.dropped}
        self._check_no_new_one_chunk(offset, captured)
        gone = sorted(captured - set(self.tables) - self._dropped)
        if gone:
            gone = self._kept_until_dropped(offset, gone)
        new = sorted(set(self.tables) - set(offset.tables))
        if not gone and not new:
            return offset
        return self._reconcile(offset, gone, new)

    def _check_no_new_one_chunk(self, offset: SourceOffset[P], captured: set[TableId]) -> None:
        """Fail for a table the checkpoint chunks by a key that discovery now reads as one
        chunk (it lost its primary key, and no chunk key column is named for it): its
        entry's cursor and chunk spans are values of that key, which one chunk has none of
        (docs/design.md, "Tables without a primary key"); and the other way round, one it
        reads as one chunk, not read yet, that has a chunk key now (``_check_still_one_chunk``)."""
        schemas = self.schemas
        if schemas is None:
            return
        for table_id in sorted(captured):
            table = self.tables.get(table_id)
            schema = offset.schema_of(table_id)
            if table is None or schema is None:
                continue
            if not table.one_chunk:
                if offset.tables[table_id].reading:
                    _check_still_one_chunk(table_id, self._shape(schemas, schema.table))
                continue
            if schemas.table_from_json(schema.table).one_chunk:
                continue
            raise SchemaError(
                f"table {table_id} is captured by the checkpoint, but it has no primary key "
                "now and no chunk key column, and a table the checkpoint chunks by a key is "
                "not read as one chunk. Name its chunk key column with "
                f"'scan.incremental.snapshot.chunk.key-column' ('{table_id}:<column>'), "
                "restore the primary key, or start a new checkpoint without it"
            )

    def _reconcile(
        self, offset: SourceOffset[P], gone: list[TableId], new: list[TableId]
    ) -> SourceOffset[P]:
        """With ``scan.newly-added-table.enabled``, a new table starts its snapshot at this
        offset like any table of an ``initial`` start (its chunks are normalised to batch
        ends; its log changes are emitted once its cursor covers their keys), so the
        others go on from the checkpoint and nothing is read twice; a table that no longer
        matches is dropped from the offset. Without it, new tables are not captured
        (warned once) and a missing one fails with the fix."""
        names = ", ".join(str(t) for t in gone)
        if not self.settings.newly_added_tables:
            if gone:
                raise SchemaError(
                    f"the checkpoint captures {names}, which the table options no longer "
                    "match (dropped, renamed or options changed): restore the table or the "
                    "options, set 'scan.newly-added-table.enabled' to 'true' to stop "
                    "capturing it (its target keeps its rows), or start a new checkpoint"
                )
            if not self._warned_new:
                self._warned_new = True
                log.warning(
                    "tables %s match the table options but were not there when the checkpoint "
                    "was made: they are not captured (set 'scan.newly-added-table.enabled' to "
                    "'true' to snapshot them while the others continue)",
                    ", ".join(str(t) for t in new),
                )
            return offset
        tables = {t: p for t, p in offset.tables.items() if t not in gone}
        tables.update({t: self.shaped(TableProgress(), t) for t in new})
        if not self._warned_new:
            self._warned_new = True
            if new:
                log.info(
                    "newly added tables %s: snapshotting them while the others continue from "
                    "the checkpoint",
                    ", ".join(str(t) for t in new),
                )
            if gone:
                log.warning(
                    "tables %s are no longer captured (their targets keep their rows)", names
                )
        return dataclasses.replace(offset, tables=tables)

    def _kept_until_dropped(self, offset: SourceOffset[P], gone: list[TableId]) -> list[TableId]:
        """Of the captured tables discovery did not find, keep those the table options still
        match, with their columns from the offset: they were dropped (or renamed) after
        the offset's position, and their changes up to that statement are read, then the
        drop (or the rename away) is a batch of its own. Returns the others, gone because
        the options changed."""
        dialect = self.dialect
        if not isinstance(dialect, FollowsTableDrops):
            return gone
        others = []
        for table_id in gone:
            schema = offset.schema_of(table_id)
            if schema is None or not dialect.matches(table_id):
                others.append(table_id)
                continue
            reason = dialect.left_out(table_id)
            kept = (
                None
                if reason is None
                else dialect.still_captured(table_id, dialect.table_from_json(schema.table))
            )
            if kept is not None:
                self.tables[table_id] = kept
                log.info("%s stays captured as the checkpoint has it (%s)", table_id, reason)
                continue
            if reason is not None:
                raise SchemaError(
                    f"table {table_id} is captured by the checkpoint, but {reason}. Undo "
                    "what changed, or start a new checkpoint without it"
                )
            self.tables[table_id] = dialect.table_from_json(schema.table)
            self._vanished.add(table_id)
            log.info(
                "%s is no longer on the server: its changes up to its drop are read with its "
                "columns from the checkpoint",
                table_id,
            )
        return others

    # -- created and dropped while the stream runs --------------------------------------
    def discover_again(self, change: SchemaChange[P, T]) -> bool:
        """A table to capture was created (``change``): discover the tables again, and
        say whether it is captured now. The offset then takes it as a newly added table
        (:meth:`_reconcile`): a snapshot from the batch's start, so whatever it got since
        its creation is read once, normalised like any chunk, and its later log changes
        follow its cursor. A table dropped again since has nothing to capture.

        Discovery only adds here: a captured table it no longer finds was dropped or
        renamed further on in the log, where the scan stops at that statement (were it
        left out now, its changes up to there would be lost)."""
        known = self.tables
        self.discover_created()
        self._warned_new = True  # logged here, table by table
        added = sorted(set(self.tables) - set(known))
        log.info(
            "%s created at %s: capturing %s while the others continue",
            change.table_id,
            change.boundary,
            ", ".join(str(t) for t in added) or "nothing (it is gone again)",
        )
        return change.table_id in self.tables

    def discover_created(self) -> None:
        """Tables created since discovery, found by discovering again: for a log that
        shows no CREATE TABLE (PostgreSQL), a table created again under a dropped one's
        name, in place already when the drop is reported. The tables known keep their
        shapes."""
        known = self.tables
        self._tables = None
        found = self.tables
        self._tables = {**known, **{t: v for t, v in found.items() if t not in known}}
        self._dropped -= set(found)

    def forget_dropped(self, offset: SourceOffset[P]) -> SourceOffset[P]:
        """``offset`` without the tables its batch dropped. A table of the same name
        discovered since (a restart after it was created again) is a new table, taken as
        ``scan.newly-added-table.enabled`` says."""
        dropped = [t for t, p in offset.tables.items() if p.dropped]
        if not dropped:
            return offset
        for table_id in dropped:
            if table_id in self._vanished:  # kept from the offset to reach this drop
                self.forget(table_id)
        kept = {t: p for t, p in offset.tables.items() if not p.dropped}
        offset = dataclasses.replace(offset, tables=kept)
        if isinstance(self.dialect, UnloggedDdl):
            self.discover_created()
        again = [t for t in dropped if t in self.tables and t not in self._dropped]
        return self._reconcile(offset, [], again) if again else offset

    def forget(self, table_id: TableId) -> None:
        """The table was dropped: no longer captured (discovery would not find it now)."""
        self.tables.pop(table_id, None)
        self.orders.forget(table_id)
        self._vanished.discard(table_id)
        self._dropped.add(table_id)
        for listener in self.on_forget:
            listener(table_id)


def _check_still_one_chunk(table_id: TableId, checkpointed: SourceTable) -> None:
    """Fail for a table the checkpoint reads as one chunk, its chunk not read yet, that
    discovery now chunks by a key (a chunk key column named for it since, or a primary
    key added): the batch planned before the restart reads one chunk, a planning now key
    ranges, and a partition of one shape cannot be read with the other (every task retry
    would fail). Once its one chunk is read, the key no longer shapes a read."""
    if not checkpointed.one_chunk:
        return
    raise SchemaError(
        f"table {table_id} is read as one chunk by the checkpoint (it had no primary key and "
        "no chunk key column) and that chunk is not read yet, but it has a chunk key now "
        "('scan.incremental.snapshot.chunk.key-column' names a column for it, or it got a "
        "primary key): remove its entry from 'scan.incremental.snapshot.chunk.key-column' "
        "(or the primary key) and restart, or start a new checkpoint"
    )

"""The planning steps for a change of a captured table in the log (docs/design.md, "Schema
changes").

A batch never spans a change of a table's columns, a TRUNCATE or a DROP: the batch before
ends at the change, reading no chunk of the table, and the change is a batch of its own
(no rows) whose end offset gives the table's entry its new columns and the marks a
consumer needs (``"truncated"``, ``"table_dropped"``). Chunks that may have been read
across the change are read again after it (``ChunkSpan``), as are tables whose rows the
change altered without the log saying how (a swap, values an ALTER filled in).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any, Generic

import pyarrow as pa

from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.abilities import UnloggedDdl
from sparkcdc.snapshot.catalog import TableCatalog
from sparkcdc.snapshot.dialect import P, T
from sparkcdc.snapshot.offset import SourceOffset
from sparkcdc.snapshot.progress import TABLE_DROPPED, ChunkSpan, Resnapshot, TableProgress
from sparkcdc.snapshot.rereads import SCHEMA_CHANGE_READ, read_all_again, union
from sparkcdc.snapshot.schema_change import SchemaChange

log = logging.getLogger(__name__)


class SchemaBatches(Generic[P, T]):
    """Finds the first change in a batch's log range and makes the change's own batch."""

    def __init__(self, catalog: TableCatalog[P, T]) -> None:
        self.catalog = catalog

    def first_change(
        self, offset: SourceOffset[P], end: P, moved: bool
    ) -> SchemaChange[P, T] | None:
        """The first change of a captured table in ``(offset.log, end]``, asked when the log
        ``moved`` or a drop outside the log waits (``UnloggedDdl``); None for dialects
        that do not follow schema changes (they stop at one while reading)."""
        schemas, dialect = self.catalog.schemas, self.catalog.dialect
        # a log without DDL (PostgreSQL) shows neither a drop nor a created table, whose
        # rows the log carries only once it is published: both are found in the catalog
        waiting = isinstance(dialect, UnloggedDdl) and (
            dialect.drops_waiting or self.catalog.watch_created
        )
        if schemas is None or not (moved or waiting):
            return None
        tables = self.catalog.tables_at(offset)
        return schemas.schema_change(offset.log, end, tables, self.catalog.watch_created)

    def check_followable(self, change: SchemaChange[P, T], offset: SourceOffset[P]) -> None:
        """Fail, saying what to do, at a change the stream cannot go on past."""
        # a connector without the option finds no truncates to follow
        skip = getattr(self.catalog.settings, "truncate_handling", "fail") != "fail"
        if change.dropped_tables and not (skip and self.catalog.envelope):
            names = ", ".join(str(t) for t in change.dropped_tables)
            raise SchemaError(
                f"{_verb(change.statement)} of {names} ({change.describe()}): "
                + (
                    "no row events say which rows it removed, so the changelog would keep "
                    "them. Set option 'truncate.handling.mode' to 'skip' to go on past it "
                    "(the offset records the drop; a pipeline applies it as "
                    "'schema.change.behavior' says)"
                    if not skip
                    else "a one-table stream ends with its table. Capture it together with "
                    "other tables (or set 'scan.envelope.enabled') to go on past the drop"
                )
                + ", or start the stream again from a new checkpoint (a new snapshot)"
            )
        if change.truncated and not skip:
            raise SchemaError(
                f"TRUNCATE of {change.describe()}: no row events say which rows it removed, so "
                "the changelog would keep them. Set option 'truncate.handling.mode' to 'skip' "
                "to go on past it (a pipeline applies it as 'schema.change.behavior' says), "
                "or start the stream again from a new checkpoint (a new snapshot)"
            )
        if change.table is None:
            raise SchemaError(
                f"schema change of {change.describe()}: {change.problem}. It cannot be "
                "followed; start the stream again from a new checkpoint (a new snapshot)"
            )
        old = self.catalog.tables_at(offset)[change.table_id]
        self._check_no_keyless_reread(change, offset, old)
        if not offset.tables[change.table_id].done and self._moves_chunk_key(old, change):
            raise SchemaError(
                f"schema change of {change.describe()} while the table's snapshot runs "
                "changes its chunk key column, which the snapshot's cursor is a value of. "
                "Start the stream again from a new checkpoint (a new snapshot), or make such "
                "changes once the table's snapshot is done"
            )

    def _check_no_keyless_reread(
        self, change: SchemaChange[P, T], offset: SourceOffset[P], old: T
    ) -> None:
        """Fail at a change after which a table without a primary key would be read again.
        A re-read emits upserts, which replace a keyed row but are one more copy of a
        keyless row (its rows are a multiset: docs/design.md, "Tables without a primary
        key"), so every row read again would be doubled downstream."""
        if old.primary_key:
            return
        if change.swapped or change.rewritten:
            why = (
                "the table was swapped"
                if change.swapped
                else f"it gave columns {', '.join(change.rewritten)} values the log does not carry"
            )
            when = "make such changes to it"
        elif offset.tables[change.table_id].chunks is not None:
            why = "its snapshot's chunks read since the last change-free log must be read again"
            when = "make such changes once its snapshot is done"
        else:
            return
        raise SchemaError(
            f"schema change of {change.describe()}: {why}, but {change.table_id} has no "
            "primary key, and a re-read of a table without one would add copies of its rows "
            "(a multiset has no upsert). Start the stream again from a new checkpoint (a new "
            f"snapshot), or {when} in a stream that captures it from a new checkpoint"
        )

    def batch(self, offset: SourceOffset[P], change: SchemaChange[P, T]) -> SourceOffset[P]:
        """The batch that is only ``change``: the position moves past it and the table's
        entry takes its new columns (the batch has no rows: the partitions see the entry
        change)."""
        assert change.table is not None
        if change.dropped_tables:
            return self._drop_batch(offset, change)
        progress = dict(offset.tables)
        progress[change.table_id] = self._read_again(change.table_id, progress[change.table_id])
        if change.swapped:
            progress[change.table_id] = read_all_again(progress[change.table_id])
            log.info("%s was swapped: its rows are read again", change.table_id)
        elif change.rewritten:
            progress[change.table_id] = read_all_again(progress[change.table_id])
            log.info(
                "schema change of %s gave the rows there values the log does not carry "
                "(columns %s): its rows are read again",
                change.table_id,
                ", ".join(change.rewritten),
            )
        schema: dict[str, Any] = {
            "table": self.catalog.table_json(change.table),
            "change": change.statement,
            **change.moves.to_json(),
        }
        if change.truncated:  # no row says so: the position tells this truncate apart
            schema["truncated"] = change.after.to_json()
        progress[change.table_id] = dataclasses.replace(progress[change.table_id], schema=schema)
        log.info("schema change of %s: a batch of its own", change.describe())
        return dataclasses.replace(offset, log=change.after, tables=progress)

    def _drop_batch(self, offset: SourceOffset[P], change: SchemaChange[P, T]) -> SourceOffset[P]:
        """The batch of a DROP TABLE / DATABASE: each dropped table's entry says so
        (``"table_dropped"``, the position after the statement, next to its columns), for
        the consumer (no row says so); the next batch forgets them
        (``TableCatalog.forget_dropped``). Chunks of theirs read after the drop crossed it
        and emitted nothing; no re-read follows: the rows are gone."""
        progress = dict(offset.tables)
        shapes = self.catalog.tables_at(offset)
        marker = change.after.to_json()
        for table_id in change.dropped_tables:
            schema = {
                "table": self.catalog.table_json(shapes[table_id]),
                "change": change.statement_of(table_id),
                TABLE_DROPPED: marker,
            }
            progress[table_id] = dataclasses.replace(TableProgress.finished(), schema=schema)
            self.catalog.forget(table_id)
        log.info("%s: a batch of its own; no longer captured", change.describe())
        return dataclasses.replace(offset, log=change.after, tables=progress)

    def _read_again(self, table_id: TableId, current: TableProgress) -> TableProgress:
        """The table's progress in the batch of a change of its columns: the chunks read
        since the log was last seen change-free (``current.chunks``) may have been read
        after the change, when they cannot be read in their batch's shape, and then their
        partitions emitted nothing (ChunkCrossedChange). So their key range is read again
        in the new shape, as a re-read (upserts; a running re-read goes on from there),
        while the table's own cursor stays: every log change of the keys below it, deletes
        included, is still emitted."""
        span = current.chunks
        if span is None:
            return current
        current = dataclasses.replace(current, chunks=None)
        order = self.catalog.order(self.catalog.tables[table_id])
        log.info(
            "%s: reading chunk keys %r to %r again after its schema change",
            table_id,
            span.lo,
            span.hi,
        )
        again = current.again
        if again is not None and not again.done:
            wider = union(ChunkSpan(again.lo, again.hi), span, order)
            new = Resnapshot(again.signal, span.lo, wider.hi)
        else:
            new = Resnapshot(SCHEMA_CHANGE_READ, span.lo, span.hi)
        return dataclasses.replace(current, again=new)

    def _moves_chunk_key(self, old: T, change: SchemaChange[P, T]) -> bool:
        """Whether the change renames or retypes the table's chunk key column (``old``:
        the table before it)."""
        new = change.table
        assert new is not None
        fields = self.catalog.dialect.arrow_fields

        def key(table: T) -> tuple[str, pa.DataType] | None:
            if table.one_chunk:  # no chunk key column: its one chunk has no cursor
                return None
            index = table.chunk_key_index
            return table.column_names[index], fields(table)[index].type

        return key(old) != key(new)


def _verb(statement: str) -> str:
    """DROP, or RENAME for a statement that renames a table away (RENAME / ALTER TABLE)."""
    words = re.sub(r"/\*.*?\*/", " ", statement, flags=re.S).split(None, 1)
    return "DROP" if words and words[0].upper() == "DROP" else "RENAME"


def held_by(change: SchemaChange[Any, Any]) -> set[TableId]:
    """The tables the batch before ``change`` reads no chunk of: read after the change,
    their rows would have the new shape and be normalised across it to the old one."""
    return {change.table_id, *change.dropped_tables}

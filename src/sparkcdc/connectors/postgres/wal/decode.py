"""pgoutput messages of a bounded read -> row changes of the captured tables.

Messages come in commit order, each transaction from Begin to Commit. A transaction is in
the read when its commit LSN lies in ``[start, end)`` (wal/position.py); the others are
skipped without parsing their rows, but their Relation messages are kept: pgoutput sends a
table's Relation once per decoding session, before its first change, whichever
transaction that is in.

Versions count from the start position: each change of a transaction in the read takes the
next number, its Commit one more (the same rule the driver counts by in wal/scan.py).
Consecutive changes of one table and kind in a transaction form one ChangeBlock.

Old rows: under ``changelog-mode: all`` every captured table has REPLICA IDENTITY FULL
(checked up front), so updates and deletes carry the whole old row, and an update's
unchanged TOASTed values (which pgoutput does not resend) are the old row's. Should a table
lose FULL while captured, the change fails loudly rather than emitting a row with missing
values.

Under ``changelog-mode: upsert`` (``upsert=True``) old rows are not relied on: an update
whose key stays is an ``upsert`` block image (its new row only), one that moves its key an
``update`` with the old key ('K' tuple: the key's values, the other columns NULL) as its
pre-image, a delete its old key. An unchanged TOASTed value without a whole old row to take
it from is absent: the upsert's image holds None there and its block names the columns
(``ChangeBlock.unchanged``, the changelog's ``_unchanged``), so targets keep their stored
value; consecutive upserts with the same absent columns share a block. A key move has no
target row to keep a value from: it fails the read naming the fix (docs/design.md,
"Without REPLICA IDENTITY FULL").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.types import value_parser
from sparkcdc.connectors.postgres.wal.fastdecode import FastChanges, fast_changes
from sparkcdc.connectors.postgres.wal.pgoutput import (
    UNCHANGED,
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    Relation,
    Truncate,
    Update,
    epoch_seconds,
    lsn_to_text,
    parse_message,
)
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.rows import BlockKind, ChangeBlock, Row
from sparkcdc.core.table import TableId


class TruncateInRange(SchemaError):
    """A truncate of a captured table inside the range a read decodes."""


class ColumnsChangedInRange(SchemaError):
    """A captured table described with other columns inside the range a read decodes (a
    chunk's window after its batch's end; a batch itself never spans such a change)."""


#: Images per ChangeBlock at most (a large transaction still streams).
MAX_BLOCK_IMAGES = 8192
_CHANGES = frozenset(b"IUD")
_UPSERT = 0x50
#: 0x50 is ours, not pgoutput's: an update known by its new row only (upsert mode).
_KINDS = {0x49: "insert", 0x55: "update", 0x44: "delete", _UPSERT: "upsert"}


@dataclass(frozen=True)
class Located:
    """A block and the transaction it belongs to (chunk windows decide by xid)."""

    block: ChangeBlock
    xid: int
    commit_lsn: int


@dataclass
class _Table:
    """A captured table as the decoder converts its rows: the compiled decoder when it is
    built (wal/fastdecode.py), else pgoutput.py and the per-value parsers."""

    table: PgTable
    parsers: list[tuple[int, Callable[[str], Any]]]
    fast: FastChanges | None
    checked: set[int] = field(default_factory=set)  # relation oids matched against it


class WalDecoder:
    def __init__(
        self,
        tables: Mapping[TableId, PgTable],
        start: int,
        end: int,
        count: int,
        decimal_mode: str,
        upsert: bool = False,
    ) -> None:
        self.start, self.end, self.count = start, end, count
        self.upsert = upsert
        self.tables: dict[tuple[str, str], _Table] = {}
        for table in tables.values():
            parsers = [
                (i, parser)
                for i, column in enumerate(table.columns)
                if (parser := value_parser(column, decimal_mode)) is not None
            ]
            fast = fast_changes(table, decimal_mode)
            name = (table.table_id.database, table.table_id.table)
            self.tables[name] = _Table(table, parsers, fast)
        self.relations: dict[int, Relation] = {}

    def decode(self, messages: Iterable[bytes]) -> Iterator[Located]:
        """The changes of the captured tables in the read's transactions, as blocks. The
        hot path (a change of a transaction in the read) stays in this loop with local
        state: one dictionary lookup for the table, the compiled decoder, a list extend."""
        begin: Any = None  # a Begin, _SKIPPED, or None between transactions
        pending: list[Row] = []
        # the pending block's table, change type and first change's version; commit time
        block_oid, block_tag, first, seconds = -1, 0, 0, 0
        count, upsert = self.count, self.upsert
        by_oid: dict[int, _Table | None] = {}  # tables checked against their description

        def flush() -> Iterator[Located]:
            nonlocal block_oid
            if pending:
                block = self._block(block_oid, block_tag, pending, first, seconds)
                yield Located(block, begin.xid, begin.final_lsn)
                pending.clear()
            block_oid = -1  # the next change starts a block (and takes its version)

        for data in messages:
            tag = data[0]
            if begin is None:  # between transactions: Begin, or a Relation/Type message
                begin, seconds = self._between(parse_message(data), by_oid, seconds)
                continue
            if begin is _SKIPPED:
                if tag == 0x43:  # Commit
                    begin = None
                elif tag == 0x52:  # Relation
                    self._redescribe(parse_message(data), by_oid)
                continue
            if tag in _CHANGES:
                count += 1
                oid = int.from_bytes(data[1:5], "big")
                try:
                    captured = by_oid[oid]
                except KeyError:
                    captured = by_oid[oid] = self._captured(oid)
                if captured is None:  # a table of the publication this read does not want
                    if pending:  # its version is skipped: a block's versions are consecutive
                        yield from flush()
                    continue
                if upsert:  # the block's kind depends on the old row the WAL has
                    tag, images = self._upsert_images(captured, data)
                else:
                    images = self._images(captured, data)
                if oid != block_oid or tag != block_tag or len(pending) >= MAX_BLOCK_IMAGES:
                    yield from flush()
                    block_oid, block_tag, first = oid, tag, count
                pending.extend(images)
                continue
            message = parse_message(data)
            if isinstance(message, Commit):
                yield from flush()
                count, begin = count + 1, None
            elif isinstance(message, Relation):
                yield from flush()
                self._redescribe(message, by_oid)
            elif isinstance(message, Truncate):
                self._check_truncate(message, begin)
        self.count = count

    def _between(
        self, message: Message, by_oid: dict[int, _Table | None], seconds: int
    ) -> tuple[Any, int]:
        """A message between transactions: the next transaction's state (its Begin, or
        ``_SKIPPED`` when it commits outside the read's range; None for a Relation or Type
        message) and its commit time (``seconds`` unchanged when it is not read)."""
        if isinstance(message, Begin):
            if self.start <= message.final_lsn < self.end:
                return message, epoch_seconds(message.commit_time)
            return _SKIPPED, seconds
        if isinstance(message, Relation):
            self._redescribe(message, by_oid)
        return None, seconds

    def _redescribe(self, relation: Message, by_oid: dict[int, _Table | None]) -> None:
        """A Relation message: :meth:`_describe`, and the table checked again."""
        assert isinstance(relation, Relation)
        self._describe(relation)
        by_oid.pop(relation.oid, None)

    def _block(
        self, oid: int, tag: Any, images: list[Row], first: int, seconds: int
    ) -> ChangeBlock:
        """A block of ``images``, the changes of type ``tag`` of relation ``oid`` (a tuple
        ``(_UPSERT, absent column names)``: upserts with absent values)."""
        target = self.tables[_name(self.relations[oid])].table
        if isinstance(tag, tuple):
            return ChangeBlock(
                target.table_id, "upsert", list(images), first, seconds, unchanged=tag[1]
            )
        kind: BlockKind = _KINDS[tag]  # type: ignore[assignment]
        return ChangeBlock(target.table_id, kind, list(images), first, seconds)

    def _check_truncate(self, message: Truncate, begin: Begin) -> None:
        """A TRUNCATE of a captured table inside the read's range cannot be passed."""
        names = [
            str(self.tables[n].table.table_id)
            for oid in message.oids
            if (n := _name(self.relations[oid])) in self.tables
        ]
        if names:
            raise TruncateInRange(
                f"TRUNCATE of {', '.join(names)} (transaction {begin.xid}, commit "
                f"{lsn_to_text(begin.final_lsn)}) inside a read's range: no row says "
                "which rows it removed, so the read cannot pass it (a stream's "
                "planning makes each truncate a batch of its own). Start the stream "
                "again from a new checkpoint (a new snapshot)"
            )

    def _describe(self, relation: Relation) -> None:
        """A (new) description of a table: its columns are checked again at its next row."""
        self.relations[relation.oid] = relation
        for captured in self.tables.values():
            captured.checked.discard(relation.oid)

    def _captured(self, oid: int) -> _Table | None:
        relation = self.relations.get(oid)
        if relation is None:
            raise SchemaError(f"pgoutput sent a change of relation {oid} before describing it")
        captured = self.tables.get(_name(relation))
        if captured is None or oid in captured.checked:
            return captured
        table = captured.table
        names = tuple(c.name for c in relation.columns)
        types = tuple((c.type_oid, c.typmod) for c in relation.columns)
        if names != table.column_names or (table.column_types and types != table.column_types):
            raise ColumnsChangedInRange(
                f"the columns of {table.table_id} changed inside a read's range (now "
                f"{', '.join(names)}; read with {', '.join(table.column_names)}; or a "
                "column's type changed), which the stream's planning makes a batch of its "
                "own. Start the stream again from a new checkpoint (a new snapshot)"
            )
        captured.checked.add(oid)
        return captured

    def _images(self, captured: _Table, data: bytes) -> list[Row]:
        """The row images of one change message: the new row of an insert, the old row of
        a delete, both of an update (its unchanged TOASTed values taken from the old)."""
        fast = captured.fast
        if fast is not None:
            change: Any = fast.decoder.change(data)  # rows are None only where unused
            tag, _, old_kind, old, new, fallback = change
            if fallback:  # texts the compiled decoder left to the Python parsers
                old = old and fast.finish(old)
                new = new and fast.finish(new)
            if tag == 0x49:  # 'I'
                return [new]
            if old_kind != "O":
                self._full(captured, old, old_kind)  # raises with the fix
            if tag == 0x44:  # 'D'
                return [old]
            if UNCHANGED in new:  # TOASTed values the update left alone: the old row's
                new = tuple(old[i] if v is UNCHANGED else v for i, v in enumerate(new))
            return [old, new]
        message = parse_message(data)
        assert isinstance(message, Insert | Update | Delete)
        if isinstance(message, Insert):
            return [self._row(captured, message.new, None)]
        before = self._full(captured, message.old, message.old_kind)
        before = self._row(captured, before, None)
        if isinstance(message, Delete):
            return [before]
        return [before, self._row(captured, message.new, before)]

    def _upsert_images(self, captured: _Table, data: bytes) -> tuple[Any, list[Row]]:
        """Upsert mode: the block kind (a pgoutput tag, ``_UPSERT``, or ``(_UPSERT, absent
        column names)``) and images of one change message. An update with a whole old row
        (a FULL table) that keeps its key is an upsert too, its unchanged TOASTed values
        taken from the old row; without one they are absent (None, named by the kind)."""
        tag, old_kind, old, new = self._parsed(captured, data)
        if tag == 0x44:  # 'D'
            if old is None:  # REPLICA IDENTITY NOTHING: no key to delete by
                raise SchemaError(
                    f"the WAL lacks the key of a row deleted from {captured.table.table_id}: "
                    "its REPLICA IDENTITY is NOTHING. Run ALTER TABLE "
                    f"{captured.table.sql_name} REPLICA IDENTITY DEFAULT; and start the "
                    "stream again from a new checkpoint"
                )
            return tag, [old]
        assert new is not None
        if tag == 0x49:  # 'I'
            return tag, [new]
        whole = old if old_kind == "O" else None
        if UNCHANGED in new:
            if whole is None:
                # an unchanged TOASTed key value comes with the old key ('K'), when logged
                new = _key_filled(captured, new, old)
                if old is None or _key(captured, old) == _key(captured, new):
                    return _absent(captured, new)  # the key stays: the values are absent
            new = _unchanged_from(captured, new, whole)
        if old is None or (whole is not None and _key(captured, old) == _key(captured, new)):
            return _UPSERT, [new]
        return tag, [old, new]  # the key moved: the old key's row is removed

    def _parsed(
        self, captured: _Table, data: bytes
    ) -> tuple[int, str | None, Row | None, Row | None]:
        """(tag, old kind, old row or None, new row or None) of one change message, values
        converted (UNCHANGED kept)."""
        fast = captured.fast
        if fast is not None:
            tag, _, old_kind, old, new, fallback = fast.decoder.change(data)
            if fallback:
                old = old and fast.finish(old)
                new = new and fast.finish(new)
            return tag, old_kind, old, new
        message = parse_message(data)
        assert isinstance(message, Insert | Update | Delete)
        old_values = None if isinstance(message, Insert) else message.old
        old_row = None if old_values is None else self._row(captured, old_values, None)
        if isinstance(message, Delete):
            return 0x44, message.old_kind, old_row, None
        kind = None if isinstance(message, Insert) else message.old_kind
        new = _parsed_keeping_unchanged(captured, message.new)
        return (0x49 if isinstance(message, Insert) else 0x55), kind, old_row, new

    @staticmethod
    def _full(captured: _Table, old: Sequence[Any] | None, kind: str | None) -> Row:
        """An update's or delete's old row, which must be whole (REPLICA IDENTITY FULL)."""
        if old is None or kind != "O":
            raise SchemaError(
                f"the WAL lacks the old row of a change of {captured.table.table_id}: its "
                "REPLICA IDENTITY is no longer FULL. Run ALTER TABLE "
                f"{captured.table.sql_name} REPLICA IDENTITY FULL; and start the stream "
                "again from a new checkpoint"
            )
        return tuple(old)

    @staticmethod
    def _row(captured: _Table, values: Sequence[Any], old: Row | None) -> Row:
        row = list(values)
        if UNCHANGED in row:  # TOASTed values the update left alone: the old row has them
            if old is None:
                raise SchemaError(
                    f"an unchanged TOASTed value of {captured.table.table_id} has no old row "
                    "to take it from (REPLICA IDENTITY FULL is needed)"
                )
            return tuple(
                old[i] if v is UNCHANGED else v if v is None else _parse(captured, i, v)
                for i, v in enumerate(row)
            )
        for i, parse in captured.parsers:
            value = row[i]
            if value is not None:
                row[i] = parse(value)
        return tuple(row)


def _key(captured: _Table, row: Row) -> tuple[Any, ...]:
    names = captured.table.column_names
    return tuple(row[names.index(k)] for k in captured.table.primary_key)


def _key_filled(captured: _Table, new: Row, old: Row | None) -> Row:
    """``new`` with its unchanged key values taken from the old key ``old`` (a 'K' tuple:
    the identity's columns, the others NULL), when there is one."""
    if old is None:
        return new
    keys = captured.table.key_indexes
    return tuple(old[i] if v is UNCHANGED and i in keys else v for i, v in enumerate(new))


def _absent(captured: _Table, new: Row) -> tuple[Any, list[Row]]:
    """An upsert whose unchanged TOASTed values the WAL lacks: its kind names them, its
    image holds None there. A key value is never absent (targets match rows by it)."""
    columns = captured.table.columns
    names = tuple(columns[i].name for i, v in enumerate(new) if v is UNCHANGED)
    if set(names) & set(captured.table.primary_key):
        raise SchemaError(
            f"an UPDATE of {captured.table.table_id} left a TOASTed primary key value "
            "unchanged, and the WAL lacks it under changelog-mode: upsert (targets match "
            f"rows by it). Run ALTER TABLE {captured.table.sql_name} REPLICA IDENTITY FULL; "
            "and start the stream again from a new checkpoint"
        )
    return (_UPSERT, names), [tuple(None if v is UNCHANGED else v for v in new)]


def _unchanged_from(captured: _Table, new: Row, whole: Row | None) -> Row:
    """An update's new row with its unchanged TOASTed values taken from the whole old row;
    without one the update moved its key (the old key's row is removed, so no target row
    keeps the values): the read fails naming them and the fix."""
    if whole is not None:
        return tuple(whole[i] if v is UNCHANGED else v for i, v in enumerate(new))
    names = [captured.table.columns[i].name for i, v in enumerate(new) if v is UNCHANGED]
    raise SchemaError(
        f"an UPDATE of {captured.table.table_id} changed the primary key and left the "
        f"TOASTed value(s) of {', '.join(names)} unchanged, and the WAL then lacks them "
        "(REPLICA IDENTITY is not FULL): the new key's row has no stored value to keep. Run "
        f"ALTER TABLE {captured.table.sql_name} REPLICA IDENTITY FULL; and start the stream "
        "again from a new checkpoint"
    )


def _parsed_keeping_unchanged(captured: _Table, values: Sequence[Any]) -> Row:
    """A tuple's values converted, UNCHANGED markers and NULLs kept."""
    return tuple(
        v if v is None or v is UNCHANGED else _parse(captured, i, v) for i, v in enumerate(values)
    )


def _parse(captured: _Table, index: int, text: str) -> Any:
    for i, parse in captured.parsers:
        if i == index:
            return parse(text)
    return text


def _name(relation: Relation) -> tuple[str, str]:
    return (relation.namespace, relation.name)


#: Marks a transaction outside the read: its rows are skipped unparsed.
_SKIPPED: Any = object()

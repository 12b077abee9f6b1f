"""pgoutput protocol version 1: parse one logical replication message.

The log reader peeks a slot with ``pg_logical_slot_peek_binary_changes(slot, upto, NULL,
'proto_version', '1', 'publication_names', pub)``; each row's ``data`` (a ``bytea``) is
exactly one message, formatted as in "Logical Replication Message Formats" of the
PostgreSQL documentation. Version 1 has no streamed or two-phase transactions, so no
message carries an xid besides Begin; the later versions' messages ('S', 'E', 'c', 'A',
'b', 'P', 'K', 'r', 'p') are refused like any unknown type.

Row values come in pgoutput's text format: each value is its type output function's text,
printed by the peeking session (so under its settings, see server/types.py) and sent in
the *database* encoding, because a ``bytea`` result is never converted to the client
encoding. They are decoded as UTF-8 here: the connector only reads UTF8 databases.

This is the log reader's hot path (hundreds of thousands of messages per second): one
``struct`` unpack per fixed-size field, precompiled ``Struct`` objects, slices of ``bytes``
decoded once, and no regular expressions.

LSNs are 64-bit integers; :func:`lsn_to_text` and :func:`lsn_from_text` convert them to
and from PostgreSQL's ``pg_lsn`` text ('16/B374D848'). Commit times stay as PostgreSQL
sends them, microseconds since 2000-01-01 UTC (:func:`epoch_seconds` converts).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

#: Microseconds from the Unix epoch (1970-01-01) to PostgreSQL's (2000-01-01), both UTC.
PG_EPOCH_MICROS = 946_684_800_000_000


def epoch_seconds(pg_micros: int) -> int:
    """Whole seconds since 1970-01-01 UTC of a PostgreSQL timestamp (microseconds since
    2000-01-01 UTC), rounded down like the changelog's commit seconds."""
    return (pg_micros + PG_EPOCH_MICROS) // 1_000_000


def lsn_to_text(lsn: int) -> str:
    """PostgreSQL's text of an LSN: high and low 32 bits in upper-case hex, no leading
    zeros ('0/16B3748')."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


_HEX = frozenset("0123456789abcdefABCDEF")


def lsn_from_text(text: str) -> int:
    """The LSN of a ``pg_lsn`` text ('16/B374D848'; 1 to 8 hex digits each side, either
    case, as the server accepts)."""
    high, sep, low = text.partition("/")
    if not sep or not all(0 < len(p) <= 8 and _HEX.issuperset(p) for p in (high, low)):
        raise ValueError(f"not an LSN: {text!r} (expected e.g. '16/B374D848')")
    return int(high, 16) << 32 | int(low, 16)


class Unchanged:
    """The type of :data:`UNCHANGED`: a TOASTed value that an update did not change and
    pgoutput did not send ('u'). The value is the old row's (with REPLICA IDENTITY FULL)."""

    __slots__ = ()
    _instance: Unchanged | None = None

    def __new__(cls) -> Unchanged:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNCHANGED"

    def __reduce__(self) -> tuple[type[Unchanged], tuple[()]]:
        return (Unchanged, ())  # unpickles (and copies) to the one instance


UNCHANGED = Unchanged()

#: A row image: one entry per column, the value's text, None for NULL, or UNCHANGED.
TupleData = tuple[str | Unchanged | None, ...]


@dataclass(frozen=True, slots=True)
class Begin:
    """'B': a transaction starts; ``final_lsn`` is its commit record's LSN."""

    final_lsn: int
    commit_time: int  #: microseconds since 2000-01-01 UTC
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    """'C': a transaction ends; ``end_lsn`` is just past its commit record."""

    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int  #: microseconds since 2000-01-01 UTC


@dataclass(frozen=True, slots=True)
class Origin:
    """'O': the transaction was replicated from origin ``name`` at ``lsn`` there."""

    lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class RelationColumn:
    """A column of a Relation message."""

    flags: int  #: bit 1: part of the replica identity key
    name: str
    type_oid: int
    typmod: int

    @property
    def key(self) -> bool:
        return bool(self.flags & 1)


@dataclass(frozen=True, slots=True)
class Relation:
    """'R': a table's description, sent before its first change in a decoding session and
    again after it changes. ``namespace`` is '' for pg_catalog."""

    oid: int
    namespace: str
    name: str
    replica_identity: str  #: pg_class.relreplident: 'd', 'n', 'f' or 'i'
    columns: tuple[RelationColumn, ...]


@dataclass(frozen=True, slots=True)
class TypeMessage:
    """'Y': a non-built-in type used by a following Relation."""

    oid: int
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Insert:
    """'I': a new row."""

    oid: int
    new: TupleData


@dataclass(frozen=True, slots=True)
class Update:
    """'U': ``old`` is the key columns ('K': the key changed under REPLICA IDENTITY
    DEFAULT/INDEX; other columns are None) or the whole old row ('O': REPLICA IDENTITY
    FULL), or None (``old_kind`` None) when no old tuple was sent."""

    oid: int
    old: TupleData | None
    old_kind: str | None
    new: TupleData


@dataclass(frozen=True, slots=True)
class Delete:
    """'D': ``old`` holds the key columns ('K') or the whole row ('O')."""

    oid: int
    old: TupleData
    old_kind: str


@dataclass(frozen=True, slots=True)
class Truncate:
    """'T': ``options`` bit 1 CASCADE, bit 2 RESTART IDENTITY."""

    options: int
    oids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogicalMessage:
    """'M': a ``pg_logical_emit_message`` (sent only with the 'messages' option)."""

    flags: int  #: bit 1: transactional
    lsn: int
    prefix: str
    content: bytes

    @property
    def transactional(self) -> bool:
        return bool(self.flags & 1)


Message = (
    Begin
    | Commit
    | Origin
    | Relation
    | TypeMessage
    | Insert
    | Update
    | Delete
    | Truncate
    | LogicalMessage
)

# Network byte order. LSNs are unsigned (XLogRecPtr), times signed (TimestampTz), xids and
# oids unsigned, typmods signed, flags unsigned bytes.
_BEGIN = struct.Struct(">QqI")
_COMMIT = struct.Struct(">BQQq")
_Q = struct.Struct(">Q")
_I = struct.Struct(">I")
_H = struct.Struct(">H")
_COLUMN = struct.Struct(">Ii")
_BQ = struct.Struct(">BQ")
_IB = struct.Struct(">IB")
_unpack_I = _I.unpack_from
_unpack_H = _H.unpack_from


def parse_message(data: bytes | memoryview) -> Message:
    """One pgoutput v1 message. Raises ValueError for an unknown type or binary values."""
    if not isinstance(data, bytes):
        data = bytes(data)
    try:
        tag = data[0]
        if tag == 0x55:  # 'U'
            (oid,) = _unpack_I(data, 1)
            kind = data[5]
            if kind == 0x4E:  # 'N': no old tuple
                new, _ = _tuple(data, 6)
                return Update(oid, None, None, new)
            old, pos = _tuple(data, 6)
            if data[pos] != 0x4E:
                raise ValueError(f"pgoutput Update: expected 'N' at byte {pos}, got {data[pos]!r}")
            new, _ = _tuple(data, pos + 1)
            return Update(oid, old, _old_kind(kind), new)
        if tag == 0x49:  # 'I'
            (oid,) = _unpack_I(data, 1)
            if data[5] != 0x4E:
                raise ValueError(f"pgoutput Insert: expected 'N' at byte 5, got {data[5]!r}")
            return Insert(oid, _tuple(data, 6)[0])
        if tag == 0x44:  # 'D'
            (oid,) = _unpack_I(data, 1)
            kind = data[5]
            return Delete(oid, _tuple(data, 6)[0], _old_kind(kind))
        return _not_a_row(tag, data)
    except (IndexError, struct.error):
        raise ValueError(
            f"truncated pgoutput message ({len(data)} bytes, type {chr(data[0])!r})"
            if data
            else "empty pgoutput message"
        ) from None


def _not_a_row(tag: int, data: bytes) -> Message:
    """A message other than a row change (those come first in :func:`parse_message`: most
    messages are): transaction bounds, relations, types, origins, truncates, logical
    messages. Raises ValueError for an unknown type; IndexError or struct.error when
    ``data`` is short (:func:`parse_message` reports it)."""
    if tag == 0x42:  # 'B'
        return Begin(*_BEGIN.unpack_from(data, 1))
    if tag == 0x43:  # 'C'
        return Commit(*_COMMIT.unpack_from(data, 1))
    if tag == 0x52:  # 'R'
        return _relation(data)
    if tag == 0x59:  # 'Y'
        (oid,) = _unpack_I(data, 1)
        namespace, pos = _string(data, 5)
        name, _ = _string(data, pos)
        return TypeMessage(oid, namespace, name)
    if tag == 0x4F:  # 'O'
        (lsn,) = _Q.unpack_from(data, 1)
        return Origin(lsn, _string(data, 9)[0])
    if tag == 0x54:  # 'T'
        count, options = _IB.unpack_from(data, 1)
        oids = struct.unpack_from(f">{count}I", data, 6)
        return Truncate(options, oids)
    if tag == 0x4D:  # 'M'
        flags, lsn = _BQ.unpack_from(data, 1)
        prefix, pos = _string(data, 10)
        (length,) = _unpack_I(data, pos)
        content = data[pos + 4 : pos + 4 + length]
        if len(content) != length:
            raise ValueError("pgoutput Message: content shorter than its length")
        return LogicalMessage(flags, lsn, prefix, content)
    raise ValueError(
        f"unknown pgoutput message type {chr(tag)!r} (byte {tag}); protocol version 1 "
        "sends B, C, O, R, Y, I, U, D, T and M"
    )


def _old_kind(kind: int) -> str:
    if kind == 0x4F:
        return "O"
    if kind == 0x4B:
        return "K"
    raise ValueError(f"pgoutput: expected an old tuple marker 'K' or 'O', got {kind!r}")


def _string(data: bytes, pos: int) -> tuple[str, int]:
    """A NUL-terminated string at ``pos`` and the position after its NUL."""
    end = data.index(0, pos)
    return data[pos:end].decode("utf-8"), end + 1


def _relation(data: bytes) -> Relation:
    (oid,) = _unpack_I(data, 1)
    namespace, pos = _string(data, 5)
    name, pos = _string(data, pos)
    identity = chr(data[pos])
    (count,) = _unpack_H(data, pos + 1)
    pos += 3
    columns = []
    for _ in range(count):
        flags = data[pos]
        column, pos = _string(data, pos + 1)
        type_oid, typmod = _COLUMN.unpack_from(data, pos)
        pos += 8
        columns.append(RelationColumn(flags, column, type_oid, typmod))
    return Relation(oid, namespace, name, identity, tuple(columns))


def _tuple(data: bytes, pos: int) -> tuple[TupleData, int]:
    """TupleData at ``pos``: the values and the position after them."""
    (count,) = _unpack_H(data, pos)
    pos += 2
    values: list[str | Unchanged | None] = []
    append = values.append
    unpack = _unpack_I
    for _ in range(count):
        kind = data[pos]
        if kind == 0x74:  # 't'
            start = pos + 5
            pos = start + unpack(data, pos + 1)[0]
            append(data[start:pos].decode())
        elif kind == 0x6E:  # 'n'
            append(None)
            pos += 1
        elif kind == 0x75:  # 'u'
            append(UNCHANGED)
            pos += 1
        elif kind == 0x62:  # 'b'
            raise ValueError(
                "pgoutput sent a value in binary format; the connector asks for text "
                "(no 'binary' option)"
            )
        else:
            raise ValueError(f"pgoutput tuple: unknown column kind {kind!r} at byte {pos}")
    if pos > len(data):
        raise ValueError("pgoutput tuple: message shorter than its values")
    return tuple(values), pos

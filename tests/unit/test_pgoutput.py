"""pgoutput protocol version 1 messages, built by hand with struct and parsed back.

The layouts follow "Logical Replication Message Formats" of the PostgreSQL documentation;
tests/integration/test_postgres_types_text.py parses real messages from a server.
"""

from __future__ import annotations

import copy
import pickle
import struct
from collections.abc import Sequence
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.postgres.wal.pgoutput import (
    PG_EPOCH_MICROS,
    UNCHANGED,
    Begin,
    Commit,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    Relation,
    RelationColumn,
    Truncate,
    TupleData,
    TypeMessage,
    Unchanged,
    Update,
    epoch_seconds,
    lsn_from_text,
    lsn_to_text,
    parse_message,
)


def cstring(text: str) -> bytes:
    return text.encode() + b"\0"


def tuple_data(values: Sequence[str | Unchanged | None]) -> bytes:
    out = struct.pack(">H", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value is UNCHANGED:
            out += b"u"
        else:
            assert isinstance(value, str)
            raw = value.encode()
            out += b"t" + struct.pack(">I", len(raw)) + raw
    return out


def insert(oid: int, new: Sequence[str | Unchanged | None]) -> bytes:
    return b"I" + struct.pack(">I", oid) + b"N" + tuple_data(new)


def update(
    oid: int,
    new: Sequence[str | Unchanged | None],
    old: Sequence[str | Unchanged | None] | None = None,
    kind: bytes = b"O",
) -> bytes:
    head = b"U" + struct.pack(">I", oid)
    if old is not None:
        head += kind + tuple_data(old)
    return head + b"N" + tuple_data(new)


def delete(oid: int, old: Sequence[str | None], kind: bytes) -> bytes:
    return b"D" + struct.pack(">I", oid) + kind + tuple_data(old)


def test_begin_and_commit() -> None:
    begin = b"B" + struct.pack(">QqI", 0x16B3748, 757_000_000_123_456, 4_000_000_000)
    assert parse_message(begin) == Begin(0x16B3748, 757_000_000_123_456, 4_000_000_000)
    # LSNs are unsigned, times signed (before 2000: negative)
    high = b"B" + struct.pack(">QqI", 2**64 - 1, -1, 0)
    assert parse_message(high) == Begin(2**64 - 1, -1, 0)
    commit = b"C" + struct.pack(">BQQq", 0, 0x16B3748, 0x16B3790, 757_000_000_123_456)
    assert parse_message(commit) == Commit(0, 0x16B3748, 0x16B3790, 757_000_000_123_456)


def test_relation_with_key_columns() -> None:
    body = (
        struct.pack(">I", 16384)
        + cstring("shop")
        + cstring("orders é")
        + b"f"
        + struct.pack(">H", 3)
        + b"\x01"
        + cstring("id")
        + struct.pack(">Ii", 23, -1)
        + b"\x00"
        + cstring("price")
        + struct.pack(">Ii", 1700, ((10 << 16) | 2) + 4)
        + b"\x00"
        + cstring("")
        + struct.pack(">Ii", 25, -1)
    )
    message = parse_message(b"R" + body)
    assert message == Relation(
        16384,
        "shop",
        "orders é",
        "f",
        (
            RelationColumn(1, "id", 23, -1),
            RelationColumn(0, "price", 1700, 655366),
            RelationColumn(0, "", 25, -1),
        ),
    )
    assert isinstance(message, Relation)
    assert [c.key for c in message.columns] == [True, False, False]
    # pg_catalog's namespace is sent as ''
    catalog = b"R" + struct.pack(">I", 1) + cstring("") + cstring("t") + b"d" + b"\0\0"
    assert parse_message(catalog) == Relation(1, "", "t", "d", ())


def test_type_origin_truncate_and_logical_messages() -> None:
    type_message = b"Y" + struct.pack(">I", 16390) + cstring("public") + cstring("mood")
    assert parse_message(type_message) == TypeMessage(16390, "public", "mood")
    origin = b"O" + struct.pack(">Q", 0x1_0000_0010) + cstring("node_a")
    assert parse_message(origin) == Origin(0x1_0000_0010, "node_a")
    truncate = b"T" + struct.pack(">Ib", 3, 2) + struct.pack(">III", 16384, 16390, 4_000_000_000)
    assert parse_message(truncate) == Truncate(2, (16384, 16390, 4_000_000_000))
    content = b"\x00\xffpayload"
    logical = (
        b"M"
        + struct.pack(">BQ", 1, 0x16B3748)
        + cstring("sparkcdc")
        + struct.pack(">I", len(content))
        + content
    )
    message = parse_message(logical)
    assert message == LogicalMessage(1, 0x16B3748, "sparkcdc", content)
    assert isinstance(message, LogicalMessage) and message.transactional
    with pytest.raises(ValueError, match="shorter"):
        parse_message(logical[:-1])


def test_insert_values() -> None:
    values = ["1", None, "", "é ✓ 🎉", "a\nb\0c", "x" * 70_000]
    assert parse_message(insert(16384, values)) == Insert(16384, tuple(values))
    assert parse_message(insert(7, [])) == Insert(7, ())


def test_update_without_old_tuple_with_unchanged_toast() -> None:
    message = parse_message(update(16384, ["1", UNCHANGED, None]))
    assert message == Update(16384, None, None, ("1", UNCHANGED, None))
    assert isinstance(message, Update) and message.new[1] is UNCHANGED


def test_update_with_key_or_full_old_tuple() -> None:
    key_only = parse_message(update(16384, ["2", "b"], ["1", None], kind=b"K"))
    assert key_only == Update(16384, ("1", None), "K", ("2", "b"))
    full = parse_message(update(16384, ["1", "new", UNCHANGED], ["1", "old", "big"], kind=b"O"))
    assert full == Update(16384, ("1", "old", "big"), "O", ("1", "new", UNCHANGED))


def test_delete_with_key_or_full_old_tuple() -> None:
    assert parse_message(delete(16384, ["1", None], b"K")) == Delete(16384, ("1", None), "K")
    assert parse_message(delete(16384, ["1", "a"], b"O")) == Delete(16384, ("1", "a"), "O")
    with pytest.raises(ValueError, match="'K' or 'O'"):
        parse_message(delete(16384, ["1"], b"X"))


def test_memoryview_and_bytearray_input() -> None:
    raw = update(16384, ["é", None], ["1", "2"], kind=b"O")
    expected = parse_message(raw)
    assert parse_message(memoryview(raw)) == expected
    assert parse_message(memoryview(b"junk" + raw)[4:]) == expected


def test_binary_values_are_refused() -> None:
    raw = b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">H", 1) + b"b" + b"\0\0\0\1x"
    with pytest.raises(ValueError, match="binary"):
        parse_message(raw)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"S" + b"\0" * 8, ["'S'", "83"]),  # Stream Start (protocol 2)
        (b"P" + b"\0" * 8, ["'P'", "80"]),  # Prepare (protocol 3)
        (b"\x01", ["1"]),
    ],
)
def test_unknown_message_types_are_refused(raw: bytes, words: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        parse_message(raw)
    for word in words:
        assert word in str(caught.value)


def test_malformed_tuples_are_refused() -> None:
    with pytest.raises(ValueError, match="column kind"):
        parse_message(b"I" + struct.pack(">I", 1) + b"N" + struct.pack(">H", 1) + b"z")
    with pytest.raises(ValueError, match="shorter"):
        parse_message(insert(1, ["abcdef"])[:-2])
    no_new = b"U" + struct.pack(">I", 1) + b"O" + tuple_data(["b"]) + b"X" + tuple_data(["a"])
    with pytest.raises(ValueError, match="'N'"):
        parse_message(no_new)
    for cut in range(1, len(no_new) - 8):  # truncated anywhere: ValueError, never IndexError
        with pytest.raises(ValueError):
            parse_message(update(1, ["abc", None], ["1", "xyz"])[:-cut])


def test_unchanged_is_one_named_value() -> None:
    assert repr(UNCHANGED) == "UNCHANGED"
    assert Unchanged() is UNCHANGED
    assert pickle.loads(pickle.dumps(UNCHANGED)) is UNCHANGED
    assert copy.deepcopy(UNCHANGED) is UNCHANGED
    assert UNCHANGED != "" and UNCHANGED is not None


def test_messages_are_frozen_and_slotted() -> None:
    message = Insert(1, ("a",))
    with pytest.raises(AttributeError):
        message.oid = 2  # type: ignore[misc]
    assert not hasattr(message, "__dict__")


values = st.one_of(
    st.none(),
    st.just(UNCHANGED),
    st.text(st.characters(codec="utf-8")),
)


@given(st.integers(0, 2**32 - 1), st.lists(values, max_size=20), st.lists(values, max_size=20))
def test_tuples_round_trip(
    oid: int, new: list[str | Unchanged | None], old: list[str | None]
) -> None:
    expected_new: TupleData = tuple(new)
    assert parse_message(insert(oid, new)) == Insert(oid, expected_new)
    assert parse_message(update(oid, new, old)) == Update(oid, tuple(old), "O", expected_new)
    key = [v for v in old if not isinstance(v, Unchanged)]
    assert parse_message(delete(oid, key, b"K")) == Delete(oid, tuple(key), "K")


# ---------------------------------------------------------------------------------------
# LSNs and times.


@given(st.integers(0, 2**64 - 1))
def test_lsn_text_round_trip(lsn: int) -> None:
    text = lsn_to_text(lsn)
    assert lsn_from_text(text) == lsn
    assert lsn_from_text(text.lower()) == lsn
    high, low = text.split("/")
    assert high == high.upper() and low == low.upper()
    assert (high == "0" or not high.startswith("0")) and (low == "0" or not low.startswith("0"))


def test_lsn_text_examples() -> None:
    assert lsn_to_text(0x16B3748) == "0/16B3748"
    assert lsn_to_text(0x16_B374D848) == "16/B374D848"
    assert lsn_to_text(0) == "0/0"
    assert lsn_to_text(2**64 - 1) == "FFFFFFFF/FFFFFFFF"
    assert lsn_from_text("00000016/0B374D84") == 0x16_0B374D84


@pytest.mark.parametrize(
    "text", ["", "0", "0/", "/0", "1/2/3", "123456789/0", "0/g", " 0/1", "-1/0"]
)
def test_bad_lsn_texts_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="LSN"):
        lsn_from_text(text)


def test_commit_time_epoch() -> None:
    epoch_2000 = datetime(2000, 1, 1, tzinfo=timezone.utc)
    assert int(epoch_2000.timestamp()) * 10**6 == PG_EPOCH_MICROS
    assert epoch_seconds(0) == 946_684_800
    assert epoch_seconds(1_500_000) == 946_684_801
    assert epoch_seconds(-1) == 946_684_799  # rounds down, before 2000 too
    moment = datetime(2024, 5, 6, 7, 8, 9, 999_999, tzinfo=timezone.utc)
    micros = int((moment - datetime(2000, 1, 1, tzinfo=timezone.utc)).total_seconds() * 10**6)
    assert epoch_seconds(micros) == int(moment.timestamp())

"""The WAL decoder on hand-built pgoutput streams: which transactions a read takes, the
versions it gives (the change count of wal/position.py, the same the driver's scan counts),
blocks, uncaptured tables, and TOAST values, with the compiled and the Python decoder."""

from __future__ import annotations

import struct
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.postgres.server.discovery import PgTable
from sparkcdc.connectors.postgres.server.types import PgColumn, PgType
from sparkcdc.connectors.postgres.snapshot.visibility import PgSnapshot
from sparkcdc.connectors.postgres.wal import decode as decode_module
from sparkcdc.connectors.postgres.wal.decode import WalDecoder
from sparkcdc.connectors.postgres.wal.pgoutput import UNCHANGED
from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.connectors.postgres.wal.scan import Transaction, batch_end
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from tests.unit.test_pgoutput import cstring, delete, insert, update

INT8 = PgType("int8", "b", "N", -1, None, "bigint")
TEXT = PgType("text", "b", "S", -1, None, "text")
COLUMNS = (PgColumn("id", INT8, False, None, True), PgColumn("v", TEXT, True, "C", True))
CAPTURED = {
    TableId("s", name): PgTable(TableId("s", name), oid, COLUMNS, ("id",), "id", "f")
    for name, oid in (("a", 101), ("b", 102))
}
OIDS = {101: "a", 102: "b", 103: "other"}  # 103: in the publication, not in this read


def begin(final_lsn: int, xid: int) -> bytes:
    return b"B" + struct.pack(">QqI", final_lsn, 0, xid)


def commit(commit_lsn: int) -> bytes:
    return b"C" + struct.pack(">BQQq", 0, commit_lsn, commit_lsn + 8, 0)


def relation(oid: int) -> bytes:
    columns = b"".join(
        bytes([flag]) + cstring(name) + struct.pack(">Ii", type_oid, -1)
        for flag, name, type_oid in ((1, "id", 20), (0, "v", 25))
    )
    return (
        b"R"
        + struct.pack(">I", oid)
        + cstring("s")
        + cstring(OIDS[oid])
        + b"f"
        + struct.pack(">H", 2)
        + columns
    )


Change = tuple[str, int, int, str]  # kind, oid, key, value


@st.composite
def streams(draw: st.DrawFn) -> list[tuple[int, list[Change]]]:
    """Transactions (commit LSN, changes) in commit order."""
    out, lsn = [], 1000
    for _ in range(draw(st.integers(0, 8))):
        lsn += draw(st.integers(1, 50)) * 8
        changes = draw(
            st.lists(
                st.tuples(
                    st.sampled_from(["insert", "update", "delete"]),
                    st.sampled_from(list(OIDS)),
                    st.integers(0, 5),
                    st.text(alphabet="xyz", max_size=3),
                ),
                max_size=6,
            )
        )
        out.append((lsn, changes))
    return out


def messages(stream: list[tuple[int, list[Change]]]) -> list[bytes]:
    out, described = [], set()
    for xid, (lsn, changes) in enumerate(stream, start=500):
        out.append(begin(lsn, xid))
        for kind, oid, key, value in changes:
            if oid not in described:  # pgoutput describes a table before its first change
                out.append(relation(oid))
                described.add(oid)
            row = [str(key), value]
            if kind == "insert":
                out.append(insert(oid, row))
            elif kind == "update":
                out.append(update(oid, [str(key), value + "!"], row))
            else:
                out.append(delete(oid, row, b"O"))
        out.append(commit(lsn))
    return out


def decoded(stream: list[tuple[int, list[Change]]], start: int, end: int, count: int) -> Any:
    decoder = WalDecoder(CAPTURED, start, end, count, "precise")
    changes = [
        (c.table.table, c.version, c.before, c.after)
        for located in decoder.decode(messages(stream))
        for c in located.block.changes()
    ]
    return changes, decoder.count


@pytest.fixture(params=["compiled", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(decode_module, "fast_changes", lambda table, mode: None)
    return str(request.param)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(streams(), st.data())
def test_a_read_takes_its_transactions_with_the_scans_versions(
    path: str, stream: list[tuple[int, list[Change]]], data: st.DataObject
) -> None:
    bounds = sorted(data.draw(st.lists(st.integers(900, 3000), min_size=2, max_size=2)))
    start, end = bounds
    count = data.draw(st.integers(0, 10**6))
    got, final = decoded(stream, start, end, count)

    expected, n = [], count
    for lsn, changes in stream:
        if not start <= lsn < end:
            continue
        for kind, oid, key, value in changes:
            n += 1
            if oid not in (101, 102):
                continue
            row = (key, value)
            before, after = {
                "insert": (None, row),
                "update": (row, (key, value + "!")),
                "delete": (row, None),
            }[kind]
            expected.append((OIDS[oid], n, before, after))
        n += 1  # the commit
    assert got == expected
    assert final == n
    # the driver's scan counts the same way, so the batch end's version is this count
    scanned = [
        Transaction(xid, lsn, lsn + 8, len(changes), 0)
        for xid, (lsn, changes) in enumerate(stream, start=500)
        if start <= lsn < end
    ]
    position, _, _ = batch_end(
        LsnPosition(start, count), end, scanned, PgSnapshot(10**6, 10**6, frozenset()), None
    )
    assert position.count == final


def test_unchanged_toast_values_come_from_the_old_row(path: str) -> None:
    stream = [
        begin(2000, 7),
        relation(101),
        update(101, ["1", UNCHANGED], ["1", "big"]),
        commit(2000),
    ]
    decoder = WalDecoder(CAPTURED, 0, 10_000, 0, "precise")
    (located,) = decoder.decode(stream)
    assert located.block.images == [(1, "big"), (1, "big")]
    assert (located.xid, located.commit_lsn) == (7, 2000)


def test_key_only_old_rows_and_changed_columns_fail_loudly(path: str) -> None:
    keyed = [
        begin(2000, 7),
        relation(101),
        update(101, ["1", "x"], ["1", None], b"K"),
        commit(2000),
    ]
    with pytest.raises(SchemaError, match="REPLICA IDENTITY is no longer FULL"):
        list(WalDecoder(CAPTURED, 0, 10_000, 0, "precise").decode(keyed))
    wider = replace(CAPTURED[TableId("s", "a")], columns=(*COLUMNS, COLUMNS[1]))
    with pytest.raises(SchemaError, match=r"columns of s\.a changed"):
        list(
            WalDecoder({wider.table_id: wider}, 0, 10_000, 0, "precise").decode(
                [begin(2000, 7), relation(101), insert(101, ["1", "x"]), commit(2000)]
            )
        )


def upsert_decoded(stream: list[bytes], table: PgTable | None = None) -> list[Any]:
    """(kind, version, images) per block, decoded in ``changelog-mode: upsert``."""
    captured = CAPTURED if table is None else {table.table_id: table}
    decoder = WalDecoder(captured, 0, 10_000, 0, "precise", upsert=True)
    return [(b.block.kind, b.block.version, b.block.images) for b in decoder.decode(stream)]


def test_upsert_mode_updates_are_new_rows_and_deletes_keys(path: str) -> None:
    default = replace(CAPTURED[TableId("s", "a")], replica_identity="d")
    stream = [
        begin(2000, 7),
        relation(101),
        insert(101, ["1", "a"]),
        update(101, ["1", "b"]),  # the key stays: no old tuple at all
        update(101, ["2", "c"], ["1", None], b"K"),  # the key moves: the old key only
        delete(101, ["2", None], b"K"),
        commit(2000),
    ]
    assert upsert_decoded(stream, default) == [
        ("insert", 1, [(1, "a")]),
        ("upsert", 2, [(1, "b")]),
        ("update", 3, [(1, None), (2, "c")]),
        ("delete", 4, [(2, None)]),
    ]
    # as changes: the upsert is no insert, the moved key's old row is removed by key
    block_changes = [
        (c.before, c.after, c.upsert)
        for located in WalDecoder(
            {default.table_id: default}, 0, 10_000, 0, "precise", upsert=True
        ).decode(stream)
        for c in located.block.changes()
    ]
    assert block_changes[1] == (None, (1, "b"), True)
    assert block_changes[0] == (None, (1, "a"), False)


def test_upsert_mode_full_tables_give_upserts_with_their_toasted_values(path: str) -> None:
    stream = [
        begin(2000, 7),
        relation(101),
        update(101, ["1", UNCHANGED], ["1", "big"]),
        update(101, ["2", "x"], ["1", "big"]),  # a moved key keeps its whole old row
        commit(2000),
    ]
    assert upsert_decoded(stream) == [
        ("upsert", 1, [(1, "big")]),
        ("update", 2, [(1, "big"), (2, "x")]),
    ]


def test_upsert_mode_gives_an_unchanged_toasted_value_without_an_old_row_as_absent(
    path: str,
) -> None:
    default = replace(CAPTURED[TableId("s", "a")], replica_identity="d")
    toasted = [
        begin(2000, 7),
        relation(101),
        update(101, ["1", UNCHANGED]),
        update(101, ["2", UNCHANGED]),  # the same absent columns: the same block
        update(101, ["3", "new"]),
        update(101, ["4", UNCHANGED]),
        commit(2000),
    ]
    decoder = WalDecoder({default.table_id: default}, 0, 10_000, 0, "precise", upsert=True)
    blocks = [located.block for located in decoder.decode(toasted)]
    assert [(b.kind, b.version, b.images, b.unchanged) for b in blocks] == [
        ("upsert", 1, [(1, None), (2, None)], ("v",)),
        ("upsert", 3, [(3, "new")], ()),
        ("upsert", 4, [(4, None)], ("v",)),
    ]
    changes = [c for b in blocks for c in b.changes()]
    assert [(c.after, c.unchanged) for c in changes] == [
        ((1, None), ("v",)),
        ((2, None), ("v",)),
        ((3, "new"), ()),
        ((4, None), ("v",)),
    ]


def test_upsert_mode_fails_on_a_key_move_that_leaves_a_toasted_value_unchanged(
    path: str,
) -> None:
    default = replace(CAPTURED[TableId("s", "a")], replica_identity="d")
    moved = [
        begin(2000, 7),
        relation(101),
        update(101, ["2", UNCHANGED], ["1", None], b"K"),
        commit(2000),
    ]
    with pytest.raises(SchemaError, match=r"changed the primary key and left the TOASTed"):
        upsert_decoded(moved, default)


def test_upsert_mode_takes_an_unchanged_toasted_key_from_the_old_key_and_never_leaves_it_absent(
    path: str,
) -> None:
    """A key value can be TOASTed (a long text key out of line): a server that logs the
    old key ('K') gives it there, and the key stays; one that does not leaves no key to
    match a target row by, which fails naming FULL (review)."""
    default = replace(CAPTURED[TableId("s", "a")], replica_identity="d")
    kept = [
        begin(2000, 7),
        relation(101),
        update(101, [UNCHANGED, "x"], ["1", None], b"K"),
        commit(2000),
    ]
    decoder = WalDecoder({default.table_id: default}, 0, 10_000, 0, "precise", upsert=True)
    blocks = [located.block for located in decoder.decode(kept)]
    assert [(b.kind, b.images, b.unchanged) for b in blocks] == [("upsert", [(1, "x")], ())]
    lost = [begin(2000, 7), relation(101), update(101, [UNCHANGED, "x"]), commit(2000)]
    with pytest.raises(SchemaError, match=r"TOASTed primary key value unchanged"):
        upsert_decoded(lost, default)

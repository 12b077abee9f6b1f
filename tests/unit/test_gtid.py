"""MariaDB GTID positions and MySQL GTID sets (MySQL itself cannot run here)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.gtid import (
    InterleavedGtidError,
    MariaDbGtid,
    MariaDbGtidPosition,
    MySqlGtidSet,
    resume_index,
)
from sparkcdc.core.errors import SparkCdcError

UUIDS = ["3e11fa47-71ca-11e1-9e33-c80aa9429562", "00000000-0000-0000-0000-000000000001"]
numbers = st.sets(st.integers(1, 60), max_size=25)


def set_of(by_uuid: dict[str, set[int]]) -> MySqlGtidSet:
    result = MySqlGtidSet()
    for uuid, values in by_uuid.items():
        for n in values:
            result = result.add(uuid, n)
    return result


@given(st.fixed_dictionaries({u: numbers for u in UUIDS}))
def test_mysql_set_text_round_trip_and_membership(by_uuid: dict[str, set[int]]) -> None:
    gtids = set_of(by_uuid)
    again = MySqlGtidSet.parse(str(gtids))
    assert again == gtids
    for uuid, values in by_uuid.items():
        for n in range(1, 62):
            assert again.contains(uuid, n) == (n in values)


@given(
    st.fixed_dictionaries({u: numbers for u in UUIDS}),
    st.fixed_dictionaries({u: numbers for u in UUIDS}),
)
def test_mysql_union_and_subset_follow_sets(a: dict[str, set[int]], b: dict[str, set[int]]) -> None:
    sa, sb = set_of(a), set_of(b)
    assert sa.union(sb) == set_of({u: a[u] | b[u] for u in UUIDS})
    assert sa.issubset(sb) == all(a[u] <= b[u] for u in UUIDS)


def test_mysql_parse_canonicalises() -> None:
    text = "3E11FA47-71CA-11E1-9E33-C80AA9429562:7-9:1-5:6, 00000000-0000-0000-0000-000000000001:3"
    assert str(MySqlGtidSet.parse(text)) == (
        "00000000-0000-0000-0000-000000000001:3,3e11fa47-71ca-11e1-9e33-c80aa9429562:1-9"
    )
    for bad in (
        "nope:1",
        "3e11fa47-71ca-11e1-9e33-c80aa9429562",
        f"{UUIDS[0]}:5-2",
        f"{UUIDS[0]}:0",
    ):
        with pytest.raises(SparkCdcError):
            MySqlGtidSet.parse(bad)


def test_mariadb_positions() -> None:
    pos = MariaDbGtidPosition.parse("0-1-100,1-2-7")
    assert pos.includes(MariaDbGtid(0, 1, 100)) and not pos.includes(MariaDbGtid(0, 1, 101))
    assert not pos.includes(MariaDbGtid(2, 1, 1))
    assert pos.covers(MariaDbGtidPosition.parse("0-1-50"))
    assert not pos.covers(MariaDbGtidPosition.parse("0-1-50,3-1-1"))
    assert str(pos.advance(MariaDbGtid(1, 2, 8))) == "0-1-100,1-2-8"
    assert str(MariaDbGtidPosition.parse("")) == ""
    with pytest.raises(SparkCdcError):
        MariaDbGtidPosition.parse("0-1-1,0-2-2")
    with pytest.raises(SparkCdcError):
        MariaDbGtid.parse("0-1")


# -- resuming after a MariaDB GTID position in a multi-domain binlog -------------------------

domain_order = st.lists(st.integers(0, 2), min_size=0, max_size=30)


def binlog_of(order: list[int]) -> list[MariaDbGtid]:
    """Transactions in binlog order; each domain's sequence numbers grow from 1."""
    seqs: dict[int, int] = {}
    out = []
    for domain in order:
        seqs[domain] = seqs.get(domain, 0) + 1
        out.append(MariaDbGtid(domain, 10 + domain, seqs[domain]))
    return out


def position_after(gtids: list[MariaDbGtid]) -> MariaDbGtidPosition:
    position = MariaDbGtidPosition()
    for gtid in gtids:
        position = position.advance(gtid)
    return position


@given(domain_order, st.integers(0, 30))
def test_a_position_taken_in_this_binlog_resumes_right_after_it(order: list[int], cut: int) -> None:
    """@@gtid_binlog_pos after any prefix: resume exactly at the prefix's end."""
    log = binlog_of(order)
    cut = min(cut, len(log))
    target = position_after(log[:cut])
    assert resume_index(target, log) == (cut if cut < len(log) else None)


@given(domain_order, st.data())
def test_an_interleaved_position_is_refused_or_exact(order: list[int], data: st.DataObject) -> None:
    """Any per-domain position: either resuming at the index delivers exactly the
    transactions it does not include, or it is refused."""
    log = binlog_of(order)
    target = MariaDbGtidPosition(
        {
            d: MariaDbGtid(d, 10 + d, data.draw(st.integers(0, order.count(d))))
            for d in sorted(set(order))
            if data.draw(st.booleans())
        }
    )
    wanted = [g for g in log if not target.includes(g)]
    try:
        index = resume_index(target, log)
    except InterleavedGtidError:
        assert any(
            target.includes(log[j]) and not target.includes(log[i])
            for i in range(len(log))
            for j in range(i + 1, len(log))
        )
        return
    assert (log[index:] if index is not None else []) == wanted


def test_resume_reads_no_further_than_needed() -> None:
    log = binlog_of([0, 1, 0, 1, 0, 0, 0])
    read: list[MariaDbGtid] = []

    def reading() -> Iterator[MariaDbGtid]:
        for gtid in log:
            read.append(gtid)
            yield gtid

    target = MariaDbGtidPosition({0: MariaDbGtid(0, 10, 1), 1: MariaDbGtid(1, 11, 1)})
    assert resume_index(target, reading()) == 2
    assert read == log[:4]  # both domains passed at index 3

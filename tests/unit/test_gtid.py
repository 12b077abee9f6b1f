"""MariaDB GTID positions and MySQL GTID sets (MySQL itself cannot run here)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import SparkCdcError
from sparkcdc.core.gtid import MariaDbGtid, MariaDbGtidPosition, MySqlGtidSet

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

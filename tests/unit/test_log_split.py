"""split_log without a server: the GTID state it tracks along its SHOW BINLOG EVENTS walk
(no BINLOG_GTID_POS per cut) and how many pieces a range gets."""

from __future__ import annotations

from sparkcdc.connectors.mysql.binlog.limit import GtidState


def test_parse_and_advance_per_domain() -> None:
    state = GtidState.parse("1-5-7, 0-1-10")
    assert state is not None and str(state) == "0-1-10,1-5-7"
    state = state.after("BEGIN GTID 0-2-11")
    assert state is not None and str(state) == "0-2-11,1-5-7"
    state = state.after("GTID 3-1-1")  # a DDL's group, a new domain
    assert state is not None and str(state) == "0-2-11,1-5-7,3-1-1"


def test_unknown_states_fall_back() -> None:
    assert GtidState.parse("") is None  # MySQL, or nothing known: ask the server
    assert GtidState.parse("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5") is None
    state = GtidState.parse("0-1-1")
    assert state is not None and state.after("SET @@SESSION.GTID_NEXT") is None


def test_piece_count_prefers_large_pieces() -> None:
    from sparkcdc.connectors.mysql.binlog.limit import piece_count

    mib = 1 << 20
    assert piece_count(3 * mib) == 1
    assert piece_count(4 * mib) == 2  # two cores decode any splittable range
    assert piece_count(30 * mib) == 2  # not 8 pieces of 4 MiB: each task costs ~35 ms
    assert piece_count(64 * mib) == 4
    assert piece_count(1 << 30) == 8
    assert piece_count(1 << 30, max_pieces=3) == 3
    assert piece_count(1 << 30, min_piece_bytes=1 << 40) == 1

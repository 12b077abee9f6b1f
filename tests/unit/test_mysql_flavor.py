"""Server flavours as data (server/flavor.py): what each MariaDB / MySQL version is asked,
MySQL 8.4's renamed statements included (8.4 cannot run here, so its statements are checked
only here), and the GTID-set arithmetic MySQL positions use."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.gtid import MySqlGtidSet
from sparkcdc.connectors.mysql.binlog.mysql_gtids import gtid_of_event
from sparkcdc.connectors.mysql.server.flavor import ServerFlavor
from sparkcdc.connectors.mysql.server.validation import required_settings, settings_problems

UUID_A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID_B = "99e1c2e8-f055-11f1-8e83-02fc00000001"


@pytest.mark.parametrize(
    ("text", "family", "version"),
    [
        ("10.11.19-MariaDB-0+deb12u1-log", "mariadb", (10, 11, 19)),
        ("5.5.5-10.11.19-MariaDB-0+deb12u1-log", "mariadb", (10, 11, 19)),  # a handshake's
        ("8.0.15", "mysql", (8, 0, 15)),
        ("5.7.19-log", "mysql", (5, 7, 19)),
        ("8.4.3", "mysql", (8, 4, 3)),
        ("9.1", "mysql", (9, 1, 0)),
    ],
)
def test_versions_parse(text: str, family: str, version: tuple[int, int, int]) -> None:
    flavor = ServerFlavor.parse(text)
    assert (flavor.family, flavor.version) == (family, version)


@pytest.mark.parametrize(
    ("text", "status", "replica", "updates"),
    [
        ("10.11.19-MariaDB", "SHOW MASTER STATUS", "SHOW REPLICA STATUS", "log_slave_updates"),
        ("10.4.30-MariaDB", "SHOW MASTER STATUS", "SHOW SLAVE STATUS", "log_slave_updates"),
        ("5.7.19-log", "SHOW MASTER STATUS", "SHOW SLAVE STATUS", "log_slave_updates"),
        ("8.0.15", "SHOW MASTER STATUS", "SHOW SLAVE STATUS", "log_slave_updates"),
        ("8.0.36", "SHOW MASTER STATUS", "SHOW REPLICA STATUS", "log_replica_updates"),
        ("8.4.3", "SHOW BINARY LOG STATUS", "SHOW REPLICA STATUS", "log_replica_updates"),
        ("9.1.0", "SHOW BINARY LOG STATUS", "SHOW REPLICA STATUS", "log_replica_updates"),
    ],
)
def test_statements_by_version(text: str, status: str, replica: str, updates: str) -> None:
    flavor = ServerFlavor.parse(text)
    assert flavor.binlog_status == status
    assert flavor.replica_status == replica
    assert flavor.replica_updates_variable == updates


def test_gtid_vocabulary_and_snapshot_positions_by_family() -> None:
    mariadb, mysql = ServerFlavor.parse("10.11.19-MariaDB"), ServerFlavor.parse("8.4.3")
    assert (mariadb.gtid_sets, mariadb.exact_snapshot) == (False, True)
    assert (mysql.gtid_sets, mysql.exact_snapshot) == (True, False)
    assert mariadb.replication_client == "BINLOG MONITOR"
    assert mysql.replication_client == "REPLICATION CLIENT"


def test_too_old_says_why_and_what_is_needed() -> None:
    assert ServerFlavor.parse("8.0.15").too_old() is None
    assert ServerFlavor.parse("5.7.19-log").too_old() is None  # no row metadata needed
    assert ServerFlavor.parse("10.5.0-MariaDB").too_old() is None
    old56 = ServerFlavor.parse("5.6.51-log").too_old()
    assert old56 is not None and "MySQL 5.7 or newer" in old56
    old_mariadb = ServerFlavor.parse("10.4.30-MariaDB").too_old()
    assert old_mariadb is not None and "MariaDB 10.5 or newer" in old_mariadb


def test_row_metadata_is_not_required_at_any_value() -> None:
    for text in ("10.11.19-MariaDB", "8.0.15", "5.7.19-log"):
        flavor = ServerFlavor.parse(text)
        assert "binlog_row_metadata" not in {s.name for s in required_settings(flavor)}
        for value in ("NO_LOG", "MINIMAL", "FULL"):
            good = {**GOOD_MYSQL, "binlog_row_metadata": value}
            if flavor.mariadb:
                good = {k: v for k, v in good.items() if not k.startswith(("gtid", "enforce"))}
            assert settings_problems(good, flavor) == []


GOOD_MYSQL = {
    "log_bin": "ON",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "FULL",
    "gtid_mode": "ON",
    "enforce_gtid_consistency": "ON",
    "binlog_row_value_options": "",
}


def test_mysql_settings_include_gtids_and_whole_json_values() -> None:
    mysql8 = ServerFlavor.parse("8.0.15")
    assert settings_problems(GOOD_MYSQL, mysql8) == []
    bad = {**GOOD_MYSQL, "gtid_mode": "OFF_PERMISSIVE", "binlog_row_value_options": "PARTIAL_JSON"}
    gtid, partial = settings_problems(bad, mysql8)
    assert gtid.startswith("gtid_mode is OFF_PERMISSIVE, needs ON: positions carry GTID sets")
    assert "OFF_PERMISSIVE, ON_PERMISSIVE and ON, one step at a time" in gtid
    assert partial.startswith("binlog_row_value_options is PARTIAL_JSON, needs '' (empty)")
    assert "SET GLOBAL binlog_row_value_options=''" in partial
    names = {s.name for s in required_settings(ServerFlavor.parse("10.11.19-MariaDB"))}
    assert "gtid_mode" not in names and "binlog_row_value_options" not in names


def test_gtid_events_are_read_from_their_info() -> None:
    info = f"SET @@SESSION.GTID_NEXT= '{UUID_A.upper()}:23'"
    assert gtid_of_event(info) == (UUID_A, 23)
    assert gtid_of_event("SET @@SESSION.GTID_NEXT= 'ANONYMOUS'") is None
    assert gtid_of_event("BEGIN GTID 0-1-5") is None


numbers = st.integers(1, 60)
gtid_lists = st.lists(st.tuples(st.sampled_from([UUID_A, UUID_B]), numbers), max_size=40)


@given(gtid_lists, gtid_lists)
def test_gtid_set_difference_and_union(
    left: list[tuple[str, int]], right: list[tuple[str, int]]
) -> None:
    a, b = MySqlGtidSet.of(left), MySqlGtidSet.of(right)
    difference = a.minus(b)
    expected = {g for g in left if g not in set(right)}
    assert difference == MySqlGtidSet.of(expected)
    assert difference.empty == (not expected)
    assert difference.issubset(a) and a.issubset(difference.union(b))
    assert MySqlGtidSet.parse(str(a)) == a


def test_gtid_set_text_round_trips_with_gaps() -> None:
    text = f"{UUID_B}:1-5:7:9-10,{UUID_A}:3"
    parsed = MySqlGtidSet.parse(text)
    assert str(parsed) == f"{UUID_A}:3,{UUID_B}:1-5:7:9-10"
    assert parsed.last(UUID_B) == 10 and parsed.last("other") == 0
    assert MySqlGtidSet.parse(f"{UUID_B}:1-10").minus(parsed) == MySqlGtidSet.parse(f"{UUID_B}:6:8")

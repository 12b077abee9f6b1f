"""Options, secrets, positions, versions, chunk-key encoding and even splitting."""

from __future__ import annotations

import datetime as dt
import pickle
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition, commit_version
from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import OptionSpec, parse_duration, parse_int, parse_options
from sparkcdc.core.secret import Secret
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.chunks import KeyStats, even_step
from sparkcdc.snapshot.progress import TableProgress, decode_key, encode_key

SPECS = [
    OptionSpec("hostname", required=True, doc="database host"),
    OptionSpec("port", parse_int(1, 65535), 3306),
    OptionSpec("password", secret=True, default=""),
    OptionSpec("scan.startup.mode", choices=("initial", "latest-offset"), default="initial"),
    OptionSpec("maxRowsPerTrigger", parse_int(1)),
    OptionSpec("jdbc.properties.", prefix=True),
]


def test_options_parse_case_insensitively_with_defaults_and_groups() -> None:
    opts = parse_options(
        {"hostname": "h", "maxrowspertrigger": "10", "jdbc.properties.useSSL": "true"},
        SPECS,
        context="mysql-cdc",
    )
    assert opts["hostname"] == "h" and opts["port"] == 3306 and opts["maxRowsPerTrigger"] == 10
    assert opts.groups == {"jdbc.properties.": {"useSSL": "true"}}
    assert opts["scan.startup.mode"] == "initial"


def test_unknown_option_names_itself_and_the_valid_ones() -> None:
    with pytest.raises(OptionError) as err:
        parse_options({"hostname": "h", "hostnam": "x"}, SPECS, context="mysql-cdc")
    assert "'hostnam'" in str(err.value) and "Did you mean 'hostname'" in str(err.value)
    assert "scan.startup.mode" in str(err.value)


def test_invalid_choice_lists_valid_values() -> None:
    with pytest.raises(OptionError, match=r"'scan\.startup\.mode'.*Valid values: initial, latest"):
        parse_options({"hostname": "h", "scan.startup.mode": "sometimes"}, SPECS, context="x")


def test_invalid_number_and_missing_required() -> None:
    with pytest.raises(OptionError, match="'port' has invalid value '99999'; expected an integer"):
        parse_options({"hostname": "h", "port": "99999"}, SPECS, context="x")
    with pytest.raises(OptionError, match="'hostname' is required"):
        parse_options({}, SPECS, context="x")


def test_secret_never_shows() -> None:
    opts = parse_options({"hostname": "h", "password": "hunter2"}, SPECS, context="x")
    assert "hunter2" not in repr(opts) and "hunter2" not in str(opts["password"])
    assert opts["password"].reveal() == "hunter2"
    assert pickle.loads(pickle.dumps(opts["password"])) == Secret("hunter2")


def test_durations() -> None:
    assert parse_duration("30s") == 30 and parse_duration("500ms") == 0.5
    assert parse_duration("5min") == 300 and parse_duration("2") == 2
    with pytest.raises(ValueError):
        parse_duration("soon")


@given(
    st.integers(1, 999_999),
    st.integers(4, (1 << 36) - 1),
    st.integers(1, 999_999),
    st.integers(4, (1 << 36) - 1),
)
def test_versions_follow_position_order(f1: int, p1: int, f2: int, p2: int) -> None:
    a, b = BinlogPosition(f"bin.{f1:06d}", p1), BinlogPosition(f"bin.{f2:06d}", p2)
    assert (a < b) == (a.version < b.version)
    assert 0 < a.version < 2**63


def test_version_of_a_row_stays_below_next_event() -> None:
    # rows 0..n-1 of an event starting at 1000 and ending at 1000 + n + header bytes
    assert commit_version("b.000001", 1000 + 9) < commit_version("b.000001", 1010)


@given(
    st.one_of(
        st.none(),
        st.integers(-(2**64), 2**64),
        st.decimals(allow_nan=False, allow_infinity=False),
        st.text(),
        st.binary(),
        st.dates(),
        st.datetimes(),
        st.floats(allow_nan=False),
    )
)
def test_chunk_keys_survive_the_offset_json(value: Any) -> None:
    import json

    back = decode_key(json.loads(json.dumps(encode_key(value))))
    assert back == value and type(back) is type(value)


def test_progress_json_round_trip() -> None:
    for progress in (
        TableProgress(),
        TableProgress(started=True, cursor=None),
        TableProgress(started=True, cursor=Decimal("18446744073709551615")),
        TableProgress(started=True, cursor=dt.datetime(2024, 1, 2, 3, 4, 5, 6)),
        TableProgress.finished(),
    ):
        assert TableProgress.from_json(progress.to_json()) == progress


def test_even_step_follows_the_distribution_factor() -> None:
    assert even_step(KeyStats(1, 1000, 1000), 100, 0.05, 1000.0) == 100
    assert even_step(KeyStats(1, 10_000, 1000), 100, 0.05, 1000.0) == 1000  # sparse: factor 10
    assert even_step(KeyStats(1, 10**9, 1000), 100, 0.05, 1000.0) is None  # beyond upper bound
    assert even_step(KeyStats("a", "z", 10), 100, 0.05, 1000.0) is None  # not numeric
    assert even_step(KeyStats(None, None, 0), 100, 0.05, 1000.0) is None


@given(st.text(min_size=1), st.text(min_size=1))
def test_table_keys_round_trip_whatever_the_names(database: str, table: str) -> None:
    table_id = TableId(database, table)
    assert TableId.from_key(table_id.key) == table_id


def test_plain_table_keys_read_as_written() -> None:
    assert TableId("app", "orders").key == "app.orders"
    assert TableId.from_key("a\\.b.c") == TableId("a.b", "c")


def test_spark_names_and_strings_are_quoted_whole() -> None:
    from sparkcdc.core.identifiers import quoted, sql_string
    from sparkcdc.sinks.delta.sink import folder_name

    assert quoted("a`b c") == "`a``b c`"
    assert sql_string("it's \\ done") == "'it\\'s \\\\ done'"
    assert folder_name("a/b`c") == "a_b_c"
    assert [folder_name(n) for n in (".", "..", "")] == ["_.", "_..", "_"]


@given(st.text())
def test_quoted_names_parse_back(name: str) -> None:
    from sparkcdc.core.identifiers import quoted

    inner = quoted(name)[1:-1]
    assert inner.replace("``", "`") == name and "`" not in inner.replace("``", "")

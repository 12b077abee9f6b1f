"""``mysql-cdc`` options: Flink CDC names and defaults, every invalid value named with its fix,
case-insensitive keys (Spark lower-cases them) and passwords that never show."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.config import (
    METADATA_COLUMNS,
    SPECS,
    SSL_MODES,
    STARTUP_MODES,
    MySqlSourceConfig,
    parse_config,
)
from sparkcdc.connectors.mysql.server.flavor import ServerFlavor
from sparkcdc.connectors.mysql.server.validation import (
    check_grants,
    global_privileges,
    grant_problems,
    settings_problems,
)
from sparkcdc.core.errors import OptionError, SourceConfigurationError
from sparkcdc.core.secret import Secret

PASSWORD = "s3cr3t-Pa55w0rd!"

BASE: dict[str, str] = {
    "hostname": "db.example.com",
    "username": "cdc",
    "password": PASSWORD,
    "database-name": "shop",
    "table-name": "orders",
}


def options(**changes: str | None) -> dict[str, str]:
    """BASE with ``changes`` (dotted keys via ``**{"scan.startup.mode": ...}``); a value of
    None removes the option."""
    result = dict(BASE)
    for key, value in changes.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def option_error(opts: dict[str, str]) -> str:
    with pytest.raises(OptionError) as info:
        parse_config(opts)
    message = str(info.value)
    assert message.startswith("mysql-cdc: "), message
    assert PASSWORD not in message
    return message


# -- defaults ----------------------------------------------------------------------------


def test_defaults_equal_flink_cdc() -> None:
    config = parse_config(BASE)
    assert config.port == 3306
    assert config.chunk_size == 8096
    assert config.factor_upper == 1000.0
    assert config.factor_lower == 0.05
    assert config.startup_mode == "initial"
    assert config.connect_max_retries == 3
    assert config.connect_timeout == 30.0
    assert config.heartbeat_interval == 30.0
    assert config.fetch_size == 1024
    assert config.server_time_zone is None
    assert config.chunk_key_columns.column_for("db", "t") is None
    assert config.metadata == ()
    assert config.max_rows_per_trigger is None
    assert dict(config.tls) == {}
    assert config.password == Secret(PASSWORD)


def test_default_server_id_is_a_range_in_flinks_band() -> None:
    for _ in range(20):
        low, high = parse_config(BASE).server_ids
        assert 5400 <= low <= 6400
        assert high > low, "one id per concurrent binlog reader: the default must be a range"
    config = parse_config(BASE)
    low, high = config.server_ids
    ids = {config.server_id(i) for i in range(high - low + 1)}
    assert ids == set(range(low, high + 1))


def test_server_id_single_and_range() -> None:
    assert parse_config(options(**{"server-id": "5400"})).server_ids == (5400, 5400)
    config = parse_config(options(**{"server-id": " 5400 - 5408 "}))
    assert config.server_ids == (5400, 5408)
    assert config.server_id(9) == 5400


def test_password_is_optional_and_empty_by_default() -> None:
    assert parse_config(options(password=None)).password.reveal() == ""


# -- names and case ----------------------------------------------------------------------


def test_keys_are_case_insensitive_as_spark_lower_cases_them() -> None:
    lowered = {k.lower(): v for k, v in BASE.items()}
    config = parse_config({**lowered, "maxrowspertrigger": "500", "scan.startup.mode": "SNAPSHOT"})
    assert config.max_rows_per_trigger == 500
    assert config.startup_mode == "snapshot"
    camel = parse_config({**BASE, "maxRowsPerTrigger": "7"})
    assert camel.max_rows_per_trigger == 7
    upper = parse_config(
        {"HOSTNAME": "h", "UserName": "u", "Database-Name": "d", "TABLE-NAME": "t"}
    )
    assert (upper.hostname, upper.username) == ("h", "u")


def test_options_as_key_value_pairs() -> None:
    """The Spark binding passes ``list(options.items())``."""
    assert parse_config(list(options(port="3307").items())).port == 3307


def test_unknown_option_named_with_suggestion_and_valid_list() -> None:
    message = option_error(options(prot="3307"))
    assert "unknown option 'prot'" in message
    assert "Did you mean 'port'?" in message
    for spec in SPECS:
        assert spec.name in message or spec.name + "*" in message


def test_unknown_option_suggests_chunk_size_for_flink_typo() -> None:
    message = option_error(options(**{"scan.incremental.snapshot.chunksize": "10"}))
    assert "'scan.incremental.snapshot.chunk.size'" in message


def test_unknown_option_without_close_match_still_lists_valid_options() -> None:
    message = option_error(options(**{"zzz": "1"}))
    assert "unknown option 'zzz'" in message
    assert "Did you mean" not in message
    assert "Valid options: " in message and "hostname" in message


def test_unknown_option_suggestion_is_right_ignoring_case() -> None:
    message = option_error(options(maxRowsPerTriger="5"))
    assert re.search(r"Did you mean 'maxrowspertrigger'\?", message, re.IGNORECASE), message


def test_unknown_option_suggestion_keeps_the_documented_spelling() -> None:
    message = option_error(options(maxRowsPerTriger="5"))
    assert "Did you mean 'maxRowsPerTrigger'?" in message


@pytest.mark.parametrize("name", ["hostname", "username", "database-name", "table-name"])
def test_required_options(name: str) -> None:
    message = option_error(options(**{name: None}))
    assert f"option '{name}' is required" in message


# -- invalid values: each names the option and what is accepted ---------------------------


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("port", "0", "expected an integer >= 1"),
        ("port", "65536", "expected an integer <= 65535"),
        ("port", "-1", "expected an integer >= 1"),
        ("port", "mysql", "expected an integer"),
        ("server-id", "10-5", "low <= high"),
        ("server-id", "0", "between 1 and 4294967295"),
        ("server-id", "4294967296", "between 1 and 4294967295"),
        ("server-id", "abc", "like 5400 or a range like 5400-5408"),
        ("server-id", "5400-", "like 5400 or a range like 5400-5408"),
        ("database-name", "shop(", "a regular expression (missing )"),
        ("table-name", "[orders", "a regular expression (unterminated character set"),
        ("table-name", "*", "a regular expression (nothing to repeat"),
        ("connect.timeout", "soon", "a duration such as 500ms, 30s, 5min or 1h"),
        ("connect.timeout", "30 parsecs", "a duration such as 500ms, 30s, 5min or 1h"),
        ("connect.timeout", "-5s", "a duration"),
        ("heartbeat.interval", "1d", "a duration"),
        ("connect.max-retries", "-1", "an integer >= 0"),
        ("scan.incremental.snapshot.chunk.size", "0", "an integer >= 1"),
        ("scan.incremental.snapshot.chunk.size", "8k", "an integer"),
        ("scan.incremental.snapshot.rows-per-partition", "0", "an integer >= 1"),
        ("scan.snapshot.fetch.size", "0", "an integer >= 1"),
        ("scan.snapshot.fetch.size", "1000000000000", "an integer <= 1000000"),  # #63
        ("chunk-key.even-distribution.factor.upper-bound", "lots", "a number"),
        ("chunk-key.even-distribution.factor.lower-bound", "-0.5", "a number >= 0.0"),
        ("scan.startup.specific-offset.pos", "3", "an integer >= 4"),
        ("scan.startup.timestamp-millis", "yesterday", "an integer"),
        ("server-time-zone", "Mars/Olympus_Mons", "an IANA time zone such as UTC"),
        ("maxRowsPerTrigger", "0", "an integer >= 1"),
        ("metadata.list", "op_ts,nonsense", "a comma-separated list of database_name"),
    ],
)
def test_invalid_value_names_option_value_and_accepted_form(
    key: str, value: str, expected: str
) -> None:
    message = option_error(options(**{key: value}))
    assert f"option '{key}' has invalid value '{value}'" in message
    assert expected in message


def test_invalid_startup_mode_lists_valid_modes() -> None:
    message = option_error(options(**{"scan.startup.mode": "group-offsets"}))
    assert "option 'scan.startup.mode' has invalid value 'group-offsets'" in message
    assert "Valid values: " + ", ".join(STARTUP_MODES) in message


def test_timestamp_startup_needs_the_timestamp() -> None:
    message = option_error(options(**{"scan.startup.mode": "timestamp"}))
    assert "'scan.startup.timestamp-millis'" in message


def test_invalid_metadata_entry_lists_all_valid_columns() -> None:
    message = option_error(options(**{"metadata.list": "table_name,commit_ts"}))
    assert "commit_ts" in message
    for name in METADATA_COLUMNS:
        assert name in message


def test_metadata_list_is_parsed_case_and_space_insensitively() -> None:
    config = parse_config(options(**{"metadata.list": " Table_Name , op_ts,,"}))
    assert config.metadata == ("table_name", "op_ts")


@pytest.mark.parametrize(
    ("text", "seconds"), [("500ms", 0.5), ("30s", 30.0), ("5min", 300.0), ("1h", 3600.0), ("7", 7)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_config(options(**{"connect.timeout": text})).connect_timeout == seconds


def test_factor_lower_bound_above_upper_bound() -> None:
    message = option_error(
        options(
            **{
                "chunk-key.even-distribution.factor.lower-bound": "20",
                "chunk-key.even-distribution.factor.upper-bound": "10",
            }
        )
    )
    assert "'chunk-key.even-distribution.factor.lower-bound' (20.0)" in message
    assert "upper-bound' (10.0)" in message
    assert "must not exceed" in message


def test_factor_lower_bound_above_default_upper_bound() -> None:
    message = option_error(options(**{"chunk-key.even-distribution.factor.lower-bound": "1001"}))
    assert "lower-bound' (1001.0) must not exceed" in message


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"scan.startup.specific-offset.file": "binlog.000003"},
        {"scan.startup.specific-offset.pos": "154"},
    ],
)
def test_specific_offset_needs_file_and_pos(given: dict[str, str]) -> None:
    message = option_error(options(**{"scan.startup.mode": "specific-offset", **given}))
    assert "'scan.startup.specific-offset.file'" in message
    assert "'scan.startup.specific-offset.pos'" in message
    assert "'scan.startup.specific-offset.gtid-set'" in message


def test_specific_offset_with_file_and_pos() -> None:
    config = parse_config(
        options(
            **{
                "scan.startup.mode": "specific-offset",
                "scan.startup.specific-offset.file": "binlog.000003",
                "scan.startup.specific-offset.pos": "154",
            }
        )
    )
    assert (config.startup_mode, config.specific_file, config.specific_pos) == (
        "specific-offset",
        "binlog.000003",
        154,
    )


def test_unsupported_jdbc_property() -> None:
    message = option_error(options(**{"jdbc.properties.useSSL": "true"}))
    assert "unsupported option 'jdbc.properties.useSSL'" in message
    assert "jdbc.properties.sslMode" in message and "jdbc.properties.sslCa" in message


def test_jdbc_property_value_that_looks_secret_is_not_echoed() -> None:
    message = option_error(options(**{"jdbc.properties.password": PASSWORD}))
    assert "'jdbc.properties.password'" in message


def test_invalid_ssl_mode_lists_valid_modes() -> None:
    message = option_error(options(**{"jdbc.properties.sslMode": "sometimes"}))
    assert "option 'jdbc.properties.sslMode' has invalid value 'sometimes'" in message
    assert "Valid values: " + ", ".join(SSL_MODES) in message


def test_tls_properties_kept() -> None:
    config = parse_config(
        options(**{"jdbc.properties.sslMode": "VERIFY_CA", "jdbc.properties.sslCa": "/ca.pem"})
    )
    assert dict(config.tls) == {"sslMode": "VERIFY_CA", "sslCa": "/ca.pem"}


def test_tls_properties_lower_cased_by_spark() -> None:
    config = parse_config(
        options(**{"jdbc.properties.sslmode": "verify_ca", "jdbc.properties.sslca": "/ca.pem"})
    )
    assert dict(config.tls) == {"sslMode": "verify_ca", "sslCa": "/ca.pem"}


def test_rsa_key_properties_are_connector_j_names_any_case() -> None:
    config = parse_config(
        options(
            **{
                "jdbc.properties.serverrsapublickeyfile": "/key.pem",
                "jdbc.properties.allowPublicKeyRetrieval": "TRUE",
            }
        )
    )
    assert config.server_public_key_file == "/key.pem"
    assert config.allow_public_key_retrieval
    assert config.ssl == {}  # the key properties are no TLS: the connection stays clear
    assert not parse_config(BASE).allow_public_key_retrieval
    message = option_error(options(**{"jdbc.properties.allowPublicKeyRetrieval": "yes"}))
    assert "'jdbc.properties.allowPublicKeyRetrieval' has invalid value 'yes'" in message


def test_one_tls_mode_for_every_connection_and_no_rsa_key_over_tls() -> None:
    from sparkcdc.connectors.mysql.server.secure import key_file, tls_properties

    with_ca = parse_config(options(**{"jdbc.properties.sslCa": "/ca.pem"}))
    assert tls_properties(with_ca) == {"sslMode": "verify_identity", "sslCa": "/ca.pem"}
    message = option_error(
        options(**{"jdbc.properties.sslMode": "REQUIRED", "jdbc.properties.sslCa": "/ca.pem"})
    )
    assert "does not verify the server" in message  # core/tls.py's rule
    required = parse_config(options(**{"jdbc.properties.sslMode": "REQUIRED"}))
    assert tls_properties(required) == {"sslMode": "required"}
    assert key_file(required) is None  # over TLS no RSA key is used
    no_key = key_file(parse_config(BASE))  # clear text, no key given: a file holding none
    assert no_key is not None and b"BEGIN" not in Path(no_key).read_bytes()


# -- secrets -----------------------------------------------------------------------------


def test_password_never_in_repr_or_str() -> None:
    config = parse_config(BASE)
    for text in (repr(config), str(config), repr(config.password), str(config.password)):
        assert PASSWORD not in text
    assert config.password.reveal() == PASSWORD
    assert "db.example.com" in repr(config) and "cdc" in repr(config)


def test_password_survives_pickling_but_not_repr() -> None:
    config = pickle.loads(pickle.dumps(parse_config(BASE)))
    assert isinstance(config, MySqlSourceConfig)
    assert config.password.reveal() == PASSWORD
    assert PASSWORD not in repr(config)


#: Option sets each producing an OptionError for a reason other than the password.
BROKEN: list[dict[str, str]] = [
    {"prot": "1"},
    {"port": "0"},
    {"scan.startup.mode": "sometimes"},
    {"server-id": "10-5"},
    {"table-name": "(("},
    {"metadata.list": "nope"},
    {"connect.timeout": "soon"},
    {"chunk-key.even-distribution.factor.lower-bound": "2000"},
    {"scan.startup.mode": "specific-offset"},
    {"jdbc.properties.nope": "1"},
    {"jdbc.properties.sslMode": "maybe"},
    {"server-time-zone": "Nowhere/Atlantis"},
    {"maxrowspertrigger": "-3"},
]


@given(
    password=st.text(min_size=1, max_size=40),
    broken=st.sampled_from(BROKEN),
    upper=st.booleans(),
)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_no_option_error_mentions_the_password(
    password: str, broken: dict[str, str], upper: bool
) -> None:
    """Messages never depend on the password, so they cannot contain it."""
    key = "PASSWORD" if upper else "password"
    opts = {**{k: v for k, v in BASE.items() if k != "password"}, key: password, **broken}
    with pytest.raises(OptionError) as info:
        parse_config(opts)
    other = {**opts, key: "a-different-password"}
    with pytest.raises(OptionError) as info_other:
        parse_config(other)
    assert str(info.value) == str(info_other.value)


@given(password=st.text(min_size=1, max_size=40))
@settings(max_examples=100, deadline=None)
def test_password_never_in_config_repr(password: str) -> None:
    config = parse_config({**BASE, "password": password})
    assert config.password.reveal() == password
    assert repr(config) == repr(parse_config({**BASE, "password": "other"}))
    assert "******" in repr(config.password)


def test_missing_required_option_error_does_not_show_password() -> None:
    message = option_error({"password": PASSWORD})
    assert "is required" in message


# -- validation pieces that need no server -------------------------------------------------


GOOD = {
    "log_bin": "ON",
    "binlog_format": "ROW",
    "binlog_row_image": "FULL",
    "binlog_row_metadata": "NO_LOG",  # any value: rows are named by the schema history
}


MARIADB = ServerFlavor.parse("10.11.19-MariaDB-0+deb12u1-log")
MYSQL8 = ServerFlavor.parse("8.0.15")


def test_settings_problems_lists_each_setting_with_its_fix() -> None:
    assert settings_problems(GOOD, MARIADB) == []
    assert settings_problems({k: v.lower() for k, v in GOOD.items()}, MARIADB) == []
    bad = {"log_bin": "OFF", "binlog_format": "MIXED", "binlog_row_image": "MINIMAL"}
    problems = settings_problems(bad, MARIADB)
    assert len(problems) == 3
    assert problems[0].startswith("log_bin is OFF, needs ON: start the server with log-bin")
    assert problems[1].startswith("binlog_format is MIXED, needs ROW: set binlog_format=ROW")
    assert problems[2].startswith("binlog_row_image is MINIMAL, needs FULL")
    assert not any("binlog_row_metadata" in p for p in settings_problems({}, MYSQL8))


def grant(privileges: str, user: str = "cdc") -> str:
    return f"GRANT {privileges} ON *.* TO `{user}`@`%` IDENTIFIED BY PASSWORD '*ABCDEF'"


@pytest.mark.parametrize(
    "grants",
    [
        [grant("SELECT, REPLICATION SLAVE, BINLOG MONITOR")],  # MariaDB 10.5+
        [grant("SELECT, REPLICATION SLAVE, REPLICATION CLIENT")],  # MySQL
        [grant("SELECT, REPLICATION REPLICA, SUPER")],
        [grant("ALL PRIVILEGES")],
        [grant("USAGE"), "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'%'"],
        ["grant select,replication slave,binlog monitor on *.* to cdc@localhost"],
    ],
)
def test_grants_accepted(grants: list[str]) -> None:
    assert grant_problems(grants, "cdc", MARIADB) == []
    check_grants(grants, "cdc", MYSQL8)


@pytest.mark.parametrize(
    ("grants", "missing"),
    [
        ([grant("SELECT, BINLOG MONITOR")], "REPLICATION SLAVE"),
        ([grant("SELECT, REPLICATION SLAVE")], "REPLICATION CLIENT"),
        ([grant("SELECT")], "REPLICATION SLAVE and REPLICATION CLIENT"),
        # MariaDB 10.5+ privileges whose names contain the needed ones but are different
        ([grant("SELECT, REPLICATION SLAVE ADMIN, BINLOG MONITOR")], "REPLICATION SLAVE"),
        ([grant("SELECT, REPLICATION SLAVE, BINLOG ADMIN")], "REPLICATION CLIENT"),
        ([grant("SELECT, REPLICATION MASTER ADMIN, BINLOG REPLAY")], "REPLICATION SLAVE and"),
        # granted on one database only: replication privileges are global
        (
            ["GRANT USAGE ON *.* TO `cdc`@`%`", "GRANT ALL PRIVILEGES ON `shop`.* TO `cdc`@`%`"],
            "REPLICATION SLAVE and REPLICATION CLIENT",
        ),
    ],
)
def test_grants_missing(grants: list[str], missing: str) -> None:
    problems = grant_problems(grants, "'cdc'@'%'", MYSQL8)
    assert len(problems) == 1
    assert f"user 'cdc'@'%' lacks {missing}" in problems[0]
    assert "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'cdc'@'%'" in problems[0]
    # SELECT per captured database, never on every database of the server
    assert "GRANT SELECT ON `<database>`.* TO 'cdc'@'%'" in problems[0]
    assert "SELECT ON *.*" not in problems[0] and "SELECT," not in problems[0]
    assert "*ABCDEF" not in problems[0]
    with pytest.raises(SourceConfigurationError, match="lacks"):
        check_grants(grants, "cdc", MYSQL8)


def test_grant_message_names_mariadb_spelling_and_placeholder_host() -> None:
    (problem,) = grant_problems([grant("SELECT, REPLICATION SLAVE")], "cdc", MARIADB)
    assert "REPLICATION CLIENT (called BINLOG MONITOR in MariaDB 10.11.19)" in problem
    assert "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.*" in problem
    assert "TO 'cdc'@'<host>'" in problem


def test_global_privileges_are_split_exactly() -> None:
    assert global_privileges([grant("SELECT, REPLICATION SLAVE ADMIN,  BINLOG   MONITOR")]) == {
        "SELECT",
        "REPLICATION SLAVE ADMIN",
        "BINLOG MONITOR",
    }


def test_tls_reaches_the_binlog_connections() -> None:
    import ssl

    from sparkcdc.connectors.mysql.server.connection import replication_settings

    assert "ssl" not in replication_settings(parse_config(options()))
    required = replication_settings(
        parse_config(options(**{"jdbc.properties.sslMode": "required"}))
    )
    assert isinstance(required["ssl"], ssl.SSLContext)
    assert required["ssl"].verify_mode == ssl.CERT_NONE and not required["ssl"].check_hostname
    strict = replication_settings(
        parse_config(options(**{"jdbc.properties.sslmode": "VERIFY_IDENTITY"}))
    )["ssl"]
    assert strict.verify_mode == ssl.CERT_REQUIRED and strict.check_hostname
    disabled = parse_config(options(**{"jdbc.properties.sslMode": "disabled"}))
    assert "ssl" not in replication_settings(disabled)

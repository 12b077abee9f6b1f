"""Every way a MySQL/MariaDB server or account can be unfit for CDC is caught up front, before
any data moves, with a message that names the setting/privilege/option and the fix.

Two extra servers besides the harness's shared one: one with the binlog off (log_bin is not
dynamic) and one whose dynamic globals (binlog_format, binlog_row_image, and
binlog_row_metadata, which any value of will do) the tests flip as root and always restore.
Accounts with missing privileges live there too,
so the shared server stays untouched apart from per-test databases.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.server.connection import connect
from sparkcdc.connectors.mysql.server.discovery import discover_tables
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.core.errors import SchemaError, SourceConfigurationError, SparkCdcError
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.embedded.mariadb import CDC_SETTINGS, Account

#: The dynamic globals the tests flip, with the value CDC needs.
CDC_GLOBALS = {
    "binlog_format": CDC_SETTINGS["binlog-format"],
    "binlog_row_image": CDC_SETTINGS["binlog-row-image"],
}
DB = "shop"
TABLE = "orders"


def _with_table(server: EmbeddedMariaDB) -> EmbeddedMariaDB:
    server.create_database(DB)
    server.execute(f"CREATE TABLE `{TABLE}` (id INT PRIMARY KEY, note VARCHAR(20))", database=DB)
    server.execute(f"INSERT INTO `{TABLE}` VALUES (1, 'a'), (2, 'b')", database=DB)
    return server


@pytest.fixture(scope="module")
def binlog_off() -> Iterator[EmbeddedMariaDB]:
    with EmbeddedMariaDB(settings={"log-bin": None}) as server:
        yield _with_table(server)


@pytest.fixture(scope="module")
def flip_server() -> Iterator[EmbeddedMariaDB]:
    with EmbeddedMariaDB() as server:
        yield _with_table(server)


def global_values(server: EmbeddedMariaDB) -> dict[str, str]:
    return {name: str(server.execute(f"SELECT @@GLOBAL.{name}")[0][0]) for name in CDC_GLOBALS}


@pytest.fixture
def flipped(flip_server: EmbeddedMariaDB) -> Iterator[EmbeddedMariaDB]:
    """The flip server, proven correctly configured before and after the test."""
    assert global_values(flip_server) == CDC_GLOBALS
    yield flip_server
    assert global_values(flip_server) == CDC_GLOBALS, "a test left a global flipped"


@contextmanager
def set_globals(server: EmbeddedMariaDB, **values: str) -> Iterator[None]:
    """``SET GLOBAL`` each value as root; restore the previous values whatever happens."""
    before = {name: str(server.execute(f"SELECT @@GLOBAL.{name}")[0][0]) for name in values}
    try:
        for name, value in values.items():
            server.execute(f"SET GLOBAL {name} = %s", (value,))
        yield
    finally:
        for name, value in before.items():
            server.execute(f"SET GLOBAL {name} = %s", (value,))


def make_user(server: EmbeddedMariaDB, privileges: str | None) -> Account:
    """A new account (random password) holding ``privileges`` ON *.* (None: nothing)."""
    account = Account(f"u_{secrets.token_hex(4)}", "pw-" + secrets.token_urlsafe(12))
    server.execute(
        "CREATE USER %s@'%%' IDENTIFIED BY %s",
        (account.user, account.password),
    )
    if privileges:
        server.execute(f"GRANT {privileges} ON *.* TO '{account.user}'@'%'")
    return account


def opts(
    server: EmbeddedMariaDB,
    account: Account | None = None,
    *,
    database: str = DB,
    table: str = TABLE,
    extra: dict[str, str] | None = None,
    **simple: str,
) -> dict[str, str]:
    """Options reaching ``server`` as ``account``; ``simple``/``extra`` add or override."""
    return {
        **server.source_options(account),
        "database-name": database,
        "table-name": table,
        **simple,
        **(extra or {}),
    }


def open_source(options: dict[str, str]) -> Any:
    """Validation + discovery exactly as the Spark binding triggers them; the Arrow schema."""
    source = MySqlCdcSource(parse_config(options))
    try:
        return source.arrow_schema()
    finally:
        source.close()


def failure(options: dict[str, str], kind: type[SparkCdcError]) -> str:
    """The message of the error ``kind`` the source raises up front; it never holds a secret."""
    with pytest.raises(kind) as info:
        open_source(options)
    message = str(info.value)
    assert options["password"] not in message
    return message


def problems(message: str) -> list[str]:
    """The bullet items of a multi-problem message."""
    return [line[4:] for line in message.splitlines() if line.startswith("  - ")]


# -- the good case: the harness's least-privilege user on a correctly configured server ------


def test_correct_setup_passes(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)", database=mysql_db)
    schema = open_source(opts(mariadb, database=mysql_db, table="t"))
    assert {"id", "v"} <= set(schema.names)


def test_flip_server_passes_when_restored(flipped: EmbeddedMariaDB) -> None:
    assert "id" in open_source(opts(flipped)).names


# -- server settings ------------------------------------------------------------------------


def test_binlog_off(binlog_off: EmbeddedMariaDB) -> None:
    assert binlog_off.execute("SELECT @@GLOBAL.log_bin")[0][0] == 0
    message = failure(opts(binlog_off), SourceConfigurationError)
    assert problems(message) == [
        "log_bin is OFF, needs ON: start the server with log-bin "
        "(e.g. log-bin=mysql-bin in [mysqld])"
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("binlog_format", "STATEMENT"),
        ("binlog_format", "MIXED"),
        ("binlog_row_image", "MINIMAL"),
        ("binlog_row_image", "NOBLOB"),
    ],
)
def test_binlog_setting_wrong(flipped: EmbeddedMariaDB, name: str, value: str) -> None:
    wanted = CDC_GLOBALS[name]
    with set_globals(flipped, **{name: value}):
        message = failure(opts(flipped), SourceConfigurationError)
    (problem,) = problems(message)
    assert problem.startswith(f"{name} is {value}, needs {wanted}: set {name}={wanted} in [mysqld]")
    assert f"SET GLOBAL {name}='{wanted}'" in problem
    # the fix works: with the value restored (set_globals did), the source opens
    assert "id" in open_source(opts(flipped)).names


@pytest.mark.parametrize("value", ["NO_LOG", "MINIMAL", "FULL"])
def test_any_row_metadata_is_accepted(flipped: EmbeddedMariaDB, value: str) -> None:
    """Rows are named by the schema history, so the server's default (NO_LOG) will do."""
    with set_globals(flipped, binlog_row_metadata=value):
        assert "id" in open_source(opts(flipped)).names


def test_set_globals_restores_after_failure(flipped: EmbeddedMariaDB) -> None:
    with pytest.raises(RuntimeError), set_globals(flipped, binlog_format="MIXED"):
        raise RuntimeError("boom")
    assert global_values(flipped) == CDC_GLOBALS


# -- privileges ------------------------------------------------------------------------------


def grants_in(message: str) -> tuple[str, str]:
    """The message's two GRANTs: the global replication privileges, SELECT per database."""
    match = re.search(
        r"run (GRANT [^(]+? ON \*\.\* TO \S+), and (GRANT SELECT ON `<database>`\.\* TO \S+) ",
        message,
    )
    assert match, message
    return match.group(1), match.group(2)


@pytest.mark.parametrize(
    ("privileges", "missing"),
    [
        ("SELECT, REPLICATION CLIENT", "REPLICATION SLAVE"),
        ("SELECT, BINLOG MONITOR", "REPLICATION SLAVE"),
        ("SELECT, REPLICATION SLAVE", "REPLICATION CLIENT (called BINLOG MONITOR in MariaDB"),
        ("SELECT", "REPLICATION SLAVE and REPLICATION CLIENT"),
        # MariaDB 10.5+ privileges whose names contain the needed ones but grant something else
        ("SELECT, REPLICATION SLAVE ADMIN, BINLOG MONITOR", "REPLICATION SLAVE"),
        ("SELECT, REPLICATION SLAVE, BINLOG ADMIN", "REPLICATION CLIENT"),
    ],
)
def test_missing_privilege(flipped: EmbeddedMariaDB, privileges: str, missing: str) -> None:
    account = make_user(flipped, privileges)
    message = failure(opts(flipped, account), SourceConfigurationError)
    (problem,) = problems(message)
    assert problem.startswith(f"user '{account.user}'@'%' lacks {missing}"), problem
    # the GRANTs in the message are runnable as written (the database named) and are all
    # it takes; SELECT is asked for per database, never on every database of the server
    replication, select = grants_in(problem)
    assert replication == (
        f"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO '{account.user}'@'%'"
    )
    assert select == f"GRANT SELECT ON `<database>`.* TO '{account.user}'@'%'"
    flipped.execute(replication)
    flipped.execute(select.replace("<database>", DB))
    assert "id" in open_source(opts(flipped, account)).names


def test_replication_privileges_and_select_on_the_database_are_enough(
    flipped: EmbeddedMariaDB,
) -> None:
    account = make_user(flipped, "REPLICATION SLAVE, BINLOG MONITOR")
    flipped.execute(f"GRANT SELECT ON `{DB}`.* TO '{account.user}'@'%'")
    assert "id" in open_source(opts(flipped, account)).names


@pytest.mark.parametrize(
    "privileges",
    [
        "SELECT, REPLICATION SLAVE, REPLICATION CLIENT",
        "SELECT, REPLICATION SLAVE, BINLOG MONITOR",
        "SELECT, REPLICATION REPLICA, BINLOG MONITOR",
        "SELECT, REPLICATION SLAVE, SUPER",
        "ALL PRIVILEGES",
    ],
)
def test_sufficient_privileges(flipped: EmbeddedMariaDB, privileges: str) -> None:
    account = make_user(flipped, privileges)
    assert "id" in open_source(opts(flipped, account)).names


def test_privileges_on_one_database_are_not_enough(flipped: EmbeddedMariaDB) -> None:
    account = make_user(flipped, None)
    flipped.execute(f"GRANT ALL PRIVILEGES ON `{DB}`.* TO '{account.user}'@'%'")
    message = failure(opts(flipped, account), SourceConfigurationError)
    assert "lacks REPLICATION SLAVE and REPLICATION CLIENT" in message


def test_user_without_select_sees_no_table(flipped: EmbeddedMariaDB) -> None:
    account = make_user(flipped, "REPLICATION SLAVE, BINLOG MONITOR")
    message = failure(opts(flipped, account), SourceConfigurationError)
    assert f"no table matches database-name '{DB}' and table-name '{TABLE}'" in message
    assert f"user '{account.user}'" in message
    assert "SELECT" in message


def test_wrong_password_never_shown(
    flipped: EmbeddedMariaDB, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = "Wr0ng-" + secrets.token_urlsafe(16)
    caplog.set_level(logging.DEBUG)
    message = failure(opts(flipped, password=wrong), SourceConfigurationError)
    assert f"cannot log in to {flipped.host}:{flipped.port} as 'sparkcdc_cdc'" in message
    assert "Check 'username'/'password'" in message
    assert wrong not in message
    assert wrong not in caplog.text
    assert flipped.cdc.password not in message


def test_unknown_user(flipped: EmbeddedMariaDB) -> None:
    message = failure(opts(flipped, Account("nobody_here", "pw-x")), SourceConfigurationError)
    assert "as 'nobody_here'" in message and "Check 'username'/'password'" in message


def test_unreachable_port_names_hostname_and_port(flipped: EmbeddedMariaDB) -> None:
    from sparkcdc.embedded.process import free_port

    options = opts(flipped, port=str(free_port()), extra={"connect.max-retries": "0"})
    try:
        open_source(options)
    except SourceConfigurationError as exc:
        assert "'hostname'" in str(exc) and "'port'" in str(exc)
    except Exception as exc:  # the bug: not our error type, no option named
        raise AssertionError(f"{type(exc).__name__}: {exc}") from None
    else:
        raise AssertionError("an unreachable port must fail")


# -- several problems at once ----------------------------------------------------------------


def test_all_problems_listed_at_once(flipped: EmbeddedMariaDB) -> None:
    account = make_user(flipped, "SELECT")
    with set_globals(
        flipped, binlog_format="MIXED", binlog_row_image="MINIMAL", binlog_row_metadata="NO_LOG"
    ):  # binlog_row_metadata is no problem
        message = failure(opts(flipped, account), SourceConfigurationError)
    found = problems(message)
    assert [p.split(" ")[0] for p in found] == [
        "binlog_format",
        "binlog_row_image",
        "user",
    ], message
    assert "binlog_format is MIXED, needs ROW" in found[0]
    assert "binlog_row_image is MINIMAL, needs FULL" in found[1]
    assert "lacks REPLICATION SLAVE and REPLICATION CLIENT" in found[2]


def test_binlog_off_and_privileges_listed_together(binlog_off: EmbeddedMariaDB) -> None:
    account = make_user(binlog_off, "SELECT, REPLICATION SLAVE")
    found = problems(failure(opts(binlog_off, account), SourceConfigurationError))
    assert len(found) == 2
    assert found[0].startswith("log_bin is OFF, needs ON")
    assert "lacks REPLICATION CLIENT" in found[1]


# -- tables and table options ---------------------------------------------------------------


def test_table_without_primary_key(
    mariadb: EmbeddedMariaDB, mysql_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A keyless table with no chunk key column is read as one chunk while it holds at most
    ``scan.incremental.snapshot.chunk.size`` rows; one over that alone has nothing to
    capture; in a pattern, the keyed tables are captured and the keyless one is left out
    with a warning naming it, the size and the chunk key option."""
    mariadb.execute("CREATE TABLE nokey (a INT, b INT)", database=mysql_db)
    mariadb.execute("INSERT INTO nokey VALUES (1, 1), (1, 1), (2, 2)", database=mysql_db)
    small = open_source(opts(mariadb, database=mysql_db, table="nokey"))
    assert small.names[:2] == ["a", "b"]
    size = {"scan.incremental.snapshot.chunk.size": "2"}
    message = failure(opts(mariadb, database=mysql_db, table="nokey", extra=size), SchemaError)
    assert "matches only tables without a primary key" in message
    assert f"{mysql_db}.nokey" in message
    mariadb.execute("CREATE TABLE keyed (id INT PRIMARY KEY)", database=mysql_db)
    with caplog.at_level(logging.WARNING, logger="sparkcdc.snapshot.keyless"):
        schema = open_source(opts(mariadb, database=mysql_db, table="nokey|keyed", extra=size))
    assert "id" in schema.names
    warned = [r.getMessage() for r in caplog.records if r.name == "sparkcdc.snapshot.keyless"]
    assert len(warned) == 1
    assert f"table {mysql_db}.nokey has no primary key: not captured" in warned[0]
    assert "give it a primary key" in warned[0]
    assert "at most 2 rows ('scan.incremental.snapshot.chunk.size')" in warned[0]
    assert "'scan.incremental.snapshot.chunk.key-column'" in warned[0]


def chunk_keys(options: dict[str, str]) -> dict[str, str]:
    """Each discovered table's chunk key column."""
    config = parse_config(options)
    conn = connect(config)
    try:
        return {t.table_id.table: t.chunk_key for t in discover_tables(conn, config)}
    finally:
        conn.close()


def test_chunk_key_column_per_table(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    """Flink CDC's ``db.t:col;db2.t2:col2``: the first entry whose pattern matches names the
    column; other tables keep their primary key's first column."""
    for name in ("orders", "order_lines", "users"):
        mariadb.execute(
            f"CREATE TABLE {name} (id INT PRIMARY KEY, sku INT NOT NULL, at INT NOT NULL)",
            database=mysql_db,
        )
    option = f"{mysql_db}.orders:sku; {mysql_db}.order_\\.*:at;{mysql_db}.\\.*:sku"
    found = chunk_keys(
        opts(
            mariadb,
            database=mysql_db,
            table="orders|order_lines|users",
            extra={"scan.incremental.snapshot.chunk.key-column": option},
        )
    )
    assert found == {"orders": "sku", "order_lines": "at", "users": "sku"}
    found = chunk_keys(
        opts(
            mariadb,
            database=mysql_db,
            table="orders|users",
            extra={"scan.incremental.snapshot.chunk.key-column": "other_db.orders:sku"},
        )
    )
    assert found == {"orders": "id", "users": "id"}
    message = failure(
        opts(
            mariadb,
            database=mysql_db,
            table="orders",
            extra={"scan.incremental.snapshot.chunk.key-column": f"{mysql_db}.orders:skew"},
        ),
        SchemaError,
    )
    assert f"table {mysql_db}.orders has no such column" in message


@pytest.mark.parametrize(
    ("database", "table"),
    [
        ("{db}", "no_such_table"),
        ("no_such_db", "t"),
        ("{db}", "t_"),  # a prefix is not a match: the whole name must match
        ("{db}", "T"),  # and case matters, as in table names on Linux
    ],
)
def test_names_matching_nothing(
    mariadb: EmbeddedMariaDB, mysql_db: str, database: str, table: str
) -> None:
    mariadb.execute("CREATE TABLE t_orders (id INT PRIMARY KEY)", database=mysql_db)
    database = database.format(db=mysql_db)
    message = failure(opts(mariadb, database=database, table=table), SourceConfigurationError)
    assert f"no table matches database-name '{database}' and table-name '{table}'" in message
    assert "regular expressions matched against the whole name" in message


def test_regex_matching_the_table(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute("CREATE TABLE t_orders (id INT PRIMARY KEY)", database=mysql_db)
    assert open_source(opts(mariadb, database=mysql_db[:-6] + ".*", table="t_.*")).names


def test_chunk_key_column_missing(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, sku INT)", database=mysql_db)
    options = opts(
        mariadb,
        database=mysql_db,
        table="t",
        extra={"scan.incremental.snapshot.chunk.key-column": "skew"},
    )
    message = failure(options, SchemaError)
    assert "'scan.incremental.snapshot.chunk.key-column' is 'skew'" in message
    assert f"table {mysql_db}.t has no such column. Columns: id, sku" in message


# -- through Spark: the message reaches the user's exception -------------------------------


def spark_failure(spark: Any, options: dict[str, str]) -> str:
    with pytest.raises(Exception) as info:
        spark.readStream.format("mysql-cdc").options(**options).load()
    return str(info.value)


def test_spark_shows_server_problem(spark: Any, binlog_off: EmbeddedMariaDB) -> None:
    options = opts(binlog_off)
    text = spark_failure(spark, options)
    assert "SourceConfigurationError" in text
    assert "log_bin is OFF, needs ON: start the server with log-bin" in text
    assert options["password"] not in text


def test_spark_wrong_password_not_shown(spark: Any, flipped: EmbeddedMariaDB) -> None:
    wrong = "Wr0ng-" + secrets.token_urlsafe(16)
    text = spark_failure(spark, opts(flipped, password=wrong))
    assert "cannot log in to" in text and "Check 'username'/'password'" in text
    assert wrong not in text


def test_spark_shows_option_error(spark: Any, flipped: EmbeddedMariaDB) -> None:
    options = opts(flipped, extra={"scan.startup.mode": "latest"})
    text = spark_failure(spark, options)
    assert "option 'scan.startup.mode' has invalid value 'latest'. Valid values: initial" in text
    assert options["password"] not in text


def test_spark_accepts_a_correct_setup(spark: Any, flipped: EmbeddedMariaDB) -> None:
    frame = spark.readStream.format("mysql-cdc").options(**opts(flipped)).load()
    assert {"id", "note"} <= set(frame.columns)


def test_spark_accepts_jdbc_properties(spark: Any, flipped: EmbeddedMariaDB) -> None:
    options = opts(flipped, extra={"jdbc.properties.sslMode": "disabled"})
    frame = spark.readStream.format("mysql-cdc").options(**options).load()
    assert "id" in frame.columns

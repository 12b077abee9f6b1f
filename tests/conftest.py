"""Test harness: real services on loopback, started once per test session and only when used.

Tests under ``tests/integration``, ``tests/conformance`` and ``tests/faults`` are marked
``integration``; everything else is a fast unit test needing no server. A service that
cannot start is an error, never a skip. Under pytest-xdist each test process has its own
servers and SparkSession.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from sparkcdc.embedded import EmbeddedKafka, EmbeddedMariaDB, EmbeddedMySQL, EmbeddedPostgres
from sparkcdc.embedded.binlog_server import BinlogServer
from sparkcdc.embedded.process import log_tail, process_state
from sparkcdc.spark.class_archive import JAVA_OPTIONS_ENV
from tests.support.certificates import issue_certificates
from tests.support.runs import kill_leftover_runs
from tests.support.schedule import long_tests_first

# Tests never assert on wall-clock time, and hypothesis's per-example deadline is one: two
# test processes on a small machine can make any example slow.
settings.register_profile("sparkcdc", deadline=None)
settings.load_profile("sparkcdc")

#: The driver JVMs of processes the tests start (``sparkcdc run``, the conformance suite's
#: driver) live from seconds to a minute or two, mostly killed or ended early: C1 only, as
#: the C2 compiler's work never pays off in them (the delta kill loop, same machine and
#: sitting: 107 s and 121 s instead of 133 s and 154 s). This process's own SparkSession
#: lives for the whole test session and keeps the JVM's default (there C2 pays off: its
#: steady batches took ~10% longer with C1). A value set outside the tests wins.
CHILD_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
#: The options set outside the tests, kept where pytest-xdist's workers (which inherit
#: the environment of the process that loaded this file first) find them too.
OWN_JAVA_OPTIONS = "SPARKCDC_TESTS_OWN_JAVA_OPTIONS"
os.environ.setdefault(OWN_JAVA_OPTIONS, os.environ.get(JAVA_OPTIONS_ENV, ""))
os.environ[JAVA_OPTIONS_ENV] = os.environ[OWN_JAVA_OPTIONS] or CHILD_JAVA_OPTIONS

#: Tests under these folders need real services (the conformance suite too).
SERVICE_DIRS = tuple(Path(__file__).parent / d for d in ("integration", "conformance", "faults"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(d in Path(str(item.fspath)).parents for d in SERVICE_DIRS):
            item.add_marker(pytest.mark.integration)
    # the longest tests start first, spread over the test processes (tests/support/schedule.py)
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = long_tests_first(items, [item.nodeid for item in items], workers)


#: The session's servers whose state and log tail a failed test's report shows.
SERVER_FIXTURES = ("mariadb", "mysql8", "mysql57", "binlog_server", "postgres", "kafka")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test's report carries the state and log tail of each session server it
    used: their folders (and logs) are deleted when the session ends, and a server that
    died or stopped answering mid-test is otherwise a guess."""
    report = yield
    if report.failed:
        used = getattr(item, "funcargs", {})
        for name in SERVER_FIXTURES:
            server = used.get(name)
            if server is not None:
                state = process_state(getattr(server, "_process", None))
                report.sections.append(
                    (f"{name} server ({state}): {server.log}", log_tail(server.log, 25))
                )
    return report


def _unique(request: pytest.FixtureRequest, prefix: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:32]
    return f"{prefix}_{stem}_{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def mariadb_server() -> Iterator[EmbeddedMariaDB]:
    server = EmbeddedMariaDB().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mariadb(mariadb_server: EmbeddedMariaDB) -> EmbeddedMariaDB:
    """The session's MariaDB. A module whose tests also prove something on MySQL
    overrides this name with a fixture parametrized by flavour (``on_flavors``)."""
    return mariadb_server


@pytest.fixture
def mysql_db(mariadb: EmbeddedMariaDB, request: pytest.FixtureRequest) -> str:
    """A fresh database on the shared MariaDB, named after the test."""
    return mariadb.create_database(_unique(request, "db"))


@pytest.fixture(scope="session")
def mysql8() -> Iterator[EmbeddedMySQL]:
    """Oracle's MySQL 8.0.15 (its defaults: binlog_row_metadata=MINIMAL), started on first
    use; for what MariaDB cannot prove (GTID sets, MySQL's collations, types, auth)."""
    server = EmbeddedMySQL("mysql8").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mysql57() -> Iterator[EmbeddedMySQL]:
    """Oracle's MySQL 5.7.19, started on first use."""
    server = EmbeddedMySQL("mysql57").start()
    try:
        yield server
    finally:
        server.stop()


#: The flavours of the MySQL family a test can ask for, by fixture name.
BINLOG_FLAVORS = ("mariadb", "mysql8", "mysql57")


@pytest.fixture
def binlog_server(request: pytest.FixtureRequest) -> BinlogServer:
    """The session's server of the flavour a test asks for with
    ``@pytest.mark.parametrize("binlog_server", ["mariadb", "mysql8"], indirect=True)``;
    MariaDB when it does not ask (the flavour that proves nothing new)."""
    flavor = getattr(request, "param", "mariadb")
    if flavor not in BINLOG_FLAVORS:
        raise ValueError(f"unknown flavour {flavor!r}; choose from {BINLOG_FLAVORS}")
    return flavor_server(request, flavor)


def flavor_server(request: pytest.FixtureRequest, flavor: str) -> BinlogServer:
    """The session's server of ``flavor`` (``mariadb``, ``mysql8``, ``mysql57``)."""
    server: BinlogServer = request.getfixturevalue(
        "mariadb_server" if flavor == "mariadb" else flavor
    )
    return server


def on_flavors(*flavors: str) -> Any:
    """A ``mariadb`` fixture for a module whose tests run on each of ``flavors``:
    ``mariadb = on_flavors("mariadb", "mysql8")`` at module level (the tests keep their
    ``mariadb`` and ``mysql_db`` parameters)."""

    @pytest.fixture(params=flavors)
    def mariadb(request: pytest.FixtureRequest) -> BinlogServer:
        return flavor_server(request, request.param)

    return mariadb


@pytest.fixture
def flavor_db(binlog_server: BinlogServer, request: pytest.FixtureRequest) -> str:
    """A fresh database on ``binlog_server``, named after the test."""
    return binlog_server.create_database(_unique(request, "db"))


@pytest.fixture(scope="session")
def postgres() -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_db(postgres: EmbeddedPostgres, request: pytest.FixtureRequest) -> str:
    return postgres.create_database(_unique(request, "db"))


@pytest.fixture(scope="session")
def kafka() -> Iterator[EmbeddedKafka]:
    broker = EmbeddedKafka().start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    return _unique(request, "topic")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from sparkcdc.spark.session import local_session

    children = os.environ[JAVA_OPTIONS_ENV]
    os.environ[JAVA_OPTIONS_ENV] = os.environ[OWN_JAVA_OPTIONS]  # not the children's
    try:
        session = local_session("sparkcdc-tests")
    finally:
        os.environ[JAVA_OPTIONS_ENV] = children
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(autouse=True)
def _no_run_left_behind() -> Iterator[None]:
    """No ``sparkcdc run`` process of a test outlives it (tests/support/runs.py)."""
    yield
    kill_leftover_runs()


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A per-test folder for checkpoints and tables."""
    return tmp_path


@pytest.fixture(scope="session")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A test CA, a server certificate for 127.0.0.1 it signed, and an unrelated CA
    (tests/support/certificates.py), for the servers that take TLS clients only."""
    return issue_certificates(tmp_path_factory.mktemp("tls"))

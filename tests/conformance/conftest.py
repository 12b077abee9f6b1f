"""Every conformance test runs once per connector fixture (tests/conformance/connector.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest

from sparkcdc.embedded import EmbeddedMariaDB, EmbeddedPostgres
from tests.conformance.connector import ConnectorUnderTest
from tests.conformance.mariadb import MariaDbConnector
from tests.conformance.mysql import MySqlConnector
from tests.conformance.postgres import PostgresConnector
from tests.conformance.sink import SinkUnderTest
from tests.conformance.sinks import (
    ConsoleUnderTest,
    DeltaUnderTest,
    JdbcUnderTest,
    KafkaUnderTest,
)

#: Connector registry name -> how to build its fixture from the harness's services.
FIXTURES: dict[str, Callable[[pytest.FixtureRequest], ConnectorUnderTest]] = {
    "mysql": lambda request: MariaDbConnector(request.getfixturevalue("mariadb")),
    "postgres": lambda request: PostgresConnector(
        request.getfixturevalue("postgres"), request.getfixturevalue("conformance_pg_database")
    ),
}
#: Variants of a connector that the whole suite runs again: Oracle's MySQL 8.0, which
#: reports no exact snapshot position, so every chunk is placed by a high watermark (it
#: replaces MariaDB run with ``scan.snapshot.consistency: watermark`` forced, which stood
#: in for MySQL before a MySQL server ran here), MySQL 5.7, whose row events name no
#: columns at all (the schema history names them), and PostgreSQL tables with REPLICA
#: IDENTITY DEFAULT under ``changelog-mode: upsert`` (no old rows in the WAL).
VARIANTS: dict[str, Callable[[pytest.FixtureRequest], ConnectorUnderTest]] = {
    "mysql8": lambda request: MySqlConnector(request.getfixturevalue("mysql8")),
    "mysql57": lambda request: MySqlConnector(request.getfixturevalue("mysql57")),
    "postgres-upsert": lambda request: PostgresConnector(
        request.getfixturevalue("postgres"),
        request.getfixturevalue("conformance_pg_database"),
        upsert=True,
    ),
}


@pytest.fixture(scope="session")
def conformance_pg_database(postgres: EmbeddedPostgres) -> str:
    """One database for every PostgreSQL conformance test (each test has a schema)."""
    return postgres.create_database("conformance")


@pytest.fixture(params=sorted(FIXTURES) + sorted(VARIANTS))
def db(request: pytest.FixtureRequest) -> ConnectorUnderTest:
    """The connector under test; its server is started (once per session) on first use."""
    name: str = request.param
    return {**FIXTURES, **VARIANTS}[name](request)


@pytest.fixture
def namespace(db: ConnectorUnderTest, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh database/schema named after the test; what capturing it left on the server
    is released afterwards."""
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:28]
    name = db.create_database(f"cf_{stem}_{uuid.uuid4().hex[:6]}")
    yield name
    db.drop(name)


#: Sink fixtures by test id: every registered sink type has at least one
#: (test_every_sink_type_has_a_fixture); a sink type configured in ways that declare other
#: capabilities (a Delta history) has one per way.
SINK_FIXTURES: dict[str, Callable[[pytest.FixtureRequest], SinkUnderTest]] = {
    "delta-upsert": lambda request: DeltaUnderTest("upsert"),
    "delta-append": lambda request: DeltaUnderTest("append"),
    "delta-upsert-native": lambda request: DeltaUnderTest("upsert", "native"),
    "delta-append-native": lambda request: DeltaUnderTest("append", "native"),
    "delta-upsert-catalog": lambda request: DeltaUnderTest("upsert", catalog=True),
    "jdbc-postgresql": lambda request: JdbcUnderTest(
        request.getfixturevalue("postgres"),
        request.getfixturevalue("conformance_pg_database"),
        request.getfixturevalue("postgres").user,
        request.getfixturevalue("postgres").password,
    ),
    "jdbc-mariadb": lambda request: JdbcUnderTest(
        request.getfixturevalue("mariadb"),
        *request.getfixturevalue("conformance_mariadb_target"),
    ),
    "kafka": lambda request: KafkaUnderTest(request.getfixturevalue("kafka")),
    "console": lambda request: ConsoleUnderTest(),
}

#: The MariaDB account the JDBC sink fixture writes with (a password, as users have).
SINK_USER, SINK_PASSWORD = "conformance_sink", "Sink-" + uuid.uuid4().hex[:12]


@pytest.fixture(scope="session")
def conformance_mariadb_target(mariadb: EmbeddedMariaDB) -> tuple[str, str, str]:
    """One MariaDB database for every JDBC sink test (each test has its own tables), and
    the user and password that write it."""
    database = mariadb.create_database(f"conformance_sink_{uuid.uuid4().hex[:6]}")
    mariadb.execute(f"CREATE OR REPLACE USER '{SINK_USER}'@'%%' IDENTIFIED BY %s", (SINK_PASSWORD,))
    mariadb.execute(f"GRANT ALL ON `{database}`.* TO '{SINK_USER}'@'%'")
    return database, SINK_USER, SINK_PASSWORD


@pytest.fixture(params=sorted(SINK_FIXTURES))
def sut(request: pytest.FixtureRequest) -> SinkUnderTest:
    """The sink under test; the services it writes to start (once per session) on first
    use."""
    name: str = request.param
    return SINK_FIXTURES[name](request)

"""Every conformance test runs once per connector fixture (tests/conformance/connector.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest

from sparkcdc.embedded import EmbeddedPostgres
from tests.conformance.connector import ConnectorUnderTest
from tests.conformance.mariadb import MariaDbConnector
from tests.conformance.postgres import PostgresConnector

#: Connector registry name -> how to build its fixture from the harness's services.
FIXTURES: dict[str, Callable[[pytest.FixtureRequest], ConnectorUnderTest]] = {
    "mysql": lambda request: MariaDbConnector(request.getfixturevalue("mariadb")),
    "postgres": lambda request: PostgresConnector(
        request.getfixturevalue("postgres"), request.getfixturevalue("conformance_pg_database")
    ),
}
#: Variants of a connector that the whole suite runs again: MariaDB read as a server
#: without an exact snapshot position (MySQL) is, chunks placed by a high watermark.
VARIANTS: dict[str, Callable[[pytest.FixtureRequest], ConnectorUnderTest]] = {
    "mysql-watermark": lambda request: MariaDbConnector(
        request.getfixturevalue("mariadb"), {"scan.snapshot.consistency": "watermark"}
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

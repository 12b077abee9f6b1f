"""Every conformance test runs once per connector fixture (tests/conformance/connector.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest

from tests.conformance.connector import ConnectorUnderTest
from tests.conformance.mariadb import MariaDbConnector

#: Connector registry name -> how to build its fixture from the harness's services.
FIXTURES: dict[str, Callable[[pytest.FixtureRequest], ConnectorUnderTest]] = {
    "mysql": lambda request: MariaDbConnector(request.getfixturevalue("mariadb")),
}


@pytest.fixture(params=sorted(FIXTURES))
def db(request: pytest.FixtureRequest) -> ConnectorUnderTest:
    """The connector under test; its server is started (once per session) on first use."""
    name: str = request.param
    return FIXTURES[name](request)


@pytest.fixture
def namespace(db: ConnectorUnderTest, request: pytest.FixtureRequest) -> str:
    """A fresh database/schema named after the test."""
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:28]
    return db.create_database(f"cf_{stem}_{uuid.uuid4().hex[:6]}")

"""What the conformance suite needs of a database: one small fixture class per connector.

The suite (tests/conformance/test_conformance.py) is written only against this interface and
the connector's public surface (its Spark format, its config and source from the registry),
so every registered connector is held to the same properties. A new connector adds a
subclass here and an entry in ``FIXTURES``; test_every_connector_has_a_fixture fails until
it does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.connectors.registry import connector
from sparkcdc.core.comments import Comments
from tests.support.random_writer import RandomWriter


@dataclass(frozen=True)
class TypeCase:
    """A column of one type and values to read through snapshot and log (NULL included)."""

    name: str
    definition: str  #: the column's type as the database writes it
    values: tuple[Any, ...]


#: The comments of :meth:`ConnectorUnderTest.create_commented_table`'s table (a quote and a
#: backslash in them are text).
NOTED_COMMENTS = Comments("the 'noted' table", (("id", "the key"), ("note", "it's \\ a note")))


@dataclass(frozen=True)
class BadOption:
    """Options that must fail up front, with what the message must name."""

    options: dict[str, str]
    message: str  #: a regular expression the error matches


class ConnectorUnderTest(ABC):
    """A database with a registered connector, as the conformance tests drive it."""

    #: The connector's registry name (``source: type:``).
    name: str
    #: Its changelog replays by key only (PostgreSQL's ``changelog-mode: upsert``: no old
    #: rows), not image by image (tests/support/changelog.py).
    by_key: bool = False
    #: Its log says a column's comment where a DDL adds the column (MySQL's statements).
    logs_comments: bool = False

    @property
    def connector(self) -> Connector[Any]:
        return connector(self.name)

    @abstractmethod
    def create_database(self, stem: str) -> str:
        """A new, empty namespace (MySQL database, PostgreSQL schema) for one test."""

    @abstractmethod
    def execute(self, namespace: str, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        """One statement, autocommit, ``%s`` parameters; the rows it returns."""

    @abstractmethod
    def options(self, namespace: str, tables: str) -> dict[str, str]:
        """Source options capturing the tables matching the regular expression ``tables``."""

    @abstractmethod
    def proxied(self, options: dict[str, str], port: int) -> dict[str, str]:
        """``options`` reaching the server through a TCP proxy on ``port`` of 127.0.0.1."""

    @abstractmethod
    def create_orders(self, namespace: str, rows: int) -> None:
        """``orders (id BIGINT primary key, name VARCHAR(64), qty INT)`` with ``rows`` rows
        (ids 0, 3, 6, ...) and an empty ``audit (id auto-increment key, note TEXT)``."""

    def create_table(self, namespace: str, definition: str) -> None:
        """``CREATE TABLE <definition>``, set up for capture as the connector needs (e.g.
        PostgreSQL's REPLICA IDENTITY FULL)."""
        self.execute(namespace, f"CREATE TABLE {definition}")

    def drop(self, namespace: str) -> None:  # noqa: B027 (most connectors leave nothing)
        """Release what capturing ``namespace`` left on the server (PostgreSQL's slot)."""

    @abstractmethod
    def writer(self, namespace: str, seed: int, key_space: int) -> RandomWriter:
        """Random concurrent writes to the ``orders`` and ``audit`` tables."""

    @abstractmethod
    def type_cases(self) -> list[TypeCase]:
        """Column types to check: the snapshot path and the log path give equal values."""

    @abstractmethod
    def create_commented_table(self, namespace: str) -> None:
        """``noted (id INT primary key, note VARCHAR(20), plain INT)`` with the comments
        :data:`NOTED_COMMENTS` (each database's own syntax)."""

    def add_commented_column(self, namespace: str) -> None:  # noqa: B027 (an optional step)
        """``ALTER TABLE noted ADD COLUMN later INT`` with the comment ``'added later'``,
        where the database's log tells the comment (:attr:`logs_comments`)."""

    def option_type_cases(self) -> list[tuple[dict[str, str], list[TypeCase]]]:
        """Source options that change how types are read, each with columns whose values
        (as given: read back exactly) both paths must give under them; none by default."""
        return []

    @abstractmethod
    def bad_options(self) -> list[BadOption]:
        """Wrong options and the message each must give."""

    @abstractmethod
    def wrong_password(self, options: dict[str, str], password: str) -> dict[str, str]:
        """``options`` with a wrong password, to check it never reaches a message."""

    def table_state(self, namespace: str, table: str) -> dict[Any, tuple[Any, ...]]:
        """A table's rows by their first column."""
        return {r[0]: tuple(r) for r in self.execute(namespace, f"SELECT * FROM {table}")}

    @contextmanager
    def writing(self, namespace: str, seed: int, key_space: int) -> Iterator[RandomWriter]:
        """Random writes while the block runs; their failure fails the test."""
        writer = self.writer(namespace, seed, key_space)
        writer.start()
        try:
            yield writer
        finally:
            writer.stop()

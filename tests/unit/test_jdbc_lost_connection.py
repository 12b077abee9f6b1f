"""Which JDBC target errors are a lost or refused connection (the batch is tried again,
sinks/jdbc/sink.py) and which are the batch's own (it fails at once). No server: the
drivers' exception types are built as the drivers raise them; the retry itself runs
against a restarted PostgreSQL in tests/faults/test_restarts.py."""

from __future__ import annotations

import psycopg
import pymysql
import pytest

from sparkcdc.core.errors import OptionError
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig
from sparkcdc.sinks.jdbc.dialects import TargetDialect, dialect_for


def dialect(url: str) -> TargetDialect:
    config = JdbcSinkConfig.from_options({"url": url, "username": "u", "password": "s3cret"})
    return dialect_for(config)


def test_postgres_connection_errors_are_lost_others_are_not() -> None:
    pg = dialect("postgresql://db.example/app")
    assert pg.lost_connection(psycopg.OperationalError("server closed the connection"))
    assert pg.lost_connection(psycopg.errors.AdminShutdown("terminating connection"))
    assert pg.lost_connection(psycopg.InterfaceError("the connection is closed"))
    assert not pg.lost_connection(psycopg.errors.UniqueViolation("duplicate key"))
    assert not pg.lost_connection(ValueError("not a driver error"))


def test_mysql_connection_errors_are_lost_others_are_not() -> None:
    my = dialect("mysql://db.example/app")
    for code in (2003, 2006, 2013, 1053):
        assert my.lost_connection(pymysql.err.OperationalError(code, "gone"))
    assert my.lost_connection(pymysql.err.InterfaceError(0, ""))
    assert not my.lost_connection(pymysql.err.OperationalError(1205, "lock wait timeout"))
    assert not my.lost_connection(pymysql.err.IntegrityError(1062, "Duplicate entry"))


def test_a_refused_login_is_not_retried_and_never_shows_the_password() -> None:
    pg = dialect("postgresql://db.example/app")
    refused = pg.connection_error(psycopg.OperationalError("connection refused"))
    assert refused.lost
    login = pg.connection_error(
        psycopg.OperationalError('password authentication failed for user "u" (s3cret)')
    )
    assert not login.lost and not pg.lost_connection(login)
    assert "s3cret" not in str(login)


@pytest.mark.parametrize("value", ["-1", "many"])
def test_max_retries_must_be_a_count(value: str) -> None:
    with pytest.raises(OptionError, match=r"sink\.max-retries"):
        JdbcSinkConfig.from_options(
            {"url": "postgresql://h/db", "username": "u", "sink.max-retries": value}
        )

"""Logging in to MySQL 8.0 on every connection the source opens (planning and classic
snapshot: mysqlclient; native snapshot reader: libmariadb; binlog: PyMySQL):
``caching_sha2_password`` over TLS, without TLS with the server's RSA key from a file or
fetched on explicit opt-in only (never silently in clear), ``mysql_native_password``; a CA
given always verifies the server; a wrong password fails fast naming the user, never the
password (issue 59; issue 63 item 5, MySQL's part).

Each check logs in as a fresh account, after ``FLUSH PRIVILEGES`` empties the server's
cache of caching_sha2_password logins, so every login is a full one."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparkcdc.connectors.mysql.binlog.locate import first_transaction_time
from sparkcdc.connectors.mysql.binlog.positions import current_position
from sparkcdc.connectors.mysql.config import MySqlSourceConfig, parse_config
from sparkcdc.connectors.mysql.server.connection import connect
from sparkcdc.connectors.mysql.snapshot.native_reader import connect_native
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.embedded import EmbeddedMySQL
from sparkcdc.embedded.binlog_server import Account


@pytest.fixture(scope="module")
def server(certificates: Path) -> Iterator[EmbeddedMySQL]:
    """MySQL 8.0 with a certificate for 127.0.0.1 from the tests' CA (TLS optional)."""
    with EmbeddedMySQL(
        "mysql8",
        settings={
            "ssl-ca": str(certificates / "ca.pem"),
            "ssl-cert": str(certificates / "server.pem"),
            "ssl-key": str(certificates / "server.key"),
        },
    ) as started:
        started.create_database("shop")
        started.execute("CREATE TABLE shop.t (id INT PRIMARY KEY)")
        yield started


def _account(server: EmbeddedMySQL, plugin: str = "caching_sha2_password") -> Account:
    account = Account(f"u_{secrets.token_hex(4)}", "pw-" + secrets.token_urlsafe(12))
    server.execute(
        f"CREATE USER %s@'%%' IDENTIFIED WITH {plugin} BY %s", (account.user, account.password)
    )
    server.execute(
        f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{account.user}'@'%'"
    )
    server.execute("FLUSH PRIVILEGES")  # no cached login: the next one is a full one
    return account


def _config(server: EmbeddedMySQL, account: Account, **properties: str) -> MySqlSourceConfig:
    options = {
        "hostname": server.host,
        "port": str(server.port),
        "username": account.user,
        "password": account.password,
        "database-name": "shop",
        "table-name": "t",
        "connect.max-retries": "0",
        **{f"jdbc.properties.{k}": v for k, v in properties.items()},
    }
    return parse_config(options)


def _planning(config: MySqlSourceConfig) -> Any:
    conn = connect(config)
    try:
        return current_position(conn)
    finally:
        conn.close()


def _native(config: MySqlSourceConfig) -> Any:
    conn = connect_native(config)
    try:
        return conn.cursor().execute("SELECT 1")
    finally:
        conn.close()


def _binlog(config: MySqlSourceConfig) -> Any:
    return first_transaction_time(config, _start)


_start: Any = None
#: Every kind of connection the source opens, as a call that logs in and reads.
CONNECTIONS: dict[str, Callable[[MySqlSourceConfig], Any]] = {
    "planning": _planning,
    "native": _native,
    "binlog": _binlog,
}


@pytest.fixture(autouse=True)
def _binlog_start(server: EmbeddedMySQL) -> None:
    global _start
    _start = current_position(connect(_config(server, server.root)))


@pytest.mark.parametrize("kind", sorted(CONNECTIONS))
def test_without_tls_the_rsa_key_is_never_fetched_in_clear(
    server: EmbeddedMySQL, kind: str
) -> None:
    account = _account(server)
    with pytest.raises(SourceConfigurationError) as refused:
        CONNECTIONS[kind](_config(server, account))
    message = str(refused.value)
    assert f"as '{account.user}'" in message and account.password not in message
    assert "caching_sha2_password" in message
    for way_out in ("sslMode", "serverRSAPublicKeyFile", "allowPublicKeyRetrieval: true"):
        assert way_out in message


@pytest.mark.parametrize("kind", sorted(CONNECTIONS))
@pytest.mark.parametrize("key", ["file", "retrieval"])
def test_without_tls_a_key_file_or_an_explicit_opt_in_logs_in(
    server: EmbeddedMySQL, kind: str, key: str
) -> None:
    account = _account(server)
    properties = (
        {"serverRSAPublicKeyFile": str(server.public_key)}
        if key == "file"
        else {"allowPublicKeyRetrieval": "true"}
    )
    CONNECTIONS[kind](_config(server, account, **properties))


@pytest.mark.parametrize("kind", sorted(CONNECTIONS))
def test_over_tls_every_connection_logs_in_and_a_given_ca_verifies(
    server: EmbeddedMySQL, certificates: Path, kind: str
) -> None:
    account = _account(server)
    CONNECTIONS[kind](_config(server, account, sslMode="required"))
    server.execute("FLUSH PRIVILEGES")
    CONNECTIONS[kind](_config(server, account, sslCa=str(certificates / "ca.pem")))
    server.execute("FLUSH PRIVILEGES")
    # a CA given verifies (core/tls.py makes it verify_identity): another CA's server is
    # refused, on every connection
    wrong = _config(server, account, sslCa=str(certificates / "other-ca.pem"))
    with pytest.raises(Exception) as refused:
        CONNECTIONS[kind](wrong)
    assert account.password not in str(refused.value)
    text = str(refused.value).lower()
    assert "certificate" in text or "ssl" in text or "tls" in text, text


@pytest.mark.parametrize("kind", sorted(CONNECTIONS))
def test_mysql_native_password_needs_neither_tls_nor_a_key(
    server: EmbeddedMySQL, kind: str
) -> None:
    account = _account(server, "mysql_native_password")
    CONNECTIONS[kind](_config(server, account))


@pytest.mark.parametrize("kind", sorted(CONNECTIONS))
def test_a_wrong_password_fails_naming_the_user_never_the_password(
    server: EmbeddedMySQL, kind: str
) -> None:
    account = _account(server)
    wrong = Account(account.user, "wrong-" + secrets.token_urlsafe(12))
    with pytest.raises(SourceConfigurationError) as refused:
        CONNECTIONS[kind](_config(server, wrong, sslMode="required"))
    message = str(refused.value)
    assert f"'{account.user}'" in message
    assert wrong.password not in message and account.password not in message

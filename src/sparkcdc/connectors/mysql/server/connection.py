"""Connections to the source: the C client for reads, with retries and no leaked secrets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.connectors.mysql.server.secure import (
    key_bytes,
    key_file,
    key_refused,
    tls_properties,
)
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.core.tls import mysql_ssl_context
from sparkcdc.snapshot.retry import Retries

T = TypeVar("T")

#: MySQL error codes worth retrying: can't connect, server gone away, lost connection,
#: too many connections, host blocked temporarily.
RETRYABLE_CODES = frozenset({1040, 2002, 2003, 2006, 2013, 2055})
ACCESS_DENIED_CODES = frozenset({1044, 1045, 1227, 1142, 1143})


def _scrub(message: str, config: MySqlSourceConfig) -> str:
    secret = config.password.reveal()
    return message.replace(secret, "******") if secret else message


def retries(config: MySqlSourceConfig) -> Retries:
    """The connector's retry policy: MySQL's connection error codes, passwords scrubbed."""

    def retryable(exc: BaseException) -> bool:
        return bool(exc.args) and exc.args[0] in RETRYABLE_CODES

    return Retries(config.connect_max_retries, retryable, lambda exc: _scrub(str(exc), config))


def with_retries(
    config: MySqlSourceConfig, what: str, action: Callable[[], T], final: bool = False
) -> T:
    """Run ``action``; retry connection errors ``connect.max-retries`` times with backoff
    (``final``: a read, which then gives up with a SourceUnavailableError)."""
    return retries(config).run(what, action, final)


def connect(
    config: MySqlSourceConfig, *, streaming: bool = False, text_values: bool = False
) -> Any:
    """A mysqlclient connection (autocommit off, UTC session, fast value converters).

    ``streaming=True`` makes cursors unbuffered (server-side), so a chunk's rows stream
    through instead of being loaded whole. ``text_values=True`` leaves temporal and decimal
    values as text for Arrow to parse in bulk (see types.text_cast_type).
    """
    import MySQLdb
    import MySQLdb.cursors

    from sparkcdc.connectors.mysql.server.types import snapshot_conversions

    kwargs: dict[str, Any] = {
        "host": config.hostname,
        "port": config.port,
        "user": config.username,
        "password": config.password.reveal(),
        "connect_timeout": max(1, int(config.connect_timeout)),
        # a stalled network or server must fail the read (and be retried), not hang it
        "read_timeout": max(1, int(config.connect_timeout)),
        "write_timeout": max(1, int(config.connect_timeout)),
        "charset": "utf8mb4",
        "conv": snapshot_conversions(text_values),
        "autocommit": True,
    }
    if streaming:
        kwargs["cursorclass"] = MySQLdb.cursors.SSCursor
    tls = tls_properties(config)
    if tls:
        mode = tls["sslMode"]
        if mode != "disabled":
            kwargs["ssl_mode"] = mode.upper()
            ssl = {
                k: tls[v]
                for k, v in (("ca", "sslCa"), ("cert", "sslCert"), ("key", "sslKey"))
                if v in tls
            }
            if ssl:
                kwargs["ssl"] = ssl
    public_key = key_file(config)
    if public_key is not None:
        kwargs["server_public_key_path"] = public_key

    def attempt() -> Any:
        conn = MySQLdb.connect(**kwargs)
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+00:00'")
        return conn

    return open_with_retries(config, attempt, MySQLdb.OperationalError)


def open_with_retries(
    config: MySqlSourceConfig, attempt: Callable[[], T], errors: type[Exception]
) -> T:
    """Open a connection with ``attempt`` (raising ``errors`` with ``args == (code,
    message)``, as mysqlclient and the native reader do), retried on connection errors.
    A refused login or an unreachable server becomes a SourceConfigurationError that says
    what to check; the password never appears in a message."""

    def once() -> T:
        try:
            return attempt()
        except errors as exc:
            code = exc.args[0] if exc.args else None
            refused = key_refused(config, exc)
            if refused is not None:
                raise refused from None
            if code in ACCESS_DENIED_CODES:
                raise SourceConfigurationError(
                    f"cannot log in to {config.hostname}:{config.port} as "
                    f"'{config.username}': {_scrub(str(exc.args[-1]), config)}. Check "
                    "'username'/'password' and that the user may connect from this host."
                ) from None
            raise type(exc)(code, _scrub(str(exc.args[-1]), config)) from None

    try:
        return with_retries(config, f"connecting to {config.hostname}:{config.port}", once)
    except errors as exc:
        code = exc.args[0] if exc.args else None
        if code not in RETRYABLE_CODES:
            raise
        raise SourceConfigurationError(
            f"cannot connect to {config.hostname}:{config.port} after "
            f"{config.connect_max_retries + 1} attempts: {_scrub(str(exc.args[-1]), config)}. "
            "Check 'hostname' and 'port', that the server is running and reachable from here; "
            "'connect.timeout' and 'connect.max-retries' set how long to try"
        ) from None


def replication_settings(config: MySqlSourceConfig) -> dict[str, Any]:
    """PyMySQL settings for python-mysql-replication's binlog connections.

    Without TLS options PyMySQL still builds a default TLS context ("preferred") for every
    connection, ~25-50 ms of CPU each (twice per binlog reader: dump and control
    connection); ``ssl_disabled`` skips it when TLS is off, as the JDBC-style options say.
    """
    timeout = max(1, int(config.connect_timeout))
    context = mysql_ssl_context(tls_properties(config))
    public_key = key_bytes(config)
    return {
        **({"ssl": context} if context is not None else {"ssl_disabled": True}),
        **({"server_public_key": public_key} if public_key is not None else {}),
        "host": config.hostname,
        "port": config.port,
        "user": config.username,
        "password": config.password.reveal(),
        "connect_timeout": timeout,
        # a silent network must fail (and be retried), not hang the task forever
        "read_timeout": timeout,
    }


def replication_connect(config: MySqlSourceConfig) -> Callable[..., Any]:
    """python-mysql-replication's ``pymysql_wrapper``: PyMySQL's connect, with a refused
    login said as :func:`open_with_retries` says it (the user, never the password; the
    RSA key policy's way out)."""

    def connect_binlog(**settings: Any) -> Any:
        import pymysql

        try:
            return pymysql.connect(**settings)
        except (pymysql.err.OperationalError, ValueError, RuntimeError) as exc:
            refused = key_refused(config, exc)
            if refused is not None:
                raise refused from None
            code = exc.args[0] if exc.args else None
            if code in ACCESS_DENIED_CODES:
                raise SourceConfigurationError(
                    f"cannot log in to {config.hostname}:{config.port} as "
                    f"'{config.username}' for the binlog: {_scrub(str(exc.args[-1]), config)}. "
                    "Check 'username'/'password' and that the user may connect from this host."
                ) from None
            raise

    return connect_binlog


def query(conn: Any, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def query_dicts(conn: Any, sql: str, args: Any = None) -> list[dict[str, Any]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

"""Connections to the source: psycopg 3, fixed session settings, retries, no leaked secrets.

Every connection runs with the settings of ``types.SESSION_SETTINGS`` (UTC, ISO dates,
ISO 8601 intervals, shortest exact floats, hex bytea): the snapshot and the log read the
server's text of each value, and those settings make the two texts identical. A dead
network must fail, not hang a task: TCP keepalives and ``tcp_user_timeout`` close a
connection whose peer went silent after ``connect.timeout``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sparkcdc.connectors.postgres.config import PostgresSourceConfig
from sparkcdc.connectors.postgres.server.types import SESSION_SETTINGS
from sparkcdc.core.errors import SourceConfigurationError
from sparkcdc.snapshot.retry import Retries

T = TypeVar("T")

#: SQLSTATE classes of errors worth retrying: connection exceptions (08), operator
#: intervention (57: admin shutdown, crash shutdown, cannot connect now), and
#: insufficient resources (53: too many connections).
RETRYABLE_CLASSES = ("08", "57", "53")
#: Every session's ``search_path``: PostgreSQL's own functions, operators and types only.
#: With the default ("$user", public) a user who may create objects in ``public`` (anyone
#: on PostgreSQL 14 and older) can define ``public.format(text, uuid)``, which a closer
#: argument match makes win over ``pg_catalog.format`` in our queries. The SQL names its
#: functions ``pg_catalog.`` too; this covers operators, types and anything missed, and
#: ``pg_temp`` last keeps temporary tables from shadowing the catalogs.
SEARCH_PATH = "pg_catalog, pg_temp"
#: Login refused: invalid password / authorization.
ACCESS_DENIED = frozenset({"28P01", "28000"})


def scrub(message: str, config: PostgresSourceConfig) -> str:
    """``message`` with the password masked (libpq may echo connection parameters)."""
    secret = config.password.reveal()
    return message.replace(secret, "******") if secret else message


def retryable(exc: BaseException) -> bool:
    """A lost or refused connection, or a server going down: the read may succeed again."""
    import psycopg

    if isinstance(exc, ArrowConnectionError):
        return True
    if isinstance(exc, psycopg.OperationalError) and getattr(exc, "sqlstate", None) is None:
        return True  # libpq: connection refused, reset, timed out
    state = getattr(exc, "sqlstate", None) or ""
    return state[:2] in RETRYABLE_CLASSES


def retries(config: PostgresSourceConfig) -> Retries:
    """The connector's retry policy: lost and refused connections, passwords scrubbed."""
    return Retries(
        config.connect_max_retries, retryable, lambda exc: scrub(str(exc).strip(), config)
    )


def with_retries(
    config: PostgresSourceConfig, what: str, action: Callable[[], T], final: bool = False
) -> T:
    """Run ``action``; retry lost connections ``connect.max-retries`` times with backoff
    (``final``: a read, which then gives up with a SourceUnavailableError)."""
    return retries(config).run(what, action, final)


def connection_arguments(config: PostgresSourceConfig) -> dict[str, Any]:
    """libpq parameters: the server, the session settings (and :data:`SEARCH_PATH`) and
    the TLS properties."""
    timeout = max(1, int(config.connect_timeout))
    settings = {**SESSION_SETTINGS, "search_path": SEARCH_PATH}
    options = " ".join(
        f"-c {name}={value.replace(' ', chr(92) + ' ')}" for name, value in settings.items()
    )
    return {
        "host": config.hostname,
        "port": config.port,
        "user": config.username,
        "password": config.password.reveal(),
        "dbname": config.database,
        "connect_timeout": timeout,
        "application_name": "sparkcdc",
        "options": options,
        "keepalives": 1,
        "keepalives_idle": timeout,
        "keepalives_interval": max(1, timeout // 3),
        "keepalives_count": 3,
        "tcp_user_timeout": timeout * 1000,
        **config.tls,
    }


def connect(config: PostgresSourceConfig, *, autocommit: bool = True) -> Any:
    """A psycopg connection with the session settings, retried on connection errors.

    A refused login or an unreachable server becomes a SourceConfigurationError that says
    what to check; the password never appears in a message."""
    import psycopg

    arguments = connection_arguments(config)

    def once() -> Any:
        try:
            return psycopg.connect(autocommit=autocommit, **arguments)
        except psycopg.Error as exc:
            state = getattr(exc, "sqlstate", None)
            text = scrub(str(exc).strip(), config)
            if state in ACCESS_DENIED or "password authentication failed" in text:
                raise SourceConfigurationError(
                    f"cannot log in to {config.hostname}:{config.port} database "
                    f"'{config.database}' as '{config.username}': {text}. Check "
                    "'username'/'password' and pg_hba.conf"
                ) from None
            if state == "3D000":
                raise SourceConfigurationError(
                    f"database '{config.database}' does not exist on "
                    f"{config.hostname}:{config.port}; check 'database-name'"
                ) from None
            raise psycopg.OperationalError(text) from None

    try:
        return with_retries(config, f"connecting to {config.hostname}:{config.port}", once)
    except psycopg.OperationalError as exc:
        raise SourceConfigurationError(
            f"cannot connect to {config.hostname}:{config.port} after "
            f"{config.connect_max_retries + 1} attempts: {scrub(str(exc).strip(), config)}. "
            "Check 'hostname' and 'port', that the server is running and reachable from here; "
            "'connect.timeout' and 'connect.max-retries' set how long to try"
        ) from None


def arrow_connect(config: PostgresSourceConfig) -> Any:
    """An ADBC connection (libpq, ``COPY ... BINARY`` straight into Arrow in C++) with the
    same server, session settings and TLS properties as :func:`connect`, autocommit off;
    what chunk reads fetch rows with. Retried like :func:`connect`."""
    from urllib.parse import quote, urlencode

    import adbc_driver_postgresql.dbapi as adbc

    arguments = connection_arguments(config)
    user, password = arguments.pop("user"), arguments.pop("password")
    host, port, dbname = arguments.pop("host"), arguments.pop("port"), arguments.pop("dbname")
    uri = (
        f"postgresql://{quote(str(user), safe='')}:{quote(str(password), safe='')}@"
        f"{host}:{port}/{quote(str(dbname), safe='')}?{urlencode(arguments, quote_via=quote)}"
    )

    def once() -> Any:
        try:
            return adbc.connect(uri)
        except adbc.Error as exc:
            text = scrub(str(exc).strip(), config).replace(quote(password, safe=""), "******")
            if "password authentication failed" in text:
                raise SourceConfigurationError(
                    f"cannot log in to {config.hostname}:{config.port} database "
                    f"'{config.database}' as '{config.username}': {text}"
                ) from None
            raise ArrowConnectionError(text) from None

    return with_retries(config, f"connecting to {config.hostname}:{config.port}", once)


class ArrowConnectionError(ConnectionError):
    """An ADBC connection failed (retried like a lost libpq connection)."""


def query(conn: Any, sql: Any, args: Any = None) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall()) if cur.description else []

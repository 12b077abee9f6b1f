"""Options of the JDBC sink: where the target is, how tables are named, batch sizes.

The pipeline layer builds :class:`JdbcSinkConfig` from the YAML ``sink`` block with
:meth:`JdbcSinkConfig.from_options`. Every problem names the option and what is valid. The
password is a :class:`Secret` from the first moment, and the URL is validated here rather
than by the generic option parser, because a URL can carry ``user:password@`` and the
generic parser would echo it in its message.

Pure Python: no driver and no pyspark here, so configs validate fast and pickle cheaply.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import OptionSpec, parse_bool, parse_int, parse_options
from sparkcdc.core.secret import Secret
from sparkcdc.core.tls import MYSQL_TLS, POSTGRES_TLS, PREFIX
from sparkcdc.sinks.names import fill_name
from sparkcdc.snapshot.options import code

CONTEXT = "jdbc sink"

#: URL schemes and the target family each selects.
SCHEMES: Mapping[str, str] = {
    "postgresql": "postgresql",
    "postgres": "postgresql",
    "mysql": "mysql",
    "mariadb": "mysql",
}
DEFAULT_PORTS: Mapping[str, int] = {"postgresql": 5432, "mysql": 3306}
URL_FORMS = (
    "postgresql://host[:port]/database or mysql://host[:port]/database "
    "(also postgres://, mariadb://, each optionally prefixed with jdbc:)"
)
PLACEHOLDERS = ("database", "table")

SPECS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "url",
        required=True,
        hint=URL_FORMS,
        doc="`postgresql://host[:port]/database` or `mysql://host[:port]/database` "
        "(`postgres://`, `mariadb://` and a `jdbc:` prefix are accepted too; default ports "
        "5432 / 3306); credentials or query parameters in the URL are refused",
    ),
    OptionSpec(
        "username",
        required=True,
        hint="the target user",
        doc="needs CREATE on first run, then SELECT/INSERT/UPDATE/DELETE",
    ),
    OptionSpec(
        "password",
        default=Secret(""),
        secret=True,
        doc="the target user's password; never logged or shown in errors",
    ),
    OptionSpec(
        "table-name",
        default="{table}",
        doc="target table per source table, with `{database}` and `{table}` placeholders; "
        "`qualifier.name` puts it in a PostgreSQL schema / MySQL database (created if "
        "missing)",
    ),
    OptionSpec(
        "batch-size",
        parse=parse_int(minimum=1, maximum=100_000),
        default=1000,
        doc="rows per multi-row upsert/delete statement (at most 100000)",
    ),
    OptionSpec(
        "sink.max-retries",
        parse=parse_int(minimum=0, maximum=100),
        default=3,
        doc="retries of a batch whose connection to the target was lost or refused (a "
        "restart of the target), after 1, 2, 4 ... s (at most 10 s apart); the batch's "
        "transaction is all or nothing, so a retry writes it once. Other errors fail at once",
    ),
    OptionSpec(
        "offsets-table",
        default="sparkcdc_offsets",
        doc="one row per pipeline: its last applied batch id and source offset (may be "
        "`qualifier.name`)",
    ),
    OptionSpec(
        "adopt-existing-tables",
        parse=parse_bool,
        default=False,
        doc="`true` takes a non-empty table the sink did not create as a target (its rows "
        "are then upserted over, and a truncate or a dropped source table empties or drops "
        "it) and marks it; by default such a table is refused, so a name the pipeline "
        "happens to share never turns someone's table into a target",
    ),
    OptionSpec(
        PREFIX,
        prefix=True,
        doc="TLS to the target, named as the sources name it. PostgreSQL: "
        f"`jdbc.properties.sslmode` ({code(POSTGRES_TLS.modes)}) with `.sslrootcert`, "
        "`.sslcert`, `.sslkey` (libpq's meaning; without them libpq's default `prefer`). "
        f"MySQL/MariaDB: `jdbc.properties.sslMode` ({code(MYSQL_TLS.modes)}; `required` when "
        "another `ssl*` property is set, `preferred` acts as `required`) with `.sslCa`, "
        "`.sslCert`, `.sslKey` (without them TLS when the server offers it, unverified). "
        "Other properties are refused",
        attr="tls",
    ),
)

#: Longest identifier each target accepts (PostgreSQL silently truncates longer ones).
MAX_IDENTIFIER = {"postgresql": 63, "mysql": 64}


@dataclass(frozen=True)
class JdbcUrl:
    """A validated target address (never carries credentials)."""

    family: str  #: 'postgresql' or 'mysql' (MySQL and MariaDB)
    host: str
    port: int
    database: str

    def __str__(self) -> str:
        return f"{self.family}://{self.host}:{self.port}/{self.database}"

    @classmethod
    def parse(cls, text: str) -> JdbcUrl:
        """Parse ``[jdbc:]scheme://host[:port]/database``; raise :class:`OptionError`
        naming ``url`` without ever showing credentials embedded in it."""
        raw = text.strip()
        shown = _redact_url(raw)

        def bad(why: str) -> OptionError:
            return OptionError(
                f"{CONTEXT}: option 'url' has invalid value '{shown}': {why}. "
                f"Valid forms: {URL_FORMS}"
            )

        body = raw[5:] if raw.lower().startswith("jdbc:") else raw
        scheme, sep, _ = body.partition("://")
        if not sep or scheme.lower() not in SCHEMES:
            raise bad(f"unknown scheme; valid schemes: {', '.join(SCHEMES)}")
        family = SCHEMES[scheme.lower()]
        if "@" in body:  # anywhere: a password may hold '/', which ends the authority
            raise bad("credentials in the URL are not accepted; use 'username' and 'password'")
        parts = urlsplit(body)
        if parts.query or parts.fragment:
            raise bad("query parameters are not supported")
        try:
            port = parts.port or DEFAULT_PORTS[family]
        except ValueError:
            raise bad("the port must be a number from 1 to 65535") from None
        if not parts.hostname:
            raise bad("the host is missing")
        database = parts.path.lstrip("/")
        if not database or "/" in database:
            raise bad("the database name is missing (or has a '/')")
        return cls(family, parts.hostname, port, database)


def _redact_url(text: str) -> str:
    """The URL with everything between ``//`` (or its start) and its last '@' replaced by
    '******': a password may hold '/', '@' or ':', so no part of the URL's syntax tells
    where it ends, and a database or host name holds no '@' that would be worth showing."""
    if "@" not in text:
        return text
    head, sep, _ = text.partition("//")
    start = len(head) + len(sep) if sep else 0
    return text[:start] + "******" + text[text.rindex("@") :]


@dataclass(frozen=True)
class TableName:
    """A target name pattern: optional qualifier (schema or database) and table, each with
    ``{database}``/``{table}`` placeholders."""

    qualifier: str | None
    table: str

    def resolve(self, database: str, table: str) -> tuple[str | None, str]:
        """The target's (qualifier, table) for source table ``database.table``."""
        qualifier = None if self.qualifier is None else fill_name(self.qualifier, database, table)
        return qualifier or None, fill_name(self.table, database, table)

    @classmethod
    def parse(cls, option: str, text: str) -> TableName:
        """Split ``qualifier.table`` (outside placeholders) and check the placeholders."""
        try:
            pieces = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise _pattern_error(option, text, str(exc)) from None
        for _, name, spec, conversion in pieces:
            if name is not None and (name not in PLACEHOLDERS or spec or conversion):
                raise _pattern_error(option, text, f"unknown placeholder '{{{name}}}'")
        parts = text.split(".")  # placeholders hold no '.', so this splits the pattern only
        if len(parts) > 2 or any(not p.strip() for p in parts):
            raise _pattern_error(option, text, "expected 'name' or 'qualifier.name'")
        if len(parts) == 2:
            return cls(parts[0], parts[1])
        return cls(None, parts[0])


def _pattern_error(option: str, text: str, why: str) -> OptionError:
    return OptionError(
        f"{CONTEXT}: option '{option}' has invalid value '{text}': {why}. Valid: a table "
        f"name, optionally qualified by a schema (PostgreSQL) or database (MySQL/MariaDB) "
        f"as 'qualifier.name', with placeholders {{database}} and {{table}}"
    )


@dataclass(frozen=True)
class JdbcSinkConfig:
    """The JDBC sink's validated options."""

    url: JdbcUrl
    username: str
    password: Secret = field(default_factory=lambda: Secret(""))
    table_name: TableName = TableName(None, "{table}")
    batch_size: int = 1000
    offsets_table: TableName = TableName(None, "sparkcdc_offsets")
    max_retries: int = 3
    #: Take non-empty tables the sink did not create as targets (``adopt-existing-tables``).
    adopt_existing: bool = False
    #: ``jdbc.properties.*`` TLS settings under their canonical names (:mod:`sparkcdc.core.tls`)
    tls: Mapping[str, str] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.url.family

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> JdbcSinkConfig:
        """Validate a sink block's options (keys as in :data:`SPECS`, case-insensitive;
        values may be YAML scalars). Unknown keys are rejected with the valid ones."""
        raw = {str(k): "" if v is None else str(v) for k, v in options.items()}
        parsed = parse_options(raw, SPECS, context=CONTEXT)
        url = JdbcUrl.parse(parsed["url"])
        offsets = TableName.parse("offsets-table", parsed["offsets-table"])
        if "{" in parsed["offsets-table"]:
            raise _pattern_error("offsets-table", parsed["offsets-table"], "no placeholders here")
        password = parsed["password"]
        tls = (MYSQL_TLS if url.family == "mysql" else POSTGRES_TLS).parse(
            parsed.groups.get(PREFIX, {}), f"{CONTEXT} ({url.family} target)"
        )
        return cls(
            url=url,
            username=parsed["username"],
            password=password if isinstance(password, Secret) else Secret(str(password)),
            table_name=TableName.parse("table-name", parsed["table-name"]),
            batch_size=int(parsed["batch-size"]),
            offsets_table=offsets,
            max_retries=int(parsed["sink.max-retries"]),
            adopt_existing=bool(parsed["adopt-existing-tables"]),
            tls=tls,
        )

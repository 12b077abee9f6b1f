"""The ``postgres-cdc`` options: Flink CDC's names and defaults, parsed and validated once.

Each option is one :class:`OptionSpec` in :data:`SPECS`; the options every connector shares
(chunking, batch sizes, startup modes, connection policy) come from
:mod:`sparkcdc.snapshot.options`. ``parse_config`` adds only what spans several options.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from sparkcdc.connectors.postgres.wal.position import LsnPosition
from sparkcdc.core.changes import UNCHANGED
from sparkcdc.core.options import (
    OptionSpec,
    build_config,
    parse_bool,
    parse_duration,
    parse_int,
    parse_options,
)
from sparkcdc.core.secret import Secret
from sparkcdc.core.table import TableId
from sparkcdc.core.tls import POSTGRES_TLS
from sparkcdc.snapshot.options import (
    BASE_STARTUP_MODES,
    CHUNK_KEY_COLUMN,
    CHUNK_SIZE,
    CONNECT_MAX_RETRIES,
    CONNECT_TIMEOUT,
    ENVELOPE,
    FACTOR_LOWER,
    FACTOR_UPPER,
    FETCH_SIZE,
    MAX_ROWS_PER_TRIGGER,
    NEWLY_ADDED_TABLES,
    PASSWORD,
    PAUSE_FILE,
    ROWS_PER_BATCH,
    ROWS_PER_PARTITION,
    SIGNAL_CONSUMER,
    SIGNAL_FILE,
    SIGNAL_KAFKA_KEY,
    SIGNAL_KAFKA_SERVERS,
    SIGNAL_KAFKA_TOPIC,
    TABLES_EXCLUDE,
    TRUNCATE_HANDLING,
    SourceConfig,
    TablePatterns,
    capture_patterns,
    check_shared,
    code,
    metadata_parser,
    position_parser,
    regex,
    startup_mode_spec,
    tables_spec,
)

#: ``scan.startup.mode`` values beyond the shared ones.
POSTGRES_STARTUP_MODES = {
    "committed-offset": "no snapshot: from the replication slot's confirmed position",
}
STARTUP_MODES = (*BASE_STARTUP_MODES, *POSTGRES_STARTUP_MODES)
METADATA_COLUMNS = ("database_name", "schema_name", "table_name", "op_ts", "row_kind")
DECIMAL_MODES = ("precise", "string")
PUBLICATION_MODES = ("filtered", "disabled")
#: ``changelog-mode`` values (Flink CDC's names): what updates and deletes carry.
CHANGELOG_MODES = ("all", "upsert")
#: ``jdbc.properties.sslmode`` values, passed to libpq (PgJDBC's names, which are libpq's).
SSL_MODES = POSTGRES_TLS.modes
#: PostgreSQL identifiers are at most 63 bytes; temporary copies of the slot add a suffix.
MAX_SLOT_NAME = 40


def _slot_name(text: str) -> str:
    name = text.strip()
    if not re.fullmatch(rf"[a-z0-9_]{{1,{MAX_SLOT_NAME}}}", name):
        raise ValueError(
            f"a replication slot name of lower-case letters, digits and '_' (at most "
            f"{MAX_SLOT_NAME} characters: temporary copies of the slot add a suffix)"
        )
    return name


def _identifier(text: str) -> str:
    name = text.strip()
    if not name or len(name.encode()) > 63:
        raise ValueError("a PostgreSQL name of 1 to 63 bytes")
    return name


def _plugin(text: str) -> str:
    name = text.strip().lower()
    if name != "pgoutput":
        raise ValueError(
            "'pgoutput' (the built-in logical decoding plugin; decoderbufs and wal2json are "
            "not supported)"
        )
    return name


SPECS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "hostname",
        required=True,
        hint="the PostgreSQL host",
        doc="PostgreSQL host",
        attr="hostname",
    ),
    OptionSpec("port", parse_int(1, 65535), 5432, doc="the server's port", attr="port"),
    OptionSpec(
        "username",
        required=True,
        hint="a user with the REPLICATION attribute and SELECT on the tables",
        doc="needs the REPLICATION attribute (replication slots) and SELECT on the captured "
        "tables; creating the publication needs ownership of the tables (or let an "
        "administrator create it, see `publication.autocreate.mode`)",
        attr="username",
    ),
    PASSWORD,
    OptionSpec(
        "database-name",
        _identifier,
        required=True,
        hint="the database to capture",
        doc="the database to capture (one database, its exact name)",
        attr="database",
    ),
    tables_spec(("schema-name", "table-name")),
    TABLES_EXCLUDE,
    OptionSpec(
        "schema-name",
        regex,
        hint="a regular expression of schemas",
        doc="regular expression, matched against whole schema names",
        attr="schema_name",
    ),
    OptionSpec(
        "table-name",
        regex,
        hint="a regular expression of tables",
        doc="regular expression, matched against whole table names; several matches give "
        "the envelope (whose `database_name` is the table's schema)",
        attr="table_name",
    ),
    OptionSpec(
        "slot.name",
        _slot_name,
        required=True,
        hint="the logical replication slot of this stream",
        doc="the logical replication slot of this stream, created (pgoutput) on first use and "
        "never dropped by sparkcdc: it keeps the WAL the stream has not committed yet. One "
        "slot per stream; drop it with `SELECT pg_drop_replication_slot('name')` when the "
        "stream is retired",
        attr="slot_name",
    ),
    OptionSpec(
        "decoding.plugin.name",
        _plugin,
        "pgoutput",
        doc="`pgoutput` only",
        attr="plugin",
    ),
    OptionSpec(
        "publication.name",
        _identifier,
        None,
        default_doc="the slot name",
        doc="the publication pgoutput decodes (it names the captured tables)",
        attr="publication_name",
    ),
    OptionSpec(
        "publication.autocreate.mode",
        choices=PUBLICATION_MODES,
        default="filtered",
        doc="`filtered`: create the publication for the captured tables if missing and add "
        "captured tables it lacks (needs ownership of the tables); `disabled`: the "
        "publication must exist and cover every captured table (the error gives the SQL)",
        attr="publication_mode",
    ),
    OptionSpec(
        "changelog-mode",
        choices=CHANGELOG_MODES,
        default="all",
        doc="`all`: every update with its old and new row, every delete with its old row "
        "(tables must be `REPLICA IDENTITY FULL`); `upsert`: updates as their new row only "
        "(`update_postimage`; a TOASTed value the update left unchanged is absent, named by "
        "the column `_unchanged`), deletes with the key only, for tables with `REPLICA "
        "IDENTITY DEFAULT` or `USING INDEX` on the primary key's columns (docs/postgres.md, "
        '"changelog-mode: upsert")',
        attr="changelog_mode",
    ),
    startup_mode_spec(POSTGRES_STARTUP_MODES),
    CHUNK_SIZE,
    CHUNK_KEY_COLUMN,
    ROWS_PER_PARTITION,
    ROWS_PER_BATCH,
    FETCH_SIZE,
    FACTOR_UPPER,
    FACTOR_LOWER,
    CONNECT_TIMEOUT,
    CONNECT_MAX_RETRIES,
    NEWLY_ADDED_TABLES,
    SIGNAL_FILE,
    SIGNAL_KAFKA_TOPIC,
    SIGNAL_KAFKA_SERVERS,
    SIGNAL_KAFKA_KEY,
    SIGNAL_CONSUMER,
    PAUSE_FILE,
    ENVELOPE,
    OptionSpec(
        "heartbeat.interval",
        parse_duration,
        30.0,
        default_doc="30s",
        doc="while no captured table changes, the stream's position still moves forward (and "
        "the slot releases WAL) at least this often",
        attr="heartbeat_interval",
    ),
    OptionSpec(
        "scan.lsn-commit.checkpoints-num-delay",
        parse_int(0),
        1,
        doc="the slot is advanced to the end of the batch committed this many batches ago. "
        "Spark never replays a committed batch, so 0 is safe for the stream; a delay leaves "
        "`sparkcdc verify` of a running pipeline time to read the WAL after its target's "
        "position. Every read decodes the WAL from the slot's position on, so a long delay "
        "costs the server work (Flink CDC's default, 3, counts checkpoints)",
        attr="lsn_commit_delay",
    ),
    OptionSpec(
        "decimal.handling.mode",
        choices=DECIMAL_MODES,
        default="precise",
        doc="`precise`: `numeric(p,s)` with p <= 38 is a decimal (a NaN or infinite value "
        "fails with the fix) and other numerics are exact text; `string`: every numeric is "
        "its exact text",
        attr="decimal_mode",
    ),
    OptionSpec(
        "include-comments.enabled",
        parse_bool,
        False,
        doc="`true` (Flink CDC's option): COMMENT ON the tables and their columns is read "
        "and given to the targets a sink creates and the columns it adds (Delta, JDBC; "
        "docs/pipelines.md)",
        attr="include_comments",
    ),
    OptionSpec(
        "metadata.list",
        metadata_parser(METADATA_COLUMNS),
        (),
        doc=f"comma-separated metadata columns: {code(METADATA_COLUMNS)} (`database_name` is "
        "the PostgreSQL database)",
        attr="metadata",
    ),
    MAX_ROWS_PER_TRIGGER,
    TRUNCATE_HANDLING,
    OptionSpec(
        "scan.snapshot.position",
        position_parser(LsnPosition.from_json, '{"lsn": "0/16B3748", "count": ...}'),
        None,
        doc="batch reads only: the snapshot as of an earlier position of this slot's stream "
        '(JSON `{"lsn","count"}`; what `sparkcdc verify` uses)',
        attr="snapshot_position",
    ),
    OptionSpec(
        "jdbc.properties.",
        prefix=True,
        doc=f"TLS, as libpq/PgJDBC name it: `jdbc.properties.sslmode` ({code(SSL_MODES)}) "
        "with `.sslrootcert`, `.sslcert`, `.sslkey`; other properties are refused",
        attr="tls",
    ),
)


@dataclass(frozen=True)
class PostgresSourceConfig(SourceConfig):
    """Everything the source needs, validated; picklable (it travels to executors)."""

    hostname: str
    port: int
    username: str
    password: Secret
    database: str
    schema_name: re.Pattern[str] | None
    table_name: re.Pattern[str] | None
    tables: TablePatterns
    slot_name: str
    plugin: str
    publication_name: str
    publication_mode: str
    lsn_commit_delay: int
    decimal_mode: str
    metadata: tuple[str, ...]
    snapshot_position: LsnPosition | None = None
    tls: Mapping[str, str] = field(default_factory=dict)
    truncate_handling: str = "fail"
    changelog_mode: str = "all"
    #: ``include-comments.enabled``: comments go to the targets (core/comments.py)
    include_comments: bool = False

    @property
    def upsert(self) -> bool:
        """``changelog-mode: upsert``: the WAL's old rows are not relied on."""
        return self.changelog_mode == "upsert"

    def matches(self, schema: str, table: str) -> bool:
        return self.tables.matches(schema, table)

    def __repr__(self) -> str:
        return (
            f"PostgresSourceConfig({self.username}@{self.hostname}:{self.port}/{self.database}, "
            f"slot {self.slot_name})"
        )


def parse_config(raw: Mapping[str, str] | Iterable[tuple[str, str]]) -> PostgresSourceConfig:
    """Parse ``postgres-cdc`` options (Spark lower-cases keys; lookups are case-insensitive)."""
    opts = parse_options(raw, SPECS, context="postgres-cdc")
    check_shared(opts, "postgres-cdc")
    tables = capture_patterns(opts, ("schema-name", "table-name"), "postgres-cdc")
    tls = POSTGRES_TLS.parse(opts.groups.get("jdbc.properties.", {}), "postgres-cdc")
    publication = opts["publication.name"] or opts["slot.name"]
    config = build_config(
        PostgresSourceConfig, SPECS, opts, tls=tls, publication_name=publication, tables=tables
    )
    if config.upsert and UNCHANGED not in config.metadata:
        # the changelog names the values an upsert lacks (core/changes.py)
        return replace(config, metadata=(*config.metadata, UNCHANGED))
    return config


def one_table_options(table: TableId) -> dict[str, str]:
    """Options that capture exactly ``table`` (``sparkcdc verify`` reads one at a time)."""
    return {"schema-name": re.escape(table.database), "table-name": re.escape(table.table)}

"""The ``mysql-cdc`` options: Flink CDC's names and defaults, parsed and validated once.

Each option is one :class:`OptionSpec` in :data:`SPECS`, carrying its README text and the
:class:`MySqlSourceConfig` attribute it fills; the options every connector shares are
declared in :mod:`sparkcdc.snapshot.options`. ``parse_config`` adds only what spans
several options (a startup mode's companions, the TLS properties, the server-id range).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import (
    OptionSpec,
    build_config,
    parse_bool,
    parse_int,
    parse_options,
)
from sparkcdc.core.secret import Secret
from sparkcdc.core.table import TableId
from sparkcdc.core.tls import MYSQL_TLS
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
    HEARTBEAT_INTERVAL,
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

#: ``scan.startup.mode`` values beyond the shared ones, with what each does.
MYSQL_STARTUP_MODES = {
    "earliest-offset": "no snapshot: from the oldest binlog file on the server",
    "specific-offset": "no snapshot: from `scan.startup.specific-offset.*`",
    "timestamp": "no snapshot: from `scan.startup.timestamp-millis`",
}
STARTUP_MODES = (*BASE_STARTUP_MODES, *MYSQL_STARTUP_MODES)
SNAPSHOT_READERS = ("auto", "native", "classic")
#: How a chunk's snapshot is placed in the binlog (docs/design.md, "Watermark chunks").
SNAPSHOT_CONSISTENCIES = ("auto", "exact", "watermark")
METADATA_COLUMNS = (
    "database_name",
    "table_name",
    "op_ts",
    "row_kind",
    "binlog_file",
    "binlog_pos",
    "binlog_gtid",
)
#: ``jdbc.properties.*`` modes, translated to the C client's and PyMySQL's TLS settings.
SSL_MODES = MYSQL_TLS.modes
#: Connector/J's properties for caching_sha2_password's RSA key (lower-cased: canonical).
RSA_PROPERTIES = {
    "serverrsapublickeyfile": "serverRSAPublicKeyFile",
    "allowpublickeyretrieval": "allowPublicKeyRetrieval",
}


def _server_ids(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", text)
    if not match:
        raise ValueError("a server id like 5400 or a range like 5400-5408")
    low = int(match.group(1))
    high = int(match.group(2) or low)
    if not 1 <= low <= high < 2**32:
        raise ValueError("ids between 1 and 4294967295, the range low-high with low <= high")
    return (low, high)


def _zone(text: str) -> ZoneInfo:
    try:
        return ZoneInfo(text.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("an IANA time zone such as UTC or Europe/Berlin") from None


SPECS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "hostname",
        required=True,
        hint="the MySQL/MariaDB host",
        doc="MySQL/MariaDB host",
        attr="hostname",
    ),
    OptionSpec("port", parse_int(1, 65535), 3306, doc="the server's port", attr="port"),
    OptionSpec(
        "username",
        required=True,
        hint="a user with SELECT, REPLICATION SLAVE/CLIENT",
        doc="needs SELECT, REPLICATION SLAVE, REPLICATION CLIENT only",
        attr="username",
    ),
    PASSWORD,
    tables_spec(("database-name", "table-name")),
    TABLES_EXCLUDE,
    OptionSpec(
        "database-name",
        regex,
        hint="a regular expression of databases",
        doc="regular expression, matched against whole database names",
        attr="database_name",
    ),
    OptionSpec(
        "table-name",
        regex,
        hint="a regular expression of tables",
        doc="regular expression, matched against whole table names; several matches give "
        "the envelope",
        attr="table_name",
    ),
    OptionSpec(
        "server-id",
        _server_ids,
        None,  # parse_config draws the range
        default_doc="random range of 64 ids in 5400-6463",
        doc="an id or range `5400-5408`; concurrent binlog readers take ids from the range "
        "(give at least as many as executor cores): a batch's log pieces take at most half "
        "of them and its chunk partitions the rest (bigger partitions rather than two "
        "readers under one id; a single id is shared when a batch reads both)",
        attr="server_ids",
    ),
    OptionSpec(
        "server-time-zone",
        _zone,
        None,
        doc="accepted (IANA zone); TIMESTAMP values are exact instants (UTC) in both the "
        "snapshot and the binlog, independent of it",
        attr="server_time_zone",
    ),
    startup_mode_spec(MYSQL_STARTUP_MODES),
    OptionSpec(
        "scan.startup.specific-offset.file",
        default=None,
        doc="binlog file for `specific-offset` (with `.pos`)",
        attr="specific_file",
    ),
    OptionSpec(
        "scan.startup.specific-offset.pos",
        parse_int(4),
        None,
        doc="binlog position in that file for `specific-offset`",
        attr="specific_pos",
    ),
    OptionSpec(
        "scan.startup.specific-offset.gtid-set",
        default=None,
        doc="for `specific-offset`: start after these GTIDs (MariaDB `0-1-100,1-2-7`; MySQL "
        "`uuid:1-100`). A MariaDB position whose domains interleave differently in this "
        "binlog (no single position resumes it exactly, e.g. one taken on a replica) is "
        "refused with the fix",
        attr="specific_gtid",
    ),
    OptionSpec(
        "scan.startup.timestamp-millis",
        parse_int(0),
        None,
        doc="for `timestamp`: the first transaction committed at or after it (epoch "
        "milliseconds; binlog times have whole seconds)",
        attr="timestamp_millis",
    ),
    CHUNK_SIZE,
    CHUNK_KEY_COLUMN,
    ROWS_PER_PARTITION,
    ROWS_PER_BATCH,
    FETCH_SIZE,
    OptionSpec(
        "scan.snapshot.reader",
        choices=SNAPSHOT_READERS,
        default="auto",
        doc="`auto`: `native` (C over libmariadb straight into Arrow buffers, every column "
        "type, TLS) unless its extension failed to build, then `classic` (mysqlclient); "
        "`native` / `classic` force one ([docs/snapshot-reader.md](docs/snapshot-reader.md))",
        attr="snapshot_reader",
    ),
    OptionSpec(
        "scan.snapshot.consistency",
        choices=SNAPSHOT_CONSISTENCIES,
        default="auto",
        doc="how a chunk's rows are placed in the binlog: `exact` at the position MariaDB "
        "reports for a consistent snapshot (`binlog_snapshot_file/position`), `watermark` "
        "between the batch's position and the binlog's end after the snapshot opened "
        "(servers without an exact position: MySQL); `auto` takes `exact` where the server "
        'reports it ([docs/design.md](docs/design.md), "Watermark chunks")',
        attr="snapshot_consistency",
    ),
    FACTOR_UPPER,
    FACTOR_LOWER,
    CONNECT_TIMEOUT,
    CONNECT_MAX_RETRIES,
    HEARTBEAT_INTERVAL,
    NEWLY_ADDED_TABLES,
    SIGNAL_FILE,
    SIGNAL_KAFKA_TOPIC,
    SIGNAL_KAFKA_SERVERS,
    SIGNAL_KAFKA_KEY,
    SIGNAL_CONSUMER,
    PAUSE_FILE,
    ENVELOPE,
    TRUNCATE_HANDLING,
    OptionSpec(
        "treat-tinyint1-as-boolean.enabled",
        parse_bool,
        True,
        doc="`true` (Flink CDC's default): TINYINT(1) and BOOLEAN columns are BOOLEAN; "
        "`false`: TINYINT numbers like any TINYINT (signed: byte, unsigned: short), in the "
        "snapshot and the binlog alike. Fixed for a checkpoint: a restart with the other "
        "value is refused for tables with such columns",
        attr="tinyint1_boolean",
    ),
    OptionSpec(
        "include-comments.enabled",
        parse_bool,
        False,
        doc="`true` (Flink CDC's option): table and column comments are read and given to "
        "the targets a sink creates and the columns it adds (Delta, JDBC; docs/pipelines.md)",
        attr="include_comments",
    ),
    OptionSpec(
        "metadata.list",
        metadata_parser(METADATA_COLUMNS),
        (),
        doc=f"comma-separated metadata columns: {code(METADATA_COLUMNS)} (see above)",
        attr="metadata",
    ),
    MAX_ROWS_PER_TRIGGER,
    OptionSpec(
        "scan.snapshot.position",
        position_parser(BinlogPosition.from_json, '{"file": ..., "pos": ..., "gtid": ...}'),
        None,
        doc="batch reads only: the snapshot as of an earlier binlog position (JSON "
        '`{"file","pos","gtid"}`; what `sparkcdc verify` uses)',
        attr="snapshot_position",
    ),
    OptionSpec(
        "jdbc.properties.",
        prefix=True,
        doc=f"TLS: `jdbc.properties.sslMode` ({code(SSL_MODES)}; `required` when another "
        "`ssl*` property is set; `verify_identity` when only `sslCa` is) with "
        "`jdbc.properties.sslCa`, `.sslCert`, `.sslKey`, for every connection (planning, "
        "snapshot readers, binlog; `preferred` acts as `required`). Without TLS, MySQL 8's "
        "`caching_sha2_password` encrypts the password with the server's RSA key: "
        "`jdbc.properties.serverRSAPublicKeyFile` names it (PEM), "
        "`jdbc.properties.allowPublicKeyRetrieval: true` fetches it from the server; with "
        "neither such a login fails, saying so ([docs/mysql.md](docs/mysql.md)). Other "
        "properties are refused",
        attr="tls",
    ),
)


@dataclass(frozen=True)
class MySqlSourceConfig(SourceConfig):
    """Everything the source needs, validated; picklable (it travels to executors).

    The shared attributes (chunking, batch sizes, startup mode, connection policy) come
    from :class:`SourceConfig`; each attribute is filled by the spec whose ``attr`` names it.
    """

    hostname: str
    port: int
    username: str
    password: Secret
    database_name: re.Pattern[str] | None
    table_name: re.Pattern[str] | None
    tables: TablePatterns
    server_ids: tuple[int, int]
    server_time_zone: ZoneInfo | None
    specific_file: str | None
    specific_pos: int | None
    specific_gtid: str | None
    timestamp_millis: int | None
    metadata: tuple[str, ...]
    snapshot_position: BinlogPosition | None = None
    #: ``jdbc.properties.*``: the TLS ones and caching_sha2_password's RSA key ones
    tls: Mapping[str, str] = field(default_factory=dict)
    snapshot_reader: str = "auto"
    snapshot_consistency: str = "auto"
    truncate_handling: str = "fail"
    #: ``treat-tinyint1-as-boolean.enabled``: TINYINT(1) read as BOOLEAN (types.py)
    tinyint1_boolean: bool = True
    #: ``include-comments.enabled``: comments go to the targets (core/comments.py)
    include_comments: bool = False

    @property
    def ssl(self) -> dict[str, str]:
        """The TLS properties alone (``sslMode``, ``sslCa``, ...); empty: clear text."""
        return {k: v for k, v in self.tls.items() if k not in RSA_PROPERTIES.values()}

    @property
    def server_public_key_file(self) -> str | None:
        """The server's RSA public key (PEM) for caching_sha2_password over clear text."""
        return self.tls.get("serverRSAPublicKeyFile")

    @property
    def allow_public_key_retrieval(self) -> bool:
        """Whether that key may be fetched from the server (Connector/J's option)."""
        return self.tls.get("allowPublicKeyRetrieval", "false").lower() == "true"

    def server_id(self, index: int) -> int:
        """The replication server id of the index-th concurrent binlog reader."""
        low, high = self.server_ids
        return low + index % (high - low + 1)

    def matches(self, database: str, table: str) -> bool:
        return self.tables.matches(database, table)

    def __repr__(self) -> str:
        return f"MySqlSourceConfig({self.username}@{self.hostname}:{self.port})"


def parse_config(raw: Mapping[str, str] | Iterable[tuple[str, str]]) -> MySqlSourceConfig:
    """Parse ``mysql-cdc`` options (Spark lower-cases keys; lookups are case-insensitive)."""
    opts = parse_options(raw, SPECS, context="mysql-cdc")
    mode = opts["scan.startup.mode"]
    if mode == "specific-offset" and not (
        opts.get("scan.startup.specific-offset.gtid-set")
        or (
            opts.get("scan.startup.specific-offset.file")
            and opts.get("scan.startup.specific-offset.pos") is not None
        )
    ):
        raise OptionError(
            "mysql-cdc: scan.startup.mode 'specific-offset' needs "
            "'scan.startup.specific-offset.file' and 'scan.startup.specific-offset.pos' "
            "(or 'scan.startup.specific-offset.gtid-set')"
        )
    if mode == "timestamp" and opts.get("scan.startup.timestamp-millis") is None:
        raise OptionError(
            "mysql-cdc: scan.startup.mode 'timestamp' needs 'scan.startup.timestamp-millis' "
            "(epoch milliseconds)"
        )
    check_shared(opts, "mysql-cdc")
    tables = capture_patterns(opts, ("database-name", "table-name"), "mysql-cdc")
    properties = dict(opts.groups.get("jdbc.properties.", {}))
    rsa = {
        RSA_PROPERTIES[key.lower()]: properties.pop(key)
        for key in list(properties)
        if key.lower() in RSA_PROPERTIES
    }
    tls = MYSQL_TLS.parse(properties, "mysql-cdc")
    retrieval = rsa.get("allowPublicKeyRetrieval", "false").strip().lower()
    if retrieval not in ("true", "false"):
        raise OptionError(
            "mysql-cdc: option 'jdbc.properties.allowPublicKeyRetrieval' has invalid value "
            f"'{rsa['allowPublicKeyRetrieval']}'. Valid values: true, false"
        )
    server_ids = opts["server-id"]
    if server_ids is None:  # Flink picks a random id in 5400-6400; we need a range per reader
        low = random.randint(5400, 6400)
        server_ids = (low, low + 63)
    return build_config(
        MySqlSourceConfig,
        SPECS,
        opts,
        server_ids=server_ids,
        tls={**tls, **rsa, **({"allowPublicKeyRetrieval": retrieval} if rsa else {})},
        tables=tables,
    )


def one_table_options(table: TableId) -> dict[str, str]:
    """Options that capture exactly ``table`` (``sparkcdc verify`` reads one at a time)."""
    return {"database-name": re.escape(table.database), "table-name": re.escape(table.table)}

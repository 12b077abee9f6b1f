"""The ``mysql-cdc`` options: Flink CDC's names and defaults, parsed and validated once."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import (
    OptionSpec,
    parse_duration,
    parse_float,
    parse_int,
    parse_options,
)
from sparkcdc.core.secret import Secret
from sparkcdc.core.table import TableId

STARTUP_MODES = (
    "initial",
    "snapshot",
    "latest-offset",
    "earliest-offset",
    "specific-offset",
    "timestamp",
)
SNAPSHOT_READERS = ("auto", "native", "classic")
METADATA_COLUMNS = (
    "database_name",
    "table_name",
    "op_ts",
    "row_kind",
    "binlog_file",
    "binlog_pos",
    "binlog_gtid",
)


def _regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"a regular expression ({exc})") from None


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


def _position(text: str) -> BinlogPosition:
    try:
        return BinlogPosition.from_json(json.loads(text))
    except (ValueError, KeyError, TypeError):
        raise ValueError('a log position as JSON: {"file": ..., "pos": ..., "gtid": ...}') from None


def _metadata(text: str) -> tuple[str, ...]:
    names = tuple(n.strip().lower() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in METADATA_COLUMNS]
    if unknown:
        raise ValueError(
            f"a comma-separated list of {', '.join(METADATA_COLUMNS)} "
            f"(unknown: {', '.join(unknown)})"
        )
    return names


SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("hostname", required=True, doc="the MySQL/MariaDB host"),
    OptionSpec("port", parse_int(1, 65535), 3306),
    OptionSpec("username", required=True, doc="a user with SELECT, REPLICATION SLAVE/CLIENT"),
    OptionSpec("password", secret=True, default=Secret("")),
    OptionSpec("database-name", _regex, required=True, doc="a regular expression of databases"),
    OptionSpec("table-name", _regex, required=True, doc="a regular expression of tables"),
    OptionSpec("server-id", _server_ids, None),
    OptionSpec("server-time-zone", _zone, None),
    OptionSpec("scan.startup.mode", choices=STARTUP_MODES, default="initial"),
    OptionSpec("scan.startup.specific-offset.file", default=None),
    OptionSpec("scan.startup.specific-offset.pos", parse_int(4), None),
    OptionSpec("scan.startup.specific-offset.gtid-set", default=None),
    OptionSpec("scan.startup.timestamp-millis", parse_int(0), None),
    OptionSpec("scan.incremental.snapshot.chunk.size", parse_int(1), 8096),
    OptionSpec("scan.incremental.snapshot.chunk.key-column", default=None),
    OptionSpec("scan.incremental.snapshot.rows-per-partition", parse_int(1), 262_144),
    # chunk rows per micro-batch without maxRowsPerTrigger (64 partitions)
    OptionSpec("scan.incremental.snapshot.rows-per-batch", parse_int(1), 1 << 24),
    OptionSpec("scan.snapshot.fetch.size", parse_int(1), 1024),
    # chunk reader: C into Arrow buffers (native; auto unless TLS) or mysqlclient (classic)
    OptionSpec("scan.snapshot.reader", choices=SNAPSHOT_READERS, default="auto"),
    OptionSpec("chunk-key.even-distribution.factor.upper-bound", parse_float(0.0), 1000.0),
    OptionSpec("chunk-key.even-distribution.factor.lower-bound", parse_float(0.0), 0.05),
    OptionSpec("connect.timeout", parse_duration, 30.0),
    OptionSpec("connect.max-retries", parse_int(0), 3),
    OptionSpec("heartbeat.interval", parse_duration, 30.0),
    OptionSpec("metadata.list", _metadata, ()),
    OptionSpec("maxRowsPerTrigger", parse_int(1), None),
    # batch reads only: the snapshot as of an earlier log position (``sparkcdc verify``)
    OptionSpec("scan.snapshot.position", _position, None),
    OptionSpec("jdbc.properties.", prefix=True),
)

#: ``jdbc.properties.*`` keys we translate to the C client's TLS settings.
TLS_PROPERTIES = ("sslMode", "sslCa", "sslCert", "sslKey")
SSL_MODES = ("disabled", "preferred", "required", "verify_ca", "verify_identity")


@dataclass(frozen=True)
class MySqlSourceConfig:
    """Everything the source needs, validated; picklable (it travels to executors)."""

    hostname: str
    port: int
    username: str
    password: Secret
    database_name: re.Pattern[str]
    table_name: re.Pattern[str]
    server_ids: tuple[int, int]
    server_time_zone: ZoneInfo | None
    startup_mode: str
    specific_file: str | None
    specific_pos: int | None
    specific_gtid: str | None
    timestamp_millis: int | None
    chunk_size: int
    chunk_key_column: str | None
    rows_per_partition: int
    rows_per_batch: int
    fetch_size: int
    factor_upper: float
    factor_lower: float
    connect_timeout: float
    connect_max_retries: int
    heartbeat_interval: float
    metadata: tuple[str, ...]
    max_rows_per_trigger: int | None
    snapshot_position: BinlogPosition | None = None
    tls: Mapping[str, str] = field(default_factory=dict)
    snapshot_reader: str = "auto"

    def server_id(self, index: int) -> int:
        """The replication server id of the index-th concurrent binlog reader."""
        low, high = self.server_ids
        return low + index % (high - low + 1)

    def matches(self, database: str, table: str) -> bool:
        return bool(self.database_name.fullmatch(database) and self.table_name.fullmatch(table))

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
    lower = opts["chunk-key.even-distribution.factor.lower-bound"]
    upper = opts["chunk-key.even-distribution.factor.upper-bound"]
    if lower > upper:
        raise OptionError(
            "mysql-cdc: option 'chunk-key.even-distribution.factor.lower-bound' "
            f"({lower}) must not exceed '...upper-bound' ({upper})"
        )
    # Spark lower-cases option keys: match the property names case-insensitively
    canonical = {k.lower(): k for k in TLS_PROPERTIES}
    tls = {
        canonical.get(k.lower(), k): v for k, v in opts.groups.get("jdbc.properties.", {}).items()
    }
    unknown = [k for k in tls if k not in TLS_PROPERTIES]
    if unknown:
        raise OptionError(
            f"mysql-cdc: unsupported option 'jdbc.properties.{unknown[0]}'. Supported: "
            + ", ".join(f"jdbc.properties.{k}" for k in TLS_PROPERTIES)
        )
    if "sslMode" in tls and tls["sslMode"].lower() not in SSL_MODES:
        raise OptionError(
            f"mysql-cdc: option 'jdbc.properties.sslMode' has invalid value '{tls['sslMode']}'. "
            f"Valid values: {', '.join(SSL_MODES)}"
        )
    server_ids = opts["server-id"]
    if server_ids is None:  # Flink picks a random id in 5400-6400; we need a range per reader
        low = random.randint(5400, 6400)
        server_ids = (low, low + 63)
    return MySqlSourceConfig(
        hostname=opts["hostname"],
        port=opts["port"],
        username=opts["username"],
        password=opts["password"],
        database_name=opts["database-name"],
        table_name=opts["table-name"],
        server_ids=server_ids,
        server_time_zone=opts["server-time-zone"],
        startup_mode=mode,
        specific_file=opts["scan.startup.specific-offset.file"],
        specific_pos=opts["scan.startup.specific-offset.pos"],
        specific_gtid=opts["scan.startup.specific-offset.gtid-set"],
        timestamp_millis=opts["scan.startup.timestamp-millis"],
        chunk_size=opts["scan.incremental.snapshot.chunk.size"],
        chunk_key_column=opts["scan.incremental.snapshot.chunk.key-column"],
        rows_per_partition=opts["scan.incremental.snapshot.rows-per-partition"],
        rows_per_batch=opts["scan.incremental.snapshot.rows-per-batch"],
        fetch_size=opts["scan.snapshot.fetch.size"],
        factor_upper=upper,
        factor_lower=lower,
        connect_timeout=opts["connect.timeout"],
        connect_max_retries=opts["connect.max-retries"],
        heartbeat_interval=opts["heartbeat.interval"],
        metadata=opts["metadata.list"],
        max_rows_per_trigger=opts["maxRowsPerTrigger"],
        snapshot_position=opts["scan.snapshot.position"],
        tls=tls,
        snapshot_reader=opts["scan.snapshot.reader"],
    )


def one_table_options(table: TableId) -> dict[str, str]:
    """Options that capture exactly ``table`` (``sparkcdc verify`` reads one at a time)."""
    return {"database-name": re.escape(table.database), "table-name": re.escape(table.table)}

"""Source options every connector shares, with Flink CDC's names and defaults.

Chunking, batch sizes, fetch size, startup modes, distribution factors, connection timeouts
and retries, and the read limit mean the same for MySQL and PostgreSQL sources: they drive
the engine-neutral snapshot (chunk planning, normalisation, batch sizing) and the
connection policy. Declaring them here once keeps one name, default, validation and
README text for every connector; a connector lists these specs among its own and extends
:class:`SourceConfig` with its own attributes.

No pyspark and no database drivers here, like the rest of ``snapshot``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import (
    Options,
    OptionSpec,
    parse_bool,
    parse_duration,
    parse_float,
    parse_int,
)
from sparkcdc.core.secret import Secret


def regex(text: str) -> re.Pattern[str]:
    """A regular expression option (table and namespace patterns)."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"a regular expression ({exc})") from None


@dataclass(frozen=True)
class TablePatterns:
    """Flink CDC 3.x's ``tables``: comma-separated ``namespace.table`` pairs of regular
    expressions (``app_db.\\.*, shop.orders_[0-9]+``). Each pair splits at its first
    unescaped dot; an escaped dot (``\\.``) in either part is the regular expression's
    ``.``. A table is captured when any pair matches both of its names whole."""

    text: str
    pairs: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]
    #: How messages name it: the option(s) it came from, with their values.
    label: str = ""
    #: Flink CDC's ``tables.exclude``: pairs in the same syntax; a table any of them
    #: matches is left out even where ``pairs`` match it.
    excluded: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = ()
    #: Patterns that are valid regular expressions but look like shell globs
    #: (``app_db.orders_*`` matches ``orders``, ``orders_``, ``orders__``, not
    #: ``orders_2024``): what Flink CDC's syntax for the likely meaning is.
    hints: tuple[str, ...] = ()

    def matches(self, namespace: str, table: str) -> bool:
        def hit(pairs: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]) -> bool:
            return any(n.fullmatch(namespace) and t.fullmatch(table) for n, t in pairs)

        return hit(self.pairs) and not hit(self.excluded)

    def excluding(self, other: TablePatterns) -> TablePatterns:
        """These patterns less the tables ``other`` matches (``tables.exclude``)."""
        return TablePatterns(
            self.text,
            self.pairs,
            f"{self.label} less tables.exclude '{other.text}'",
            self.excluded + other.pairs,
            self.hints + other.hints,
        )

    @property
    def may_grow(self) -> bool:
        """Whether tables created later may match: some pair is a pattern, not a literal
        name (``shop.orders`` names one table forever; ``shop.orders_.*`` does not). A
        stream that watches for created tables takes the envelope schema from its start
        when this holds, however many tables matched then (snapshot/catalog.py)."""
        return any(_is_pattern(part.pattern) for pair in self.pairs for part in pair)


#: Characters that make a regular expression match more than its own text.
_PATTERN_CHARACTERS = frozenset(".^$*+?{}[]|()")


def _is_pattern(text: str) -> bool:
    """Whether ``text`` matches other names than one: an escaped punctuation character
    (``re.escape``'s ``\\-``) is literal, an escaped letter or digit (``\\d``) is not."""
    chars = iter(text)
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            if escaped.isalnum() or not escaped:
                return True
        elif char in _PATTERN_CHARACTERS:
            return True
    return False


#: A ``tables`` item: the namespace pattern up to the first unescaped dot, the table's after.
_NAMESPACE_TABLE = r"((?:[^.\\]|\\.)+)\.(.+)"


def table_patterns(text: str) -> TablePatterns:
    """Parse ``tables``; commas inside ``{}``, ``[]`` or ``()`` belong to a pattern."""
    items, depth, current = [], 0, ""
    escaped = False
    for char in text:
        if escaped:
            current, escaped = current + char, False
            continue
        if char == "\\":
            escaped = True
        elif char in "{[(":
            depth += 1
        elif char in "}])":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    items.append(current)
    pairs, hints = [], []
    label = f"tables '{text.strip()}'"
    for item in (i.strip() for i in items):
        match = re.fullmatch(_NAMESPACE_TABLE, item)
        if match is None:
            raise ValueError(
                f"comma-separated 'namespace.table' patterns; '{item}' is not one: two "
                "regular expressions separated by the first unescaped dot, where '\\.' "
                "stands for the regular expression's '.' (Flink CDC's syntax), e.g. app_db.\\.*"
            )
        namespace, table = (part.replace("\\.", ".") for part in match.groups())
        hint = glob_hint(item)
        try:
            pairs.append((regex(namespace), regex(table)))
        except ValueError as exc:
            raise ValueError(f"{exc}{'; ' + hint if hint else ''}") from None
        if hint:
            hints.append(hint)
            label += f" ('{item}' a shell glob? Flink CDC's syntax: '{_flink_syntax(item)}')"
    return TablePatterns(text.strip(), tuple(pairs), label, hints=tuple(hints))


def glob_hint(item: str) -> str:
    """A hint for a ``namespace.table`` pattern written as a shell glob (``app_db.*``,
    ``shop.orders_*``): Flink CDC's patterns are regular expressions, where ``\\.*`` is
    "anything". Empty when no part of ``item`` looks like one (see :func:`_glob_stars`)."""
    flink = _flink_syntax(item)
    if not flink:
        return ""
    return (
        f"'{item}' looks like a shell glob: patterns are regular expressions (Flink CDC's "
        f"syntax), write '{flink}' ('\\.*' is any name)"
    )


def _flink_syntax(item: str) -> str:
    """``item`` with its shell-glob stars as Flink CDC's ``\\.*`` ("": it has none)."""
    match = re.fullmatch(_NAMESPACE_TABLE, item)
    if match is None or not any(_glob_stars(part) for part in match.groups()):
        return ""
    return ".".join(_as_regex(part) for part in match.groups())


#: What a ``*`` follows when it repeats a regular expression's "any character" or a group
#: (``.*``, ``\\.*``, ``[0-9]*``, ``(_v2)*``, ``x{2}*`` is invalid anyway).
_REPEATABLE = frozenset(".)]}")


def _glob_stars(part: str) -> list[int]:
    """Where ``part`` has a ``*`` as a shell glob writes it: first, or after a plain
    character (``orders_*``: a regular expression would repeat the ``_``). A ``*`` after
    ``.``, a bracket, a group or an escape (``\\d*``, ``\\.*``) is a regular expression's."""
    stars, previous, escaped = [], "", False
    for index, char in enumerate(part):
        if escaped:
            previous, escaped = "\\" + char, False
            continue
        if char == "\\":
            escaped = True
            continue
        if char == "*" and (not previous or (len(previous) == 1 and previous not in _REPEATABLE)):
            stars.append(index)
        previous = char
    return stars


def _as_regex(part: str) -> str:
    """``part`` with each shell-glob ``*`` written as Flink CDC's ``\\.*``."""
    for index in reversed(_glob_stars(part)):
        part = part[:index] + "\\.*" + part[index + 1 :]
    return part


def tables_spec(names: tuple[str, str]) -> OptionSpec:
    """``tables``, instead of the connector's pair of options ``names``."""
    return OptionSpec(
        "tables",
        table_patterns,
        doc="instead of "
        + " and ".join(f"`{n}`" for n in names)
        + ": comma-separated `namespace.table` pairs of regular expressions, Flink CDC's "
        r"pipeline syntax (`app_db.\.*, shop.orders_[0-9]+`; `\.` is the regular "
        "expression's `.`)",
        attr="tables",
    )


#: Flink CDC's ``tables.exclude``: tables left out of those the patterns match.
TABLES_EXCLUDE = OptionSpec(
    "tables.exclude",
    table_patterns,
    doc="tables left out of those `tables` (or the namespace and table patterns) match, in "
    r"the same syntax (`app_db.audit_\.*`); Flink CDC's option",
)


def capture_patterns(opts: Options, names: tuple[str, str], context: str) -> TablePatterns:
    """The tables to capture: ``tables``, or the connector's pair ``names`` (a namespace
    and a table pattern), never both; less those ``tables.exclude`` matches."""
    found = _included(opts, names, context)
    excluded: TablePatterns | None = opts.get(TABLES_EXCLUDE.name)
    return found if excluded is None else found.excluding(excluded)


def _included(opts: Options, names: tuple[str, str], context: str) -> TablePatterns:
    given: TablePatterns | None = opts["tables"]
    pair = [opts[n] for n in names]
    if given is not None:
        if any(p is not None for p in pair):
            raise OptionError(
                f"{context}: give either option 'tables' or '{names[0]}' and '{names[1]}', not both"
            )
        return given
    for name, pattern in zip(names, pair, strict=True):
        if pattern is None:
            raise OptionError(
                f"{context}: option '{name}' is required (or 'tables', comma-separated "
                "'namespace.table' patterns)"
            )
    namespace, table = pair
    label = f"{names[0]} '{namespace.pattern}' and {names[1]} '{table.pattern}'"
    return TablePatterns(f"{namespace.pattern}.{table.pattern}", ((namespace, table),), label)


def metadata_parser(columns: tuple[str, ...]) -> Callable[[str], tuple[str, ...]]:
    """``metadata.list``: a comma-separated subset of the connector's ``columns``."""

    def parse(text: str) -> tuple[str, ...]:
        names = tuple(n.strip().lower() for n in text.split(",") if n.strip())
        unknown = [n for n in names if n not in columns]
        if unknown:
            raise ValueError(
                f"a comma-separated list of {', '.join(columns)} (unknown: {', '.join(unknown)})"
            )
        return names

    return parse


def position_parser(
    from_json: Callable[[dict[str, Any]], Any], example: str
) -> Callable[[str], Any]:
    """A log position option given as the JSON of the connector's position (what
    ``sparkcdc verify`` passes as ``scan.snapshot.position``)."""

    def parse(text: str) -> Any:
        try:
            return from_json(json.loads(text))
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"a log position as JSON: {example}") from None

    return parse


def code(names: tuple[str, ...]) -> str:
    """Values as Markdown code, for docs that list them from the tuple the parser checks."""
    return ", ".join(f"`{n}`" for n in names)


#: Startup modes every connector offers, with what each does (empty: the name says it).
BASE_STARTUP_MODES: Mapping[str, str] = {
    "initial": "snapshot, then the change log",
    "snapshot": "snapshot only, then the stream stays idle",
    "latest-offset": "no snapshot: changes from the current log position on",
}


def startup_mode_spec(connector_modes: Mapping[str, str]) -> OptionSpec:
    """``scan.startup.mode``: the base modes followed by the connector's own (e.g. MySQL's
    ``specific-offset``), each documented with its effect, ``initial`` by default."""
    modes = {**BASE_STARTUP_MODES, **connector_modes}
    doc = ", ".join(f"`{mode}` ({what})" if what else f"`{mode}`" for mode, what in modes.items())
    return OptionSpec(
        "scan.startup.mode",
        choices=tuple(modes),
        default="initial",
        doc=doc,
        attr="startup_mode",
    )


PASSWORD = OptionSpec(
    "password",
    secret=True,
    default=Secret(""),
    doc="never logged or shown in errors",
    attr="password",
)
CHUNK_SIZE = OptionSpec(
    "scan.incremental.snapshot.chunk.size",
    parse_int(1),
    8096,
    doc="rows per chunk; also the most rows of a keyless table with no chunk key column "
    "read as one chunk (a larger one is left out)",
    attr="chunk_size",
)


@dataclass(frozen=True)
class ChunkKeyColumns:
    """``scan.incremental.snapshot.chunk.key-column``: one column name for every table, or
    Flink CDC's per-table form ``db.t:col;db2.t2:col2``, whose table parts are patterns
    like ``tables``'s (``\\.`` is the regular expression's ``.``). The first entry whose
    pattern matches a table names its column; a table no entry matches is chunked on its
    first primary key column."""

    text: str = ""
    #: The one column of the plain form (no ``:``), for every table.
    everywhere: str | None = None
    per_table: tuple[tuple[TablePatterns, str], ...] = ()

    def column_for(self, namespace: str, table: str) -> str | None:
        """The column the option names for this table, or None (the primary key's first)."""
        if self.everywhere is not None:
            return self.everywhere
        for patterns, column in self.per_table:
            if patterns.matches(namespace, table):
                return column
        return None


_CHUNK_KEY_FORM = (
    "a column name, or 'namespace.table:column' entries separated by ';' (Flink CDC's "
    "form, e.g. 'db.orders:order_id;db.log_\\.*:created_at'; the table part is a pattern "
    "like 'tables')"
)


def chunk_key_columns(text: str) -> ChunkKeyColumns:
    """Parse ``scan.incremental.snapshot.chunk.key-column`` (:class:`ChunkKeyColumns`)."""
    stripped = text.strip()
    if not stripped:
        raise ValueError(_CHUNK_KEY_FORM)
    if ":" not in stripped and ";" not in stripped:
        return ChunkKeyColumns(stripped, everywhere=stripped)
    entries = []
    for item in (i.strip() for i in stripped.split(";")):
        if not item:
            continue
        pattern, sep, column = item.rpartition(":")
        if not sep or not pattern.strip() or not column.strip():
            raise ValueError(f"{_CHUNK_KEY_FORM}; '{item}' is not 'namespace.table:column'")
        try:
            patterns = table_patterns(pattern.strip())
        except ValueError:
            raise ValueError(
                f"{_CHUNK_KEY_FORM}; '{pattern.strip()}' in '{item}' is not a "
                "'namespace.table' pattern"
            ) from None
        entries.append((patterns, column.strip()))
    if not entries:
        raise ValueError(_CHUNK_KEY_FORM)
    return ChunkKeyColumns(stripped, per_table=tuple(entries))


CHUNK_KEY_COLUMN = OptionSpec(
    "scan.incremental.snapshot.chunk.key-column",
    chunk_key_columns,
    default=ChunkKeyColumns(),
    default_doc="first primary key column",
    doc="the column chunks are split on: one name for every table, or Flink CDC's per-table "
    r"form `db.t:col;db2.t2:col2` (the table part a pattern like `tables`'s, `\.` for `.`); "
    "a table no entry matches is chunked on its first primary key column",
    attr="chunk_key_columns",
)
ROWS_PER_PARTITION = OptionSpec(
    "scan.incremental.snapshot.rows-per-partition",
    parse_int(1),
    262_144,
    doc="rows per Spark task (several chunks per task: tasks cost ~35 ms each; small tables' "
    "chunks share tasks)",
    attr="rows_per_partition",
)
# 2**24 rows: 64 partitions of the default rows-per-partition
ROWS_PER_BATCH = OptionSpec(
    "scan.incremental.snapshot.rows-per-batch",
    parse_int(1),
    1 << 24,
    doc="snapshot rows per micro-batch when `maxRowsPerTrigger` is not set: each chunk is "
    "normalised to its batch's log position by reading the change log from there to its own "
    "read, so batches stay short; under `availableNow` the snapshot's batches also follow the "
    "log past the query's start (the run ends once the snapshot is done and the log reaches "
    "the start's position)",
    attr="rows_per_batch",
)
#: Rows one fetch may take: a batch is held in memory whole, in the driver's client and as
#: Arrow, so a mistyped size must not ask a task for all of a table at once.
MAX_FETCH_SIZE = 1_000_000
FETCH_SIZE = OptionSpec(
    "scan.snapshot.fetch.size",
    parse_int(1, MAX_FETCH_SIZE),
    1024,
    doc="rows per fetch and per Arrow batch, at most 1000000; snapshot reads use larger "
    "batches, as Spark pays per batch (MySQL: at least 16384 rows, the native reader at "
    "least 65536)",
    attr="fetch_size",
)
FACTOR_UPPER = OptionSpec(
    "chunk-key.even-distribution.factor.upper-bound",
    parse_float(0.0),
    1000.0,
    doc="numeric chunk keys whose distribution factor (max-min+1)/rows lies within the lower "
    "and upper bound are split arithmetically; others by queries",
    attr="factor_upper",
)
FACTOR_LOWER = OptionSpec(
    "chunk-key.even-distribution.factor.lower-bound",
    parse_float(0.0),
    0.05,
    doc="the lower bound of that distribution factor (at most the upper bound)",
    attr="factor_lower",
)
CONNECT_TIMEOUT = OptionSpec(
    "connect.timeout",
    parse_duration,
    30.0,
    default_doc="30s",
    doc="timeout of a connection attempt (whole seconds, at least 1); also how long a "
    "MySQL read may wait for the server (log, chunk and planning connections): a stalled "
    "network or server fails the read, which is retried, instead of hanging a task. "
    "PostgreSQL connections use it as the TCP user timeout with keepalives, which catch a "
    "dead network but not a peer that stays up and silent",
    attr="connect_timeout",
)
CONNECT_MAX_RETRIES = OptionSpec(
    "connect.max-retries",
    parse_int(0),
    3,
    doc="retries with backoff of lost or refused connections "
    '(see [docs/design.md](docs/design.md), "Lost connections")',
    attr="connect_max_retries",
)
HEARTBEAT_INTERVAL = OptionSpec(
    "heartbeat.interval",
    parse_duration,
    30.0,
    default_doc="30s",
    doc="accepted; not used yet",
    attr="heartbeat_interval",
)
NEWLY_ADDED_TABLES = OptionSpec(
    "scan.newly-added-table.enabled",
    parse_bool,
    False,
    doc="on a restart from a checkpoint, snapshot the tables that match now but did not "
    "when the checkpoint was made (while the others continue from it), and forget the "
    "tables that no longer match (their targets keep their rows); also capture tables "
    "created (or renamed into the pattern) while the stream runs, without a restart "
    "(table options that are patterns then give the envelope schema even when one table "
    "matches at the start; PostgreSQL: once the table is readable and REPLICA IDENTITY "
    "FULL, the publication extended as `publication.autocreate.mode` allows); `false`: "
    "new tables are not captured (warned) and a "
    "table that no longer matches fails the restart (on MySQL/MariaDB a table dropped while "
    "stopped, which the options still match, is followed to its drop instead)",
    attr="newly_added_tables",
)
SIGNAL_FILE = OptionSpec(
    "signal.file",
    default=None,
    default_doc="none (pipelines: `signals.jsonl` in the checkpoint)",
    doc="a file of signals, one JSON object per line in Debezium's format "
    "(`execute-snapshot`, `stop-snapshot`, `pause-snapshot`, `resume-snapshot`), read by the "
    "driver before each batch; appended to, never rewritten (the offset keeps the position "
    "read up to, so each signal takes effect once). `sparkcdc snapshot` writes it for "
    "pipelines ([docs/signals.md](docs/signals.md))",
    attr="signal_file",
)
SIGNAL_KAFKA_TOPIC = OptionSpec(
    "signal.kafka.topic",
    default=None,
    doc="a Kafka topic of signals (Debezium's Kafka channel), read by the driver before each "
    "batch from the positions in the offset (a new stream starts at its end); needs "
    "`signal.kafka.bootstrap.servers`",
    attr="signal_kafka_topic",
)
SIGNAL_KAFKA_SERVERS = OptionSpec(
    "signal.kafka.bootstrap.servers",
    default=None,
    doc="the Kafka brokers of `signal.kafka.topic`",
    attr="signal_kafka_servers",
)
SIGNAL_KAFKA_KEY = OptionSpec(
    "signal.kafka.key",
    default=None,
    default_doc="every message",
    doc="take only the messages of `signal.kafka.topic` with this key (streams sharing a "
    "topic, as Debezium's connectors do by their topic prefix)",
    attr="signal_kafka_key",
)
SIGNAL_CONSUMER = OptionSpec(
    "signal.consumer.",
    prefix=True,
    doc="settings of the consumer that reads `signal.kafka.topic` (Debezium's pass-through "
    "`signal.consumer.*`), in librdkafka's names, e.g. `signal.consumer.security.protocol: "
    "SSL` with `signal.consumer.ssl.ca.location` for a TLS broker, or SASL's settings",
    attr="signal_consumer",
)
#: What a stream does at a TRUNCATE of a captured table.
TRUNCATE_MODES = ("fail", "skip")
TRUNCATE_HANDLING = OptionSpec(
    "truncate.handling.mode",
    choices=TRUNCATE_MODES,
    default="fail",
    doc="at a TRUNCATE of a captured table, and a DROP TABLE (MySQL/MariaDB: also DROP "
    "DATABASE) of captured tables in a stream of several (no row events say which rows they "
    "removed), `fail` stops the stream naming it; `skip` goes on (a batch of its own, the "
    "changelog keeps the removed rows) and records it in the table's offset entry "
    "(`truncated`, `table_dropped`: a dropped table is captured no more). Pipelines set "
    "`skip` and apply them as `schema.change.behavior` says",
    attr="truncate_handling",
)
PAUSE_FILE = OptionSpec(
    "pause.file",
    default=None,
    default_doc="none (pipelines: `pause` in the checkpoint)",
    doc="while this file exists the stream plans no new micro-batch (one planned already "
    "runs to its end): a stop between batches, which Spark has no call for. `sparkcdc run` "
    "creates it at a stop and stops the query once it is idle",
    attr="pause_file",
)
ENVELOPE = OptionSpec(
    "scan.envelope.enabled",
    parse_bool,
    False,
    doc="one table in the envelope schema too (several tables always are: `database_name`, "
    "`table_name`, the change columns, `key`, `before`, `after` as JSON), so its rows may "
    "change columns without a restart; pipelines set it while a table's columns at the "
    "checkpoint differ from its columns now. A stream whose table options are patterns and "
    "that watches for created tables (`scan.newly-added-table.enabled`) is in the envelope "
    "from its start, however many tables match then",
    attr="envelope",
)
MAX_ROWS_PER_TRIGGER = OptionSpec(
    "maxRowsPerTrigger",
    parse_int(1),
    None,
    default_doc="unlimited",
    doc="rows per micro-batch (Spark read limit; honoured by `availableNow`): snapshot rows "
    "plus change log row events (a multi-row event counts once; a transaction is never "
    "split; while a snapshot runs, the log gets half)",
    attr="max_rows_per_trigger",
)

#: The shared specs apart from ``scan.startup.mode`` (:func:`startup_mode_spec`: its
#: choices depend on the connector).
SHARED_SPECS: tuple[OptionSpec, ...] = (
    CHUNK_SIZE,
    CHUNK_KEY_COLUMN,
    ROWS_PER_PARTITION,
    ROWS_PER_BATCH,
    FETCH_SIZE,
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
    MAX_ROWS_PER_TRIGGER,
)


@dataclass(frozen=True)
class SourceConfig:
    """The attributes the shared options fill, so engine-neutral code (chunk planning,
    batch sizing, retries) can take any connector's config. Connectors subclass it."""

    startup_mode: str
    chunk_size: int
    chunk_key_columns: ChunkKeyColumns
    rows_per_partition: int
    rows_per_batch: int
    fetch_size: int
    factor_upper: float
    factor_lower: float
    connect_timeout: float
    connect_max_retries: int
    heartbeat_interval: float
    newly_added_tables: bool
    max_rows_per_trigger: int | None
    envelope: bool
    signal_file: str | None
    signal_kafka_topic: str | None
    signal_kafka_servers: str | None
    signal_kafka_key: str | None
    #: librdkafka settings of the signal topic's consumer (``signal.consumer.*``).
    signal_consumer: Mapping[str, str]
    pause_file: str | None


def check_shared(opts: Options, context: str) -> None:
    """The cross-option rule among the shared options: the distribution factor's bounds
    must form a range (each is valid alone, so the parser cannot see it)."""
    if opts[SIGNAL_KAFKA_TOPIC.name] and not opts[SIGNAL_KAFKA_SERVERS.name]:
        raise OptionError(
            f"{context}: option '{SIGNAL_KAFKA_TOPIC.name}' needs "
            f"'{SIGNAL_KAFKA_SERVERS.name}' (the brokers to read it from)"
        )
    lower = opts[FACTOR_LOWER.name]
    upper = opts[FACTOR_UPPER.name]
    if lower > upper:
        raise OptionError(
            f"{context}: option '{FACTOR_LOWER.name}' "
            f"({lower}) must not exceed '...upper-bound' ({upper})"
        )

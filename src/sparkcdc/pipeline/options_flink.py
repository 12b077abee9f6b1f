"""Flink CDC pipeline-file keys that are not sparkcdc options, so its files run as they are.

A pipeline file written for Flink CDC 3.5 carries keys of three kinds beside sparkcdc's
own options: those that mean something here and are translated into sparkcdc's options
(``debezium.snapshot.mode: never`` is ``scan.startup.mode: latest-offset``,
``local-time-zone`` is Spark's session time zone), those that steer Flink's machinery and
mean nothing in Spark (``scan.incremental.close-idle-reader.enabled``, ``operator.uid.prefix``),
which are accepted with a one-line note, and values that ask for what sparkcdc does not do
(``scan.parse.online.schema.changes.enabled: true``), which are refused with the reason.
Flink keys that sparkcdc implements under the same name (``treat-tinyint1-as-boolean.enabled``,
``include-comments.enabled``) are the connectors' own options, not listed here.

Each key is declared once, as an :class:`FlinkKey`: its spec (parser, default and the text of
the documentation's tables, rendered like every other options table) and its effect. The
loader (pipeline/definition.py) takes these keys out of a block before the block's own
options are validated, so the source's Spark options hold sparkcdc's options only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import Options, OptionSpec, parse_bool, parse_int, parse_options

#: Spark's setting of the session time zone (what ``local-time-zone`` sets).
SESSION_TIME_ZONE = "spark.sql.session.timeZone"


@dataclass
class Translation:
    """What a block's Flink keys amount to: options to add (or change) in sparkcdc's names,
    notes for the user, and the settings that belong to the pipeline rather than a block."""

    options: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Spark settings (``local-time-zone``).
    spark_conf: dict[str, str] = field(default_factory=dict)
    #: ``schema-change.enabled`` as given (None: not given).
    schema_changes: bool | None = None
    #: ``execution.runtime-mode: BATCH``: process the snapshot, then stop.
    batch: bool = False
    #: ``route-mode: FIRST_MATCH``: a table takes the first route that matches it.
    first_match_routes: bool = False
    #: The block's ``name`` (Flink's display name of the source or sink).
    name: str | None = None


Effect = Callable[[Any, Translation], None]


@dataclass(frozen=True)
class FlinkKey:
    """One Flink CDC key: its spec (parse, default, documentation) and what it does here."""

    spec: OptionSpec
    effect: Effect


def _note(text: str) -> Effect:
    """Accepted with a note (said once per run): the key steers Flink's machinery."""

    def effect(value: Any, out: Translation) -> None:
        out.notes.append(text)

    return effect


def _noted_unless(default: Any, text: str) -> Effect:
    """Silent at Flink's default value; any other value is accepted with the note."""

    def effect(value: Any, out: Translation) -> None:
        if value != default:
            out.notes.append(text)

    return effect


def _refused_unless(allowed: Any, reason: str) -> Effect:
    """Only ``allowed`` (what sparkcdc does) is accepted; another value is refused."""

    def effect(value: Any, out: Translation) -> None:
        if value != allowed:
            raise ValueError(reason)

    return effect


def _quiet(value: Any, out: Translation) -> None:
    """Nothing to do: the value is what sparkcdc does anyway."""


def _display_name(value: Any, out: Translation) -> None:
    out.name = str(value)


def _schema_changes(value: Any, out: Translation) -> None:
    out.schema_changes = value


def _mapped(option: str, note: str = "") -> Effect:
    """The value goes to sparkcdc's ``option`` (a note says so when ``note`` is given)."""

    def effect(value: Any, out: Translation) -> None:
        out.options[option] = value if isinstance(value, str) else _text(value)
        if note:
            out.notes.append(note)

    return effect


def _text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _skip_count(value: int, out: Translation) -> None:
    if value:
        raise ValueError(
            "0; skipping events or rows after the start position is not supported: give the "
            "position after them in scan.startup.specific-offset.file/.pos or .gtid-set"
        )


def _newly_added_in_log(value: bool, out: Translation) -> None:
    if value:
        out.options["scan.newly-added-table.enabled"] = "true"
        out.notes.append(
            "scan.binlog.newly-added-table.enabled: tables created while the stream runs "
            "are captured through scan.newly-added-table.enabled (a new table is "
            "snapshotted, then followed)"
        )


_SNAPSHOT_BACKFILL = (
    "scan.incremental.snapshot.backfill.skip: the snapshot is always merged with the log "
    "as it is read (exactly once); nothing is skipped"
)
_CLOSE_IDLE = (
    "scan.incremental.close-idle-reader.enabled: Spark ends each task after its read; "
    "there are no idle readers to close"
)
_POOL = "connection.pool.size: sparkcdc opens one connection per task and per log reader"
_CHUNK_META = (
    "chunk-meta.group.size: chunk descriptions travel in Spark's partitions, not in "
    "Flink's grouped split state"
)
_UNBOUNDED_FIRST = (
    "scan.incremental.snapshot.unbounded-chunk-first.enabled: chunks are planned by "
    "sparkcdc's own order (docs/snapshot-reader.md)"
)
_SERVER_ZONE_PG = (
    "server-time-zone: timestamp with time zone values are exact instants (UTC) and "
    "timestamp without time zone values are kept as written, whatever the server's zone"
)

#: Debezium properties (``debezium.`` taken off) that mean something here: sparkcdc's option
#: and how each Debezium value reads there (None: any value, as it is).
_DEBEZIUM_SNAPSHOT_MODES = {
    "initial": "initial",
    "initial_only": "snapshot",
    "no_data": "latest-offset",
    "never": "latest-offset",
    "schema_only": "latest-offset",
}


#: Debezium properties accepted with a note (the note says why they are not used).
_DEBEZIUM_NOTED = {
    "snapshot.locking.mode": "the snapshot takes no locks",
    "snapshot.fetch.size": "use scan.snapshot.fetch.size",
    "max.batch.size": "Debezium's queues: a micro-batch is bounded by maxRowsPerTrigger",
    "max.queue.size": "Debezium's queues: a micro-batch is bounded by maxRowsPerTrigger",
    "poll.interval.ms": "Debezium's queues: batches follow pipeline.trigger-interval",
    "tombstones.on.delete": "Kafka tombstones belong to the kafka sink",
    "include.schema.changes": "schema changes follow schema.change.behavior",
}

#: A Debezium property's sparkcdc option and how its values read there (None: as given).
_DebeziumTarget = tuple[str, Mapping[str, str] | None]


def _debezium_mapped(source_type: str) -> dict[str, _DebeziumTarget]:
    """The Debezium properties (``debezium.`` taken off, lower case) with a meaning for
    ``source_type``, each with the sparkcdc option it sets."""
    mapped: dict[str, _DebeziumTarget] = {
        "snapshot.mode": ("scan.startup.mode", _DEBEZIUM_SNAPSHOT_MODES),
        "heartbeat.interval.ms": ("heartbeat.interval", None),
    }
    if source_type == "postgres":
        mapped.update(
            {
                "decimal.handling.mode": (
                    "decimal.handling.mode",
                    {"precise": "precise", "string": "string"},
                ),
                "publication.name": ("publication.name", None),
                "publication.autocreate.mode": (
                    "publication.autocreate.mode",
                    {"filtered": "filtered", "disabled": "disabled"},
                ),
                "slot.name": ("slot.name", None),
                "plugin.name": ("decoding.plugin.name", None),
                "database.sslmode": ("jdbc.properties.sslmode", None),
            }
        )
    else:
        mapped.update(
            {
                "database.ssl.mode": ("jdbc.properties.sslMode", None),
                "database.server.id": ("server-id", None),
            }
        )
    return mapped


def _debezium_value(key: str, value: str, target: _DebeziumTarget) -> str:
    """The value of Debezium property ``key`` in the words of its sparkcdc option."""
    option, values = target
    given = value.strip()
    if values is not None:
        if given.lower() not in values:
            raise OptionError(
                f"option 'debezium.{key}' has invalid value '{value}'; sparkcdc "
                f"reads it as '{option}' and takes {', '.join(values)}"
            )
        return values[given.lower()]
    if key.lower() == "heartbeat.interval.ms":
        return f"{parse_int(0)(given)}ms"
    return given


def _debezium(source_type: str) -> Effect:
    """``debezium.*``: the few Debezium properties with a meaning here are translated; the
    others are refused, naming them (sparkcdc does not embed Debezium)."""
    mapped = _debezium_mapped(source_type)

    def effect(group: Mapping[str, str], out: Translation) -> None:
        for key, value in group.items():
            name = key.lower()
            if name in mapped:
                option = mapped[name][0]
                given = _debezium_value(key, value, mapped[name])
                out.options[option] = given
                out.notes.append(f"debezium.{key}: taken as {option}: {given}")
            elif name in _DEBEZIUM_NOTED:
                out.notes.append(f"debezium.{key}: accepted, not used ({_DEBEZIUM_NOTED[name]})")
            else:
                known = ", ".join(f"debezium.{k}" for k in sorted({*mapped, *_DEBEZIUM_NOTED}))
                raise OptionError(
                    f"option 'debezium.{key}' is not supported: sparkcdc does not run "
                    "Debezium; the Debezium properties it understands are " + known
                )

    return effect


def _spec(name: str, parse: Any = str, default: Any = None, doc: str = "", **kw: Any) -> OptionSpec:
    return OptionSpec(name, parse, default, doc=doc, **kw)


def _source_keys(source_type: str) -> tuple[FlinkKey, ...]:
    """The source block's Flink keys for ``source_type`` (``mysql`` or ``postgres``)."""
    pg = source_type == "postgres"
    own = _postgres_keys() if pg else (*_mysql_start_keys(), *_mysql_schema_keys())
    return (*_shared_keys(pg), _debezium_key(source_type), *own)


def _shared_keys(pg: bool) -> tuple[FlinkKey, ...]:
    """Keys of both Flink CDC sources, but ``debezium.*``; ``pg``: their PostgreSQL defaults."""
    return (
        FlinkKey(
            _spec("name", doc="the source's display name (Flink's); shown by `run` and `validate`"),
            _display_name,
        ),
        FlinkKey(
            _spec(
                "schema-change.enabled",
                parse_bool,
                not pg,
                doc="`false`: column and table changes are not applied to targets, as "
                "`pipeline.schema.change.behavior: ignore` (which it sets when that is not "
                "given); `true`: as `schema.change.behavior` says",
            ),
            _schema_changes,
        ),
        *_machinery_keys(),
        FlinkKey(
            _spec(
                "scan.incremental.snapshot.backfill.skip",
                parse_bool,
                pg,
                doc="accepted with a note when `true`: the snapshot is always merged with the "
                "log (exactly once)",
            ),
            _noted_unless(False, _SNAPSHOT_BACKFILL),
        ),
    )


def _machinery_keys() -> tuple[FlinkKey, ...]:
    """Keys that steer Flink's readers and split state: accepted, noted when not Flink's default."""
    return (
        FlinkKey(
            _spec(
                "scan.incremental.close-idle-reader.enabled",
                parse_bool,
                False,
                doc="accepted with a note: Spark ends each task after its read",
            ),
            _noted_unless(False, _CLOSE_IDLE),
        ),
        FlinkKey(
            _spec("connection.pool.size", parse_int(1), 20, doc="accepted with a note"),
            _noted_unless(20, _POOL),
        ),
        FlinkKey(
            _spec("chunk-meta.group.size", parse_int(1), 1000, doc="accepted with a note"),
            _noted_unless(1000, _CHUNK_META),
        ),
        FlinkKey(
            _spec(
                "scan.incremental.snapshot.unbounded-chunk-first.enabled",
                parse_bool,
                False,
                doc="accepted with a note: sparkcdc plans its chunks' order itself",
            ),
            _noted_unless(False, _UNBOUNDED_FIRST),
        ),
    )


def _debezium_key(source_type: str) -> FlinkKey:
    """``debezium.*``: the properties with a meaning here for ``source_type`` (its documentation
    names them), translated by :func:`_debezium`."""
    pg = source_type == "postgres"
    return FlinkKey(
        _spec(
            "debezium.",
            prefix=True,
            doc="Debezium properties with a meaning here are translated: "
            "`debezium.snapshot.mode` (`initial`; `initial_only` is `snapshot`; "
            "`never`, `no_data`, `schema_only` are `latest-offset`), "
            "`debezium.heartbeat.interval.ms`"
            + (
                ", `debezium.decimal.handling.mode` (`precise`, `string`), "
                "`debezium.publication.name`, `debezium.publication.autocreate.mode`, "
                "`debezium.slot.name`, `debezium.plugin.name`, `debezium.database.sslmode`"
                if pg
                else ", `debezium.database.ssl.mode` (`jdbc.properties.sslMode`), "
                "`debezium.database.server.id`"
            )
            + "; `snapshot.locking.mode`, `snapshot.fetch.size`, `max.batch.size`, "
            "`max.queue.size`, `poll.interval.ms`, `tombstones.on.delete`, "
            "`include.schema.changes` are accepted with a note; any other is refused "
            "(sparkcdc does not run Debezium)",
        ),
        _debezium(source_type),
    )


def _postgres_keys() -> tuple[FlinkKey, ...]:
    """Keys of Flink CDC's PostgreSQL source only."""
    return (
        FlinkKey(
            _spec("server-time-zone", doc="accepted with a note (exact instants)"),
            _note(_SERVER_ZONE_PG),
        ),
        FlinkKey(
            _spec(
                "table-id.include-database",
                parse_bool,
                False,
                doc="`false` only: tables are named `schema.table` in routes, transforms "
                "and targets",
            ),
            _refused_unless(
                False,
                "false; tables are named schema.table here (the database is "
                "__namespace_name__ in transforms)",
            ),
        ),
    )


def _mysql_start_keys() -> tuple[FlinkKey, ...]:
    """Keys of Flink CDC's MySQL source about where and what it starts reading."""
    return (
        FlinkKey(
            _spec(
                "scan.startup.specific-offset.skip-events",
                parse_int(0),
                None,
                doc="0 only: give the position after the events to skip",
            ),
            _skip_count,
        ),
        FlinkKey(
            _spec(
                "scan.startup.specific-offset.skip-rows",
                parse_int(0),
                None,
                doc="0 only: give the position after the rows to skip",
            ),
            _skip_count,
        ),
        FlinkKey(
            _spec(
                "scan.binlog.newly-added-table.enabled",
                parse_bool,
                False,
                doc="`true` sets `scan.newly-added-table.enabled`, which also captures "
                "tables created while the stream runs",
            ),
            _newly_added_in_log,
        ),
    )


def _mysql_schema_keys() -> tuple[FlinkKey, ...]:
    """Keys of Flink CDC's MySQL source about how tables and their types are read."""
    return (
        FlinkKey(
            _spec(
                "scan.parse.online.schema.changes.enabled",
                parse_bool,
                False,
                doc="`false` only: gh-ost / pt-osc shadow-table migrations are not followed "
                "as schema changes",
            ),
            _refused_unless(
                False,
                "false; gh-ost / pt-online-schema-change migrations are not recognised (their "
                "final RENAME TABLE of the shadow table is followed as a table change)",
            ),
        ),
        FlinkKey(
            _spec(
                "use.legacy.json.format",
                parse_bool,
                True,
                doc="accepted: JSON columns are strings in sparkcdc's one JSON text form",
            ),
            _quiet,
        ),
    )


def _zone(text: str) -> str:
    name = text.strip()
    if name.lower() == "systemdefault":
        return ""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            "an IANA time zone such as UTC or Asia/Shanghai, or systemDefault"
        ) from None
    return name


def _local_time_zone(value: str, out: Translation) -> None:
    if value:
        out.spark_conf[SESSION_TIME_ZONE] = value


def _runtime_mode(value: str, out: Translation) -> None:
    out.batch = value == "batch"


def _route_mode(value: str, out: Translation) -> None:
    out.first_match_routes = value == "first_match"


_PIPELINE_NOTE = "{}: steers Flink's operators; nothing to set in Spark"

PIPELINE_KEYS: tuple[FlinkKey, ...] = (
    FlinkKey(
        _spec(
            "local-time-zone",
            _zone,
            "",
            doc="Spark's session time zone (`spark.sql.session.timeZone`): what transform "
            "expressions such as `current_timestamp` or `date_format` use; `systemDefault`: "
            "Spark's default",
            default_doc="`systemDefault`",
        ),
        _local_time_zone,
    ),
    FlinkKey(
        _spec(
            "execution.runtime-mode",
            choices=("streaming", "batch"),
            default="streaming",
            doc="`BATCH` (with the source's `scan.startup.mode: snapshot`, as Flink CDC "
            "requires): copy the tables once and stop, as `trigger-interval: available-now`",
            default_doc="`STREAMING`",
        ),
        _runtime_mode,
    ),
    FlinkKey(
        _spec(
            "route-mode",
            choices=("all_match", "first_match"),
            default="all_match",
            doc="`FIRST_MATCH`: a table goes to the first route that matches it; `ALL_MATCH` "
            "(Flink copies a table to every route it matches): a table matching two routes "
            "is refused (not done yet)",
            default_doc="`ALL_MATCH`",
        ),
        _route_mode,
    ),
    *(
        FlinkKey(
            _spec(name, doc="accepted with a note: Flink's operators"),
            _note(_PIPELINE_NOTE.format(name)),
        )
        for name in (
            "operator.uid.prefix",
            "schema.operator.uid",
            "schema-operator.rpc-timeout",
            "sink.partitioning.strategy",
        )
    ),
    FlinkKey(
        _spec(
            "transform.decimal.precision.mode",
            choices=("up_to_19", "up_to_38"),
            default="up_to_19",
            doc="accepted: transform expressions are Spark SQL, whose decimals go up to 38 digits",
            default_doc="`UP_TO_19`",
        ),
        _quiet,
    ),
)

#: Keys of the ``pipeline`` block that sparkcdc refuses, with the reason.
PIPELINE_REFUSED = {
    "user-defined-function": "Flink UDF classes cannot run in Spark; transform expressions "
    "are Spark SQL: use Spark's built-in functions (a Spark SQL function of your own "
    "needs a session of your own: docs/pipelines.md)",
    "model": "Flink CDC's AI model functions have no counterpart here",
}
#: Keys of a ``transform`` rule that are Flink CDC's and not applied here.
TRANSFORM_KEYS = ("table-options", "table-options.delimiter", "converter-after-transform")


def specs(keys: tuple[FlinkKey, ...]) -> tuple[OptionSpec, ...]:
    return tuple(k.spec for k in keys)


def source_keys(source_type: str) -> tuple[FlinkKey, ...]:
    return _source_keys(source_type)


def translate(
    raw: Mapping[str, str], keys: tuple[FlinkKey, ...], context: str
) -> tuple[dict[str, str], Translation]:
    """Split ``raw`` into the block's own options and the Flink ``keys`` among them; the
    Flink keys are parsed by their specs and applied (translated, noted or refused).
    Returns the block's own options with the translated ones added (an option the file
    gives itself wins over one translated from a Flink key only where they agree)."""
    names = {k.spec.name.lower() for k in keys if not k.spec.prefix}
    prefixes = [k.spec.name for k in keys if k.spec.prefix]
    own: dict[str, str] = {}
    flink: dict[str, str] = {}
    for name, text in raw.items():
        lowered = name.lower()
        is_flink = lowered in names or any(lowered.startswith(p) for p in prefixes)
        (flink if is_flink else own)[name] = text
    out = Translation()
    if not flink:
        return own, out
    parsed = parse_options(flink, specs(keys), context=context)
    for key in keys:
        _apply(key, parsed, flink, out, context)
    lowered_own = {k.lower(): v for k, v in own.items()}
    for option, value in out.options.items():
        mine = lowered_own.get(option.lower())
        if mine is not None and mine.strip().lower() != value.strip().lower():
            raise OptionError(
                f"{context}: option '{option}' is '{mine}' but a Flink CDC key says '{value}' "
                "(see the notes); give one of them"
            )
        if mine is None:
            own[option] = value
    return own, out


def _apply(
    key: FlinkKey, parsed: Options, flink: Mapping[str, str], out: Translation, context: str
) -> None:
    """Apply one Flink key if the block gives it; a refusal names the key and its value."""
    spec = key.spec
    value: Any
    if spec.prefix:
        value = parsed.groups.get(spec.name, {})
        if not value:
            return
    elif any(k.lower() == spec.name.lower() for k in flink):
        value = parsed.values[spec.name]
    else:
        return
    try:
        key.effect(value, out)
    except ValueError as exc:
        raise OptionError(
            f"{context}: option '{spec.name}' has invalid value '{_given(flink, spec)}'; "
            f"expected {exc}"
        ) from None


def _given(flink: Mapping[str, str], spec: OptionSpec) -> str:
    return next((v for k, v in flink.items() if k.lower() == spec.name.lower()), "")


def postgres_tables(raw: dict[str, str]) -> list[str]:
    """Flink CDC's PostgreSQL ``tables`` are ``database.schema.table``; sparkcdc's are
    ``schema.table`` with ``database-name`` apart. When the file gives no ``database-name``
    and every pattern has three parts naming one database, the database moves to
    ``database-name`` (in ``raw``); returns a note, or nothing when there was nothing to do."""
    if any(k.lower() == "database-name" for k in raw):
        return []
    notes = []
    for option in ("tables", "tables.exclude"):
        key = next((k for k in raw if k.lower() == option), None)
        if key is None:
            continue
        parts = [_split(item) for item in _items(raw[key])]
        if not parts or any(len(p) != 3 for p in parts):
            continue
        databases = {p[0] for p in parts}
        if len(databases) != 1 or not re.fullmatch(r"[\w$]+", next(iter(databases))):
            raise OptionError(
                f"postgres: option '{option}': Flink CDC's database.schema.table patterns must "
                f"all name one database by its plain name (found {', '.join(sorted(databases))}); "
                "or give database-name and schema.table patterns"
            )
        (database,) = databases
        if option == "tables":
            raw["database-name"] = database
            notes.append(f"tables: database '{database}' taken as database-name")
        elif raw.get("database-name", database) != database:
            raise OptionError(
                f"postgres: option 'tables.exclude' names database '{database}', not the "
                "captured one"
            )
        raw[key] = ", ".join(".".join(p[1:]) for p in parts)
    return notes


def _items(text: str) -> list[str]:
    """Comma-separated patterns; commas inside brackets belong to a pattern."""
    items, depth, current, escaped = [], 0, "", False
    for char in text:
        if escaped:
            current, escaped = current + char, False
            continue
        escaped = char == "\\"
        depth += 1 if char in "{[(" else -1 if char in "}])" and depth else 0
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    items.append(current.strip())
    return [i for i in items if i]


def _split(item: str) -> list[str]:
    """A pattern's parts at its unescaped dots (``\\.`` stays in its part)."""
    return re.findall(r"(?:[^.\\]|\\.)+", item)


__all__ = [
    "PIPELINE_KEYS",
    "PIPELINE_REFUSED",
    "TRANSFORM_KEYS",
    "FlinkKey",
    "Translation",
    "postgres_tables",
    "source_keys",
    "specs",
    "translate",
]

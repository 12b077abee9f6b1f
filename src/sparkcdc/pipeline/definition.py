"""A pipeline file, validated: ``source`` / ``sink`` / ``pipeline`` blocks.

Validation is offline (no connection is opened): every key is checked against the
source's and the sink's option specs, and a problem is reported with the file, the line
and the key. The source options are those of the source type's connector (Flink CDC names,
connectors/registry.py); the pipeline block holds what belongs to the Spark query.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparkcdc.connectors.connector import Connector
from sparkcdc.connectors.registry import SOURCE_TYPES, connector
from sparkcdc.core.errors import OptionError
from sparkcdc.core.folders import is_uri
from sparkcdc.core.options import OptionSpec, parse_duration, parse_int, parse_options
from sparkcdc.core.secret import SecretSettings
from sparkcdc.pipeline.before_images import (
    refuse_missing_before_images,
    refuse_transforms_needing_old_rows,
)
from sparkcdc.pipeline.change_types import LIST_OPTIONS, excluded_types, without_change_options
from sparkcdc.pipeline.evolution import BEHAVIORS
from sparkcdc.pipeline.options_flink import (
    PIPELINE_KEYS,
    PIPELINE_REFUSED,
    Translation,
    postgres_tables,
    source_keys,
    translate,
)
from sparkcdc.pipeline.rules import RouteRule, TransformRule, load_routes, load_transforms
from sparkcdc.pipeline.yaml_file import PipelineFileError, YamlDocument, load_yaml
from sparkcdc.sinks.registry import SINK_TYPES, sink_capabilities, validate_sink_options
from sparkcdc.snapshot.options import PAUSE_FILE, TRUNCATE_HANDLING

BLOCKS = ("source", "sink", "pipeline")
#: Optional blocks: lists of rules (pipeline/rules.py).
RULE_BLOCKS = ("transform", "route")
AVAILABLE_NOW = "available-now"

PIPELINE_SPECS = (
    OptionSpec(
        "name",
        default="sparkcdc-pipeline",
        doc="Spark's application and query name; with the checkpoint's query id, the "
        "pipeline identity sinks key their writes by",
    ),
    OptionSpec(
        "checkpoint",
        default=None,
        default_doc="a folder of the pipeline's own under `$SPARKCDC_STATE_DIR` (by "
        "default `~/.local/state/sparkcdc`)",
        doc="directory of Spark's checkpoint, the pipeline's only state (relative paths are "
        "relative to the pipeline file). Without it (Flink CDC's files have none), each "
        "pipeline file gets a folder named after its `name` and its path, printed by "
        "`validate` and `run`",
    ),
    OptionSpec(
        "trigger-interval",
        default="1s",
        doc="time between micro-batches (`500ms`, `30s`, `5min`, `1h`), or "
        f"`{AVAILABLE_NOW}` (finish the snapshot, catch up to the log, stop)",
    ),
    OptionSpec("parallelism", parse_int(1), 2, doc="Spark `local[N]`"),
    OptionSpec(
        "max-rows-per-trigger",
        parse_int(1),
        None,
        default_doc="unlimited",
        doc="the source's `maxRowsPerTrigger`",
    ),
    OptionSpec(
        "schema.change.behavior",
        choices=BEHAVIORS,
        default="lenient",
        doc="what a change of a source table's columns does to its target (Flink CDC's "
        "names; docs/schema-evolution.md): `lenient` adds new columns and keeps dropped "
        "ones, `evolve` mirrors the table (adds, drops, renames), `try_evolve` too but goes "
        "on as `ignore` where the target refuses, `ignore` keeps the target as it is, "
        "`exception` stops the pipeline",
    ),
    OptionSpec(
        "spark-conf.",
        prefix=True,
        doc="Spark settings, as a mapping under `spark-conf` "
        "(`spark-conf: {spark.sql.shuffle.partitions: 4}`)",
    ),
)


@dataclass(frozen=True)
class PipelineSettings:
    name: str
    checkpoint: Path
    #: Seconds between micro-batches, or None for ``available-now`` (process what is there, stop).
    trigger_seconds: float | None
    parallelism: int
    max_rows_per_trigger: int | None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    #: ``schema.change.behavior`` (pipeline/evolution.py).
    schema_change_behavior: str = "lenient"
    #: Flink CDC's ``route-mode: FIRST_MATCH``: a table takes the first route matching it.
    first_match_routes: bool = False


@dataclass(frozen=True)
class PipelineDefinition:
    """Everything ``sparkcdc run`` needs, validated."""

    path: Path
    source_type: str
    #: The source's options as strings, ready for ``spark.readStream.options(...)``
    #: (:class:`SecretSettings`: a repr masks the password).
    source_options: Mapping[str, str]
    #: The connector's validated config (its engine-neutral part: snapshot/dialect.py).
    source_config: Any
    sink_type: str
    #: Sink options as given (values as strings), validated by the sink type
    #: (:class:`SecretSettings`: a repr masks secrets such as ``storage-options.*`` keys,
    #: ``properties.sasl.jaas.config`` or a JDBC ``password``).
    sink_options: Mapping[str, str]
    settings: PipelineSettings
    transforms: tuple[TransformRule, ...] = ()
    routes: tuple[RouteRule, ...] = ()
    #: Schema change types the sink block's ``include.schema.changes`` /
    #: ``exclude.schema.changes`` keep from the targets (pipeline/change_types.py).
    excluded_changes: frozenset[str] = frozenset()
    #: What the file's Flink CDC keys amount to, one line each, for ``validate`` and ``run``
    #: to show (pipeline/options_flink.py).
    notes: tuple[str, ...] = ()
    #: The source and sink blocks' ``name`` (Flink CDC's display names), if given.
    source_name: str | None = None
    sink_name: str | None = None

    @property
    def connector(self) -> Connector[Any]:
        """The source type's connector: its Spark format and how to build the source."""
        return connector(self.source_type)

    @property
    def namespace(self) -> str | None:
        """What transforms see as ``__namespace_name__``."""
        return self.connector.namespace(self.source_config)

    @property
    def signal_file(self) -> Path:
        """The file the running pipeline reads signals from (``sparkcdc snapshot`` appends
        to it): the source's ``signal.file`` (relative to the pipeline file), by default
        ``signals.jsonl`` in the checkpoint folder, so a new checkpoint starts without
        the old signals."""
        given = self.source_options.get("signal.file")
        if not given:
            return self.settings.checkpoint / "signals.jsonl"
        path = Path(given)
        return path if path.is_absolute() else (self.path.parent / path).resolve()

    @property
    def pause_file(self) -> Path:
        """The source's ``pause.file``: the runner makes it at a stop, so the query is left
        idle between batches before it is stopped (pipeline/runner.py)."""
        return self.settings.checkpoint / "pause"

    def stream_options(self) -> dict[str, str]:
        """Options for the connector's Spark format, including the pipeline's read limit
        and signal file. Truncates pass the stream (``truncate.handling.mode: skip``) unless
        the source block says otherwise: the runner applies them as
        ``schema.change.behavior`` says (pipeline/applier.py)."""
        options = dict(self.source_options)
        if self.settings.max_rows_per_trigger is not None:
            options["maxRowsPerTrigger"] = str(self.settings.max_rows_per_trigger)
        options["signal.file"] = str(self.signal_file)
        options[PAUSE_FILE.name] = str(self.pause_file)
        given = {k.lower() for k in options}
        if TRUNCATE_HANDLING.name not in given and TRUNCATE_HANDLING in self.connector.specs:
            options[TRUNCATE_HANDLING.name] = "skip"
        return options


def load_pipeline(path: str | Path) -> PipelineDefinition:
    """Load and validate a pipeline file (no connections are opened)."""
    doc = load_yaml(path)
    _check_blocks(doc)
    source = _strings(doc, "source")
    source_type = _type(doc, "source", source, SOURCE_TYPES)
    found = connector(source_type)
    notes = []
    if source_type == "postgres":
        notes += _checked(doc, "source", lambda: postgres_tables(source))
    keys = source_keys(source_type)
    source_options, flink = _checked(doc, "source", lambda: translate(source, keys, source_type))
    parse = found.parse_config
    source_config = _checked(doc, "source", lambda: parse(source_options))
    notes += [f"tables: {hint}" for hint in source_config.tables.hints]
    sink = _strings(doc, "sink")
    sink_name = _pop(sink, "name")
    flink_values = str(sink.get("type", "")).lower() == "values"
    sink_type = _type(doc, "sink", sink, SINK_TYPES)
    if flink_values:
        notes.append("sink type values (Flink CDC's test sink): the console sink prints the rows")
    excluded = _checked(doc, "sink", lambda: excluded_types(sink))
    sink = without_change_options(sink)
    _checked(doc, "sink", lambda: validate_sink_options(sink_type, sink))
    _checked(doc, "source", lambda: refuse_missing_before_images(source_config, sink_type, sink))
    keeps_comments = sink_capabilities(sink_type, sink).keeps_comments
    if getattr(source_config, "include_comments", False) and not keeps_comments:
        notes.append(
            f"include-comments.enabled: the {sink_type} sink's targets take no comments; "
            "they are left out"
        )
    settings, pipeline_notes = _settings(doc, flink, source_options)
    transforms = load_transforms(doc)
    refuse_transforms_needing_old_rows(source_config, transforms)
    for rule in transforms:
        if rule.table_options:
            pipeline_notes.append(
                f"{rule.where}: table-options "
                f"{', '.join(f'{k}={v}' for k, v in rule.table_options)}: not applied, "
                "targets are created without table options (not done yet)"
            )
    return PipelineDefinition(
        path=doc.path,
        source_type=source_type,
        source_options=SecretSettings(source_options),
        source_config=source_config,
        sink_type=sink_type,
        sink_options=SecretSettings(sink),
        settings=settings,
        excluded_changes=excluded,
        transforms=transforms,
        routes=load_routes(doc, first_match=settings.first_match_routes),
        notes=tuple(notes + flink.notes + pipeline_notes),
        source_name=flink.name,
        sink_name=sink_name,
    )


def _check_blocks(doc: YamlDocument) -> None:
    """The file's blocks are the known ones, each a mapping (a missing ``pipeline`` block is
    added empty, as Flink CDC allows); Flink keys sparkcdc cannot run are refused first."""
    data = doc.data
    if isinstance(data.get("pipeline"), dict):
        for key, reason in PIPELINE_REFUSED.items():
            if key in data["pipeline"]:
                raise doc.error(f"pipeline.{key}", f"is not supported: {reason}")
    unknown = [k for k in data if k not in BLOCKS + RULE_BLOCKS]
    if unknown:
        raise doc.error(
            str(unknown[0]),
            f"unknown block; a pipeline file has {', '.join(BLOCKS)} "
            f"(and optionally {', '.join(RULE_BLOCKS)})",
        )
    if "pipeline" not in data:  # Flink CDC's files may leave it out: every key has a default
        data["pipeline"] = {}
    for block in BLOCKS:
        if not isinstance(data.get(block), dict):
            what = "is missing" if block not in data else "must be a mapping of keys to values"
            raise doc.error(block, f"the '{block}' block {what}")


def _pop(options: dict[str, str], name: str) -> str | None:
    """Take ``name`` out of ``options`` (any case)."""
    key = next((k for k in options if k.lower() == name), None)
    return None if key is None else options.pop(key)


def _strings(doc: YamlDocument, block: str) -> dict[str, str]:
    """A block's values as option strings (YAML gives ints and bools; nested maps become
    ``prefix.key`` options, the way Flink CDC writes ``jdbc.properties.*``)."""
    flat: dict[str, str] = {}

    def walk(value: Mapping[str, Any], prefix: str) -> None:
        for key, item in value.items():
            name = f"{prefix}{key}"
            if isinstance(item, dict):
                walk(item, name + ".")
            elif isinstance(item, list) and name.lower() in LIST_OPTIONS:
                flat[name] = ",".join(str(i) for i in item)
            elif isinstance(item, list):
                raise doc.error(f"{block}.{name}", "a list is not a valid value here")
            elif item is None:
                raise doc.error(f"{block}.{name}", "has no value")
            elif isinstance(item, bool):
                flat[name] = "true" if item else "false"
            else:
                flat[name] = str(item)

    walk(doc.data[block], "")
    return flat


def _type(doc: YamlDocument, block: str, options: dict[str, str], valid: tuple[str, ...]) -> str:
    kind = options.pop("type", None)
    if kind is None:
        raise doc.error(f"{block}.type", f"is required; valid values: {', '.join(valid)}")
    if block == "sink" and kind.lower() == "values":  # Flink CDC's test sink: printed
        options.clear()
        return "console"
    if kind.lower() not in valid:
        hint = FLINK_SINKS.get(kind.lower(), "")
        raise doc.error(
            f"{block}.type",
            f"invalid value '{kind}'; valid values: {', '.join(valid)}"
            + (f". '{kind}' is a Flink CDC sink; {hint}" if hint else ""),
        )
    return kind.lower()


#: Flink CDC's pipeline sinks, with what takes their place here.
_LAKE = "write the tables to Delta instead (type: delta, path: ...; docs/sinks-delta.md)"
_MYSQL_WIRE = (
    "it speaks MySQL's protocol, so type: jdbc with a mysql:// url may write to it "
    "(docs/sinks-jdbc.md; untested), or use Delta"
)
FLINK_SINKS = {
    "doris": _MYSQL_WIRE,
    "starrocks": _MYSQL_WIRE,
    "oceanbase": _MYSQL_WIRE,
    "paimon": _LAKE,
    "iceberg": _LAKE,
    "hudi": _LAKE,
    "fluss": _LAKE,
    "maxcompute": _LAKE,
    "elasticsearch": "no Elasticsearch sink here; the kafka sink can feed one",
}


def _checked(doc: YamlDocument, block: str, parse: Callable[[], Any]) -> Any:
    """Run a validator; point its OptionError at the offending key's line."""
    try:
        return parse()
    except OptionError as exc:
        message = str(exc)
        named = re.search(r"option '([^']+)'", message)
        key = f"{block}.{named.group(1)}" if named else block
        if named and key not in doc.lines:  # keys are matched case-insensitively
            lowered = {k.lower(): k for k in doc.lines}
            key = lowered.get(key.lower(), key)
        raise doc.error(key, message) from None


def _settings(
    doc: YamlDocument, source: Translation, source_options: Mapping[str, str]
) -> tuple[PipelineSettings, list[str]]:
    """The pipeline block, with the Flink CDC keys of the pipeline and source blocks that
    act on it (``local-time-zone``, ``execution.runtime-mode``, ``schema-change.enabled``)."""
    given = _strings(doc, "pipeline")
    raw, flink = _checked(doc, "pipeline", lambda: translate(given, PIPELINE_KEYS, "pipeline"))
    opts = _checked(doc, "pipeline", lambda: parse_options(raw, PIPELINE_SPECS, context="pipeline"))
    notes = list(flink.notes)
    trigger = str(opts["trigger-interval"]).strip().lower()
    if flink.batch:
        mode = {k.lower(): v for k, v in source_options.items()}.get("scan.startup.mode")
        if (mode or "").strip().lower() != "snapshot":
            raise doc.error(
                "pipeline.execution.runtime-mode",
                "BATCH needs the source's scan.startup.mode: snapshot (as in Flink CDC): a "
                "batch run copies the tables once",
            )
        trigger = AVAILABLE_NOW
    if trigger == AVAILABLE_NOW:
        seconds = None
    else:
        try:
            seconds = parse_duration(trigger)
        except ValueError as exc:
            raise doc.error(
                "pipeline.trigger-interval",
                f"invalid value '{trigger}'; expected {exc} or '{AVAILABLE_NOW}'",
            ) from None
    behavior = opts["schema.change.behavior"]
    if source.schema_changes is False and behavior != "ignore":
        notes.append(
            f"schema-change.enabled: false: schema changes are not applied to targets "
            f"(schema.change.behavior ignore instead of {behavior})"
        )
        behavior = "ignore"
    spark_conf = dict(opts.groups.get("spark-conf.", {}))
    for name, value in flink.spark_conf.items():
        if spark_conf.get(name, value) != value:
            raise doc.error(
                "pipeline.local-time-zone",
                f"is '{value}' but spark-conf sets {name} to '{spark_conf[name]}'; give one",
            )
        spark_conf[name] = value
    if opts["checkpoint"] is None:
        checkpoint = default_checkpoint(opts["name"], doc.path)
        return _built(opts, checkpoint, seconds, spark_conf, behavior, flink), notes
    if is_uri(opts["checkpoint"]):
        raise doc.error(
            "pipeline.checkpoint",
            f"'{opts['checkpoint']}' is a URI; the checkpoint is a local folder of the machine "
            "that runs sparkcdc run (Spark's driver writes it; sparkcdc status and verify "
            "read it there): give a local path on durable disk",
        )
    checkpoint = Path(opts["checkpoint"])
    if not checkpoint.is_absolute():  # relative to the pipeline file, not the shell
        checkpoint = (doc.path.parent / checkpoint).resolve()
    return _built(opts, checkpoint, seconds, spark_conf, behavior, flink), notes


def _built(
    opts: Any,
    checkpoint: Path,
    seconds: float | None,
    spark_conf: Mapping[str, str],
    behavior: str,
    flink: Translation,
) -> PipelineSettings:
    return PipelineSettings(
        name=opts["name"],
        checkpoint=checkpoint,
        trigger_seconds=seconds,
        parallelism=opts["parallelism"],
        max_rows_per_trigger=opts["max-rows-per-trigger"],
        spark_conf=spark_conf,
        schema_change_behavior=behavior,
        first_match_routes=flink.first_match_routes,
    )


#: Where pipelines without ``checkpoint`` keep their state (else ``~/.local/state/sparkcdc``).
STATE_DIR_VARIABLE = "SPARKCDC_STATE_DIR"


def default_checkpoint(name: str, file: Path) -> Path:
    """The checkpoint of a pipeline file that names none (Flink CDC's files: Flink keeps
    state in its cluster's checkpoint storage): a folder under ``$SPARKCDC_STATE_DIR``
    (``$XDG_STATE_HOME/sparkcdc``, ``~/.local/state/sparkcdc``) named after the pipeline's
    ``name`` and the file's absolute path, so two files never share one and running the
    same file again resumes. Never beside the file: an example in a checkout stays clean."""
    base = os.environ.get(STATE_DIR_VARIABLE)
    if not base:
        xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        base = str(Path(xdg) / "sparkcdc")
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "pipeline"
    digest = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:10]
    return Path(base).expanduser().resolve() / "pipelines" / f"{slug}-{digest}"


__all__ = ["PipelineDefinition", "PipelineFileError", "PipelineSettings", "load_pipeline"]

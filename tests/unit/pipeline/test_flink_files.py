"""Flink CDC pipeline files run as they are: its documented examples load, and each of its
keys that is not a sparkcdc option is translated, accepted with a note, or refused with
the reason (pipeline/options_flink.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from sparkcdc.pipeline.definition import PipelineDefinition, load_pipeline
from sparkcdc.pipeline.yaml_file import PipelineFileError

EXAMPLES = Path(__file__).resolve().parents[2] / "data" / "flink_cdc"
#: Examples that cannot load with any sink, and the key whose refusal says why.
REFUSED = {
    "data-pipeline-with-optional.yaml": "'pipeline.user-defined-function': is not supported",
}
#: Sink types of the examples that sparkcdc has (the others are Flink CDC's own).
RUNNABLE_SINKS = {"kafka", "values"}

BASE = """\
source:
  type: mysql
  hostname: 127.0.0.1
  username: cdc
  tables: app_db.\\.*
sink:
  type: console
pipeline:
  name: flink file
"""


def examples() -> list[Path]:
    found = sorted(EXAMPLES.glob("*.yaml"))
    assert len(found) >= 20, "the Flink CDC examples are missing"
    return found


def load(tmp_path: Path, text: str, name: str = "pipeline.yaml") -> PipelineDefinition:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return load_pipeline(path)


def refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(PipelineFileError) as info:
        load(tmp_path, text)
    return str(info.value)


@pytest.mark.parametrize("example", examples(), ids=lambda p: p.stem)
def test_each_documented_example_loads_as_written(example: Path, tmp_path: Path) -> None:
    """As written: it loads when its sink is one of sparkcdc's; a Flink CDC sink is refused
    naming it and what to use instead."""
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    sink = str(data["sink"]["type"]).lower()
    if sink in RUNNABLE_SINKS and example.name not in REFUSED:
        definition = load_pipeline(example)
        assert definition.sink_type in ("kafka", "console")
        return
    with pytest.raises(PipelineFileError) as info:
        load_pipeline(example)
    message = str(info.value)
    flink_sink = f"'sink.type': invalid value '{data['sink']['type']}'"
    if flink_sink in message:
        assert "is a Flink CDC sink" in message
    else:
        assert REFUSED[example.name] in message


@pytest.mark.parametrize(
    "example", [e for e in examples() if e.name not in REFUSED], ids=lambda p: p.stem
)
def test_each_documented_example_loads_with_a_sparkcdc_sink(example: Path, tmp_path: Path) -> None:
    """The source, pipeline, transform and route blocks as written, the sink replaced."""
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    data["sink"] = {"type": "delta", "path": str(tmp_path / "lake")}
    definition = load(tmp_path, yaml.safe_dump(data), example.name)
    assert definition.settings.checkpoint.parent.name == "pipelines"  # not beside the file
    assert not str(definition.settings.checkpoint).startswith(str(tmp_path))
    given = data.get("pipeline", {}).get("name")
    if given:
        slug = re.sub(r"[^a-z0-9]+", "-", given.lower()).strip("-")
        assert definition.settings.checkpoint.name.startswith(slug)


def test_postgres_database_schema_table_patterns(tmp_path: Path) -> None:
    data = yaml.safe_load((EXAMPLES / "postgres-to-fluss.yaml").read_text(encoding="utf-8"))
    data["sink"] = {"type": "console"}
    definition = load(tmp_path, yaml.safe_dump(data))
    assert definition.source_options["database-name"] == "adb"
    assert definition.source_config.matches("public", "orders")
    assert "tables: database 'adb' taken as database-name" in definition.notes
    data["source"]["tables"] = "adb.public.a, other.public.b"
    with pytest.raises(PipelineFileError, match="must all name one database"):
        load(tmp_path, yaml.safe_dump(data))


def test_tables_exclude_leaves_tables_out(tmp_path: Path) -> None:
    text = BASE.replace(
        "  tables: app_db.\\.*", "  tables: app_db.\\.*\n  tables.exclude: app_db.audit_\\.*"
    )
    config = load(tmp_path, text).source_config
    assert config.matches("app_db", "orders")
    assert not config.matches("app_db", "audit_log")
    assert "tables.exclude" in config.tables.label


def test_schema_change_disabled_is_ignore(tmp_path: Path) -> None:
    text = BASE.replace("  type: mysql", "  type: mysql\n  schema-change.enabled: false")
    definition = load(tmp_path, text)
    assert definition.settings.schema_change_behavior == "ignore"
    assert any("schema-change.enabled: false" in n for n in definition.notes)
    assert "schema-change.enabled" not in definition.source_options
    enabled = load(tmp_path, text.replace("enabled: false", "enabled: true"))
    assert enabled.settings.schema_change_behavior == "lenient" and not enabled.notes


def test_local_time_zone_and_batch_mode(tmp_path: Path) -> None:
    text = BASE + "  local-time-zone: Asia/Shanghai\n"
    settings = load(tmp_path, text).settings
    assert settings.spark_conf["spark.sql.session.timeZone"] == "Asia/Shanghai"
    assert (
        "spark.sql.session.timeZone"
        not in load(tmp_path, BASE + "  local-time-zone: systemDefault\n").settings.spark_conf
    )
    assert "IANA time zone" in refusal(tmp_path, BASE + "  local-time-zone: Mars/Olympus\n")
    clash = text + "  spark-conf:\n    spark.sql.session.timeZone: UTC\n"
    assert "spark-conf sets spark.sql.session.timeZone" in refusal(tmp_path, clash)
    batch = BASE + "  execution.runtime-mode: BATCH\n"
    assert "needs the source's scan.startup.mode: snapshot" in refusal(tmp_path, batch)
    snapshot = batch.replace("  type: mysql", "  type: mysql\n  scan.startup.mode: snapshot")
    assert load(tmp_path, snapshot).settings.trigger_seconds is None
    streaming = BASE + "  execution.runtime-mode: STREAMING\n"
    assert load(tmp_path, streaming).settings.trigger_seconds == 1.0


def test_flink_machinery_keys_are_accepted_with_a_note(tmp_path: Path) -> None:
    text = BASE.replace(
        "  type: mysql",
        "  type: mysql\n  name: MySQL Source\n  scan.incremental.close-idle-reader.enabled: true"
        "\n  connection.pool.size: 5\n  use.legacy.json.format: false",
    ).replace("  type: console", "  type: console\n  name: Console Sink")
    text += "  operator.uid.prefix: cdc\n  parallelism: 4\n"
    definition = load(tmp_path, text)
    assert definition.source_name == "MySQL Source" and definition.sink_name == "Console Sink"
    notes = "\n".join(definition.notes)
    assert "close-idle-reader" in notes and "connection.pool.size" in notes
    assert "operator.uid.prefix" in notes
    assert len(definition.notes) == 3  # one line each; use.legacy.json.format is silent
    for key in ("name", "connection.pool.size", "scan.incremental.close-idle-reader.enabled"):
        assert key not in definition.source_options  # the Spark source gets its own options
    assert definition.settings.parallelism == 4


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("scan.parse.online.schema.changes.enabled: true", "gh-ost"),
        ("scan.startup.specific-offset.skip-events: 3", "skipping events or rows"),
        ("debezium.skipped.operations: d", "sparkcdc does not run Debezium"),
        ("debezium.snapshot.mode: when_needed", "invalid value 'when_needed'"),
        ("connection.pool.size: none", "'source.connection.pool.size'.*an integer"),
    ],
)
def test_what_sparkcdc_does_not_do_is_refused_with_the_reason(
    tmp_path: Path, line: str, expected: str
) -> None:
    message = refusal(tmp_path, BASE.replace("  type: mysql", f"  type: mysql\n  {line}"))
    key = line.split(":")[0]
    assert f"'source.{key}'" in message or "source" in message.split(": ")[1], message
    assert re.search(expected, message), message


def test_debezium_properties_with_a_meaning_are_translated(tmp_path: Path) -> None:
    text = BASE.replace(
        "  type: mysql",
        "  type: mysql\n  debezium.snapshot.mode: never\n  debezium.max.batch.size: 100",
    )
    definition = load(tmp_path, text)
    assert definition.source_options["scan.startup.mode"] == "latest-offset"
    assert definition.source_config.startup_mode == "latest-offset"
    assert not any(k.startswith("debezium.") for k in definition.source_options)
    notes = "\n".join(definition.notes)
    assert "taken as scan.startup.mode: latest-offset" in notes
    assert "debezium.max.batch.size: accepted, not used" in notes
    clash = text.replace("  type: mysql", "  type: mysql\n  scan.startup.mode: initial")
    assert "give one of them" in refusal(tmp_path, clash)


def test_route_mode_first_match_and_transform_table_options(tmp_path: Path) -> None:
    text = (
        BASE
        + "  route-mode: FIRST_MATCH\n"
        + "route:\n  - source-table: app_db.\\.*\n    sink-table: ods.all\n"
        + "transform:\n  - source-table: app_db.orders\n    table-options: a=1;b=x,y\n"
        + "    table-options.delimiter: ';'\n"
    )
    definition = load(tmp_path, text)
    assert all(rule.first_match for rule in definition.routes)
    assert definition.transforms[0].table_options == (("a", "1"), ("b", "x,y"))
    assert any("table-options a=1, b=x,y: not applied" in n for n in definition.notes)
    converter = text + "    converter-after-transform: SOFT_DELETE\n"
    assert "converters" in refusal(tmp_path, converter)


def test_default_checkpoint_is_per_file_and_outside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARKCDC_STATE_DIR", str(tmp_path / "state"))
    first = load(tmp_path, BASE).settings.checkpoint
    assert first == load(tmp_path, BASE).settings.checkpoint  # running it again resumes
    assert first.parent == (tmp_path / "state" / "pipelines").resolve()
    (tmp_path / "other").mkdir()
    other = load(tmp_path / "other", BASE).settings.checkpoint
    assert other != first and other.parent == first.parent


def test_a_missing_pipeline_block_takes_the_defaults(tmp_path: Path) -> None:
    text = BASE.split("pipeline:")[0]
    settings = load(tmp_path, text).settings
    assert settings.name == "sparkcdc-pipeline" and settings.trigger_seconds == 1.0


def test_treat_tinyint1_as_boolean_is_the_sources_own_option(tmp_path: Path) -> None:
    """Flink CDC's key is sparkcdc's MySQL option of the same name: it reaches the
    source (docs/mysql.md), silently, as every option does."""
    text = BASE.replace(
        "  type: mysql", "  type: mysql\n  treat-tinyint1-as-boolean.enabled: false"
    )
    definition = load(tmp_path, text)
    assert definition.source_config.tinyint1_boolean is False and not definition.notes
    assert definition.source_options["treat-tinyint1-as-boolean.enabled"] == "false"


def test_the_definitions_repr_shows_no_secret(tmp_path: Path) -> None:
    text = BASE.replace("  username: cdc", "  username: cdc\n  password: hunter2-db").replace(
        "sink:\n  type: console",
        "sink:\n  type: delta\n  path: lake\n  writer: native\n"
        "  storage-options.AWS_SECRET_ACCESS_KEY: hunter2-aws\n"
        "  storage-options.AWS_REGION: eu-west-1",
    )
    definition = load(tmp_path, text)
    assert definition.sink_options["storage-options.AWS_SECRET_ACCESS_KEY"] == "hunter2-aws"
    shown = repr(definition) + str(definition.sink_options) + str(definition.source_options)
    assert "hunter2" not in shown and "eu-west-1" in shown


def test_include_comments_is_the_sources_own_option_and_noted_where_unkept(
    tmp_path: Path,
) -> None:
    text = BASE.replace("  type: mysql", "  type: mysql\n  include-comments.enabled: true")
    console = load(tmp_path, text)
    assert console.source_config.include_comments is True
    assert any("console sink's targets take no comments" in n for n in console.notes)
    delta = load(tmp_path, text.replace("  type: console", "  type: delta\n  path: lake"))
    assert not any("comments" in n for n in delta.notes)

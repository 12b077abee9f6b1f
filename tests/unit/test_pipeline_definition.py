"""Pipeline files: valid ones load; every mistake names the file, the line and the key."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.console.print_format import format_change

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
source:
  type: mysql
  hostname: 127.0.0.1
  port: 3306
  username: cdc
  password: ${PIPELINE_TEST_PASSWORD}
  tables: app_db.\\.*
  server-id: 5400-5404
  jdbc.properties:
    sslMode: required
sink:
  type: delta
  path: lake
pipeline:
  name: sync app_db
  checkpoint: ckpt
  trigger-interval: 2s
  max-rows-per-trigger: 1000
  spark-conf:
    spark.sql.shuffle.partitions: 8
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(PipelineFileError) as info:
        load_pipeline(write(tmp_path, text))
    return str(info.value)


def test_a_valid_file_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_TEST_PASSWORD", "s3cret")
    definition = load_pipeline(write(tmp_path, GOOD))
    assert definition.source_type == "mysql" and definition.sink_type == "delta"
    options = definition.stream_options()
    assert options["tables"] == "app_db.\\.*"  # Flink CDC's syntax, parsed by the connector
    assert definition.source_config.matches("app_db", "a.b")
    assert not definition.source_config.matches("app_db2", "a")
    assert options["password"] == "s3cret" and options["maxRowsPerTrigger"] == "1000"
    assert options["jdbc.properties.sslMode"] == "required"
    assert definition.source_config.server_ids == (5400, 5404)
    settings = definition.settings
    assert settings.checkpoint == (tmp_path / "ckpt").resolve()
    assert settings.trigger_seconds == 2.0
    assert settings.spark_conf == {"spark.sql.shuffle.partitions": "8"}
    assert definition.sink_options == {"path": "lake"}


def test_schema_change_types_of_the_sink_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Flink CDC writes them as YAML lists; they are the pipeline's, not the sink type's."""
    monkeypatch.setenv("PIPELINE_TEST_PASSWORD", "x")
    text = GOOD.replace(
        "  path: lake",
        "  path: lake\n  include.schema.changes: [column]\n  exclude.schema.changes: [drop]",
    ).replace("  name: sync app_db", "  name: sync app_db\n  schema.change.behavior: evolve")
    definition = load_pipeline(write(tmp_path, text))
    assert definition.sink_options == {"path": "lake"}
    assert definition.excluded_changes == {"drop.column", "drop.table", "truncate.table"}
    assert definition.settings.schema_change_behavior == "evolve"


def test_a_pattern_like_a_shell_glob_loads_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``orders_*`` is a valid regular expression, accepted as Flink CDC accepts it; the
    note (printed by ``run`` and ``validate``, offline too) says what was likely meant."""
    monkeypatch.setenv("PIPELINE_TEST_PASSWORD", "x")
    text = GOOD.replace("tables: app_db.\\.*", "tables: app_db.orders_*")
    definition = load_pipeline(write(tmp_path, text))
    assert definition.source_config.matches("app_db", "orders__")  # the regex, as written
    assert not definition.source_config.matches("app_db", "orders_2024")
    (note,) = [n for n in definition.notes if "shell glob" in n]
    assert note.startswith("tables: 'app_db.orders_*' looks like a shell glob")
    assert "write 'app_db.orders_\\.*'" in note


def test_available_now_trigger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_TEST_PASSWORD", "x")
    text = GOOD.replace("trigger-interval: 2s", "trigger-interval: available-now")
    assert load_pipeline(write(tmp_path, text)).settings.trigger_seconds is None


@pytest.mark.parametrize(
    ("change", "line", "expected"),
    [
        (("  port: 3306", "  port: 99999"), 4, "'source.port'.*invalid value '99999'"),
        (("  hostname:", "  hostnam:"), 3, "unknown option 'hostnam'.*Did you mean 'hostname'"),
        (("  type: delta", "  type: iceberg"), 12, "'sink.type'.*valid values: delta, jdbc"),
        (("  path: lake", "  paht: lake"), 13, "'sink.paht'.*unknown option"),
        (("  trigger-interval: 2s", "  trigger-interval: soon"), 17, "'pipeline.trigger-int"),
        (
            ("  tables: app_db.\\.*", "  tables: app_db.*"),
            7,
            r"'app_db\.\*' looks like a shell glob.*write 'app_db\.\\\.\*'",
        ),
        (
            ("checkpoint: ckpt", "checkpoint: s3a://bucket/ckpt"),
            16,
            "'pipeline.checkpoint': 's3a://bucket/ckpt' is a URI; .* local folder",
        ),
        (("sink:", "sinks:"), 11, "'sinks': unknown block"),
        (
            ("  tables: app_db.\\.*", "  tables: nodot"),
            7,
            "'nodot' is not one: two regular expressions",
        ),
        (("  server-id: 5400-5404", "  server-id: 9-1"), 8, "'source.server-id'"),
        (("  max-rows-per-trigger: 1000", "  max-rows-per-trigger: 0"), 18, "an integer >= 1"),
        (
            ("  path: lake", "  path: lake\n  exclude.schema.changes: [drop.column, nope]"),
            14,
            "'sink.exclude.schema.changes'.*invalid value 'nope'. Valid values: add.column",
        ),
    ],
)
def test_mistakes_name_file_line_and_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: tuple[str, str],
    line: int,
    expected: str,
) -> None:
    monkeypatch.setenv("PIPELINE_TEST_PASSWORD", "x")
    old, new = change
    assert old in GOOD
    message = error_of(tmp_path, GOOD.replace(old, new, 1))
    assert message.startswith(f"{tmp_path / 'pipeline.yaml'}:{line}: "), message
    assert re.search(expected, message), message


def test_invalid_yaml_and_missing_blocks(tmp_path: Path) -> None:
    message = error_of(tmp_path, "source:\n  type: mysql\n   bad: indent\n")
    assert re.match(rf"{re.escape(str(tmp_path))}/pipeline.yaml:3: invalid YAML", message)
    assert "the 'sink' block is missing" in error_of(tmp_path, "source:\n  type: mysql\n")
    assert "empty" in error_of(tmp_path, "")


def test_missing_environment_variable_and_secret_not_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PIPELINE_TEST_PASSWORD", raising=False)
    message = error_of(tmp_path, GOOD)
    assert ":6: 'source.password': environment variable PIPELINE_TEST_PASSWORD" in message
    monkeypatch.setenv("PIPELINE_TEST_PASSWORD", "hunter2")
    message = error_of(tmp_path, GOOD.replace("  port: 3306", "  port: x"))
    assert "hunter2" not in message


def test_flink_print_format() -> None:
    assert (
        format_change("insert", (1001, dt.date(2021, 9, 17), None)) == "+I[1001, 2021-09-17, null]"
    )
    assert format_change("update_preimage", (dt.time(10, 20),)) == "-U[10:20]"
    assert format_change("update_postimage", (dt.datetime(2021, 1, 2, 3, 4, 5, 120000),)) == (
        "+U[2021-01-02T03:04:05.120]"
    )
    assert format_change("delete", (b"\x01\xff", True)) == "-D[x'01ff', true]"


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.yaml")), ids=str)
def test_the_example_pipelines_are_valid(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MYSQL_PASSWORD", "PG_PASSWORD"):
        monkeypatch.setenv(name, "x")
    definition = load_pipeline(example)
    # running an example from a checkout writes nothing into it
    assert not definition.settings.checkpoint.is_relative_to(ROOT)
    path = definition.sink_options.get("path")
    assert path is None or not (example.parent / path).resolve().is_relative_to(ROOT)


UPSERT_SOURCE = """\
source:
  type: postgres
  hostname: 127.0.0.1
  username: cdc
  password: secret
  database-name: shop
  tables: app.orders
  slot.name: app_slot
  changelog-mode: upsert
sink:
{sink}
pipeline:
  checkpoint: ckpt
"""


@pytest.mark.parametrize(
    "sink",
    [
        "  type: delta\n  path: lake\n  changelog-mode: append",
        "  type: kafka\n"
        "  properties.bootstrap.servers: 127.0.0.1:9092\n  value.format: debezium-json",
    ],
)
def test_a_source_without_old_rows_is_refused_with_a_history_sink(
    tmp_path: Path, sink: str
) -> None:
    message = error_of(tmp_path, UPSERT_SOURCE.format(sink=sink))
    assert ":9: 'source.changelog-mode': option 'changelog-mode' is upsert" in message, message
    assert "kafka with value.format: upsert" in message


@pytest.mark.parametrize(
    "sink",
    [
        "  type: delta\n  path: lake\n  changelog-mode: upsert",
        "  type: kafka\n  properties.bootstrap.servers: 127.0.0.1:9092\n  value.format: upsert",
        "  type: console",
    ],
)
def test_a_source_without_old_rows_feeds_upsert_sinks(tmp_path: Path, sink: str) -> None:
    definition = load_pipeline(write(tmp_path, UPSERT_SOURCE.format(sink=sink)))
    assert definition.source_config.upsert


@pytest.mark.parametrize(
    ("rule", "option"),
    [
        ("    filter: status <> 'archived'\n", "filter"),
        ("    primary-keys: id\n", "primary-keys"),
    ],
)
def test_a_source_without_old_rows_refuses_transforms_that_need_them(
    tmp_path: Path, rule: str, option: str
) -> None:
    """Under changelog-mode: upsert a delete holds the key alone, so a filter would drop
    it and a key built from other columns would be NULL: both refused up front."""
    text = UPSERT_SOURCE.format(sink="  type: delta\n  path: lake") + (
        "transform:\n  - source-table: app.orders\n" + rule
    )
    message = error_of(tmp_path, text)
    assert f"option '{option}' needs each change's old row" in message, message
    assert "changelog-mode: all" in message
    without_upsert = text.replace("  changelog-mode: upsert\n", "")
    assert load_pipeline(write(tmp_path, without_upsert)).transforms

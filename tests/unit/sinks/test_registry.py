"""The sink registry: every sink type is found by its name, validates its options without
pyspark or a driver, and is built with the pipeline's folder and identity."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sparkcdc.core.errors import OptionError
from sparkcdc.sinks.console.sink import ConsoleSink
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.sinks.jdbc.sink import JdbcSink
from sparkcdc.sinks.kafka.sink import KafkaSink
from sparkcdc.sinks.registry import SINK_TYPES, make_sink, sink_type, validate_sink_options

#: The least each sink type needs to validate.
OPTIONS = {
    "delta": {"path": "lake"},
    "jdbc": {"url": "postgresql://127.0.0.1/analytics", "username": "cdc"},
    "console": {},
    "kafka": {"properties.bootstrap.servers": "127.0.0.1:9092"},
}


def test_every_listed_type_declares_itself_under_its_name() -> None:
    assert SINK_TYPES == ("delta", "jdbc", "console", "kafka")
    for name in SINK_TYPES:
        assert sink_type(name).name == name


def test_an_unknown_type_lists_the_valid_ones() -> None:
    message = "sink: invalid type 'parquet'. Valid values: delta, jdbc, console, kafka"
    with pytest.raises(OptionError, match=message):
        validate_sink_options("parquet", {})
    with pytest.raises(OptionError, match=message):
        make_sink("parquet", {})


def test_options_are_validated_by_the_sink_type() -> None:
    with pytest.raises(OptionError, match="delta sink"):
        validate_sink_options("delta", {"changelog-mode": "merge"})


def test_validation_imports_no_spark_and_no_driver() -> None:
    code = (
        "import sys\n"
        "from sparkcdc.sinks.registry import SINK_TYPES, validate_sink_options\n"
        f"options = {OPTIONS!r}\n"
        "for name in SINK_TYPES:\n"
        "    validate_sink_options(name, options[name])\n"
        "bad = {'pyspark', 'delta', 'psycopg', 'pymysql'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_sinks_are_built_with_the_pipeline_folder_and_identity(tmp_path: Path) -> None:
    delta = make_sink("delta", OPTIONS["delta"], tmp_path)
    assert isinstance(delta, DeltaSink)
    assert delta.config.path == str((tmp_path / "lake").resolve())
    jdbc = make_sink("jdbc", OPTIONS["jdbc"], tmp_path, pipeline_id="p:q")
    assert isinstance(jdbc, JdbcSink)
    assert jdbc.pipeline == "p:q"
    assert isinstance(make_sink("console", OPTIONS["console"]), ConsoleSink)
    assert isinstance(make_sink("kafka", OPTIONS["kafka"]), KafkaSink)


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("s3a://bucket/lake", "s3a://bucket/lake/app/orders"),
        (
            "abfss://c@account.dfs.core.windows.net/lake/",
            "abfss://c@account.dfs.core.windows.net/lake/app/orders",
        ),
        ("file:///data/lake", "file:///data/lake/app/orders"),
    ],
)
def test_a_delta_path_given_as_a_uri_stays_that_uri(
    tmp_path: Path, location: str, target: str
) -> None:
    """Storage every executor of a cluster reaches is named by URI: it is neither taken
    relative to the pipeline's folder nor folded by ``pathlib`` (``s3a:/bucket``)."""
    from sparkcdc.core.table import TableId
    from sparkcdc.sinks.base import SinkTable

    delta = make_sink("delta", {"path": location}, tmp_path)
    assert isinstance(delta, DeltaSink)
    assert delta.config.path == location and delta.config.local_folder is None
    assert delta.target_of(SinkTable(TableId("app", "orders"), None, ("id",))) == target

"""What each sink type declares for its configurations (sinks/capabilities.py), and that
the pipeline acts on the declaration alone: ``verify`` refuses a sink it cannot read
before anything starts. No Spark: the declarations are offline; the sinks keep them in
tests/conformance/test_sinks.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.cli.commands import verify_pipeline
from sparkcdc.core.errors import OptionError
from sparkcdc.core.table_events import SCHEMA_CHANGE_TYPES, TRUNCATE_TABLE
from sparkcdc.pipeline.definition import load_pipeline
from sparkcdc.sinks.capabilities import (
    APPEND,
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    UPSERT,
    SinkCapabilities,
)
from sparkcdc.sinks.registry import SINK_TYPES, sink_capabilities, sink_type

KAFKA = {"properties.bootstrap.servers": "127.0.0.1:9"}
JDBC = {"url": "postgresql://127.0.0.1:5432/db", "username": "u"}


def test_every_sink_type_declares_its_capabilities() -> None:
    for kind in SINK_TYPES:
        assert callable(sink_type(kind).capabilities)


@pytest.mark.parametrize(
    ("kind", "options", "truncates", "mode", "delivery", "verifiable"),
    [
        ("delta", {"path": "lake"}, True, UPSERT, EXACTLY_ONCE, True),
        ("delta", {"path": "lake", "changelog-mode": "append"}, False, APPEND, EXACTLY_ONCE, True),
        ("jdbc", JDBC, True, UPSERT, EXACTLY_ONCE, True),
        ("kafka", KAFKA, True, APPEND, AT_LEAST_ONCE, False),  # debezium-json: a 't' message
        ("kafka", {**KAFKA, "value.format": "changelog-json"}, False, APPEND, AT_LEAST_ONCE, False),
        ("kafka", {**KAFKA, "value.format": "upsert"}, False, UPSERT, AT_LEAST_ONCE, False),
        ("console", {}, True, APPEND, AT_LEAST_ONCE, False),
    ],
)
def test_a_declaration_follows_the_configuration(
    kind: str,
    options: dict[str, str],
    truncates: bool,
    mode: str,
    delivery: str,
    verifiable: bool,
) -> None:
    declared = sink_capabilities(kind, options)
    assert declared.accepts(TRUNCATE_TABLE) == truncates
    assert declared.refused(SCHEMA_CHANGE_TYPES) == ([] if truncates else [TRUNCATE_TABLE])
    assert (declared.write_mode, declared.delivery, declared.verifiable) == (
        mode,
        delivery,
        verifiable,
    )
    assert declared.exactly_once == (delivery == EXACTLY_ONCE)


def test_a_declaration_names_known_types_and_always_creates_tables() -> None:
    with pytest.raises(ValueError, match=r"create\.table"):
        SinkCapabilities(frozenset({TRUNCATE_TABLE}), UPSERT, EXACTLY_ONCE, True)
    with pytest.raises(ValueError, match="unknown write mode"):
        SinkCapabilities(frozenset(SCHEMA_CHANGE_TYPES), "merge", EXACTLY_ONCE, True)


def test_verify_refuses_a_sink_it_cannot_read_before_anything_starts(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        "source:\n  type: mysql\n  hostname: 127.0.0.1\n  username: u\n  password: p\n"
        "  tables: app.t\n"
        "sink:\n  type: kafka\n  properties.bootstrap.servers: 127.0.0.1:9\n"
        "pipeline:\n  name: p\n  checkpoint: ckpt\n",
        encoding="utf-8",
    )
    # no server, no Spark: a start would fail otherwise, not with this
    with pytest.raises(OptionError, match="kafka sink's targets cannot be read back"):
        verify_pipeline(load_pipeline(path))

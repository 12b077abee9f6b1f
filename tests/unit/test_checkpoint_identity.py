"""A pipeline's identity is its checkpoint's query id (pipeline/checkpoint.py): written
before the first run's query starts, in the form Spark writes and reads, kept as it is
once there, and never replaced when it cannot be read (a new id would make every batch
look new to the sinks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkcdc.pipeline.checkpoint import ensure_query_id, query_id


def test_a_new_checkpoint_gets_an_id_in_sparks_form_once(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint"
    first = ensure_query_id(checkpoint)
    text = (checkpoint / "metadata").read_text(encoding="utf-8")
    assert text == json.dumps({"id": first}, separators=(",", ":"))  # as Spark writes it
    assert ensure_query_id(checkpoint) == first == query_id(checkpoint)
    assert [p.name for p in checkpoint.iterdir()] == ["metadata"]  # no scratch file left


def test_an_id_spark_wrote_is_kept(tmp_path: Path) -> None:
    (tmp_path / "metadata").write_text('{"id":"04093f7e-a623-40da-9ad2-8a0147f5ddb4"}')
    assert ensure_query_id(tmp_path) == "04093f7e-a623-40da-9ad2-8a0147f5ddb4"


@pytest.mark.parametrize("text", ["", "{not json", '{"other": 1}'])
def test_a_metadata_file_that_cannot_be_read_fails_and_stays(tmp_path: Path, text: str) -> None:
    (tmp_path / "metadata").write_text(text)
    with pytest.raises((ValueError, KeyError)):
        ensure_query_id(tmp_path)
    assert (tmp_path / "metadata").read_text() == text

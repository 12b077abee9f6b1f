"""``verify`` of a Delta target reads the source offset from the pipeline's commits'
``userMetadata`` and passes over what other writers put there (#63): invalid JSON used
to crash it, and another pipeline's offset was taken for this one's."""

from __future__ import annotations

import json

import pytest

from sparkcdc.sinks.delta.history import recorded_offset

OURS = json.dumps({"pipeline": "p:1", "batch_id": 3, "source_offset": '{"log": 1}'})


@pytest.mark.parametrize(
    "metadata",
    [
        None,
        "",
        "{not json",
        "{" * 100_000,
        "[1, 2]",
        '{"source_offset": 5}',
        '{"source_offset": ["x"]}',
        '{"pipeline": "p:1", "source_offset": null}',
        "plain text from a notebook",
        json.dumps({"pipeline": "other:9", "source_offset": '{"log": 9}'}),
    ],
)
def test_other_writers_metadata_records_no_offset(metadata: str | None) -> None:
    assert recorded_offset(metadata, "p:1") is None


def test_the_pipelines_own_commit_records_its_offset() -> None:
    assert recorded_offset(OURS, "p:1") == '{"log": 1}'
    assert recorded_offset(OURS) == '{"log": 1}'  # pipeline unknown: any sparkcdc commit

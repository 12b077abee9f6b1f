"""A table without a primary key meets an upsert target: refused up front unless a
transform declares its key (``pipeline/keyless_targets.py``)."""

from __future__ import annotations

import pytest

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.keyless_targets import refuse_keyless_upserts
from sparkcdc.pipeline.targets import Target, TargetSource
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.capabilities import APPEND, UPSERT


def _target(name: str, key: tuple[str, ...]) -> Target:
    table = SinkTable(TableId("db", name), None, ())
    return Target(table, (TargetSource(table, None, None, None, key),))


def test_an_upsert_target_without_a_key_is_refused_naming_the_table_and_the_ways_out() -> None:
    targets = [_target("keyed", ("id",)), _target("events", ())]
    with pytest.raises(PipelineFileError) as caught:
        refuse_keyless_upserts(UPSERT, targets)
    message = str(caught.value)
    assert "table db.events has no primary key" in message
    assert "'changelog-mode: append'" in message
    assert "'- source-table: db.events' with 'primary-keys: <col>" in message


def test_a_declared_key_or_a_history_target_is_accepted() -> None:
    refuse_keyless_upserts(UPSERT, [_target("events", ("event_id",))])  # transform's key
    refuse_keyless_upserts(APPEND, [_target("events", ())])

"""When a stop interrupts nothing: the statuses below are the ones Spark 4 reports."""

from __future__ import annotations

import pytest

from sparkcdc.pipeline.query_status import between_triggers


def status(message: str, active: bool) -> dict[str, object]:
    return {"message": message, "isDataAvailable": False, "isTriggerActive": active}


@pytest.mark.parametrize("message", ["Initializing StreamExecution", "Initializing sources"])
def test_a_query_that_initializes_its_sources_is_not_between_triggers(message: str) -> None:
    # no trigger runs yet, but a stop would cut the start of the source's Python process
    assert not between_triggers(status(message, active=False))


@pytest.mark.parametrize("message", ["Waiting for next trigger", "Waiting for data to arrive"])
def test_a_started_query_waiting_for_its_trigger_is_between_triggers(message: str) -> None:
    assert between_triggers(status(message, active=False))


def test_a_running_trigger_is_not_between_triggers() -> None:
    assert not between_triggers(status("Getting offsets from CdcStream", active=True))

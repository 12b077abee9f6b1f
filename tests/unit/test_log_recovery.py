"""Which tables a batch marks as read again after a lost log, and what the runner does to
their targets (pipeline/log_recovery.py): emptied whatever ``schema.change.behavior``
says; where a target cannot be emptied, kept and released. No Spark: the sinks' own
emptying runs in tests/faults/test_lost_log.py."""

from __future__ import annotations

import json
from typing import Any

from sparkcdc.core.table import TableId
from sparkcdc.pipeline.log_recovery import follow_recoveries, new_recoveries
from sparkcdc.sinks.base import SinkTable
from sparkcdc.snapshot.recovery import LOG_LOST

from .test_truncates import EmptyingSink, target

T, U = TableId("app", "t"), TableId("app", "u")


def offset(**marks: str | None) -> str:
    """An offset whose tables carry a lost-log mark naming ``signal`` (None: none)."""
    tables = {}
    for name, signal in marks.items():
        schema: dict[str, Any] = {"table": {}}
        if signal is not None:
            schema |= {"change": f"lost ({signal})", LOG_LOST: {"signal": signal, "at": {}}}
        tables[f"app.{name}"] = {"started": False, "schema": schema}
    return json.dumps({"log": {"file": "b.000002", "pos": 4}, "tables": tables})


class ReleasingSink(EmptyingSink):
    def __init__(self, refuse: bool = False) -> None:
        super().__init__(refuse)
        self.released: list[TableId] = []

    def release(self, spark: Any, table: SinkTable) -> None:
        self.released.append(table.source)


def test_a_recovery_is_new_in_the_batch_whose_end_first_marks_it() -> None:
    before = offset(t=None, u=None)
    assert new_recoveries(before, offset(t="s1@file:3", u=None)) == {T: "lost (s1@file:3)"}
    marked = offset(t="s1@file:3", u="s1@file:3")
    assert new_recoveries(marked, marked) == {}  # kept in later offsets: not new again
    assert new_recoveries(marked, offset(t="s2@file:4", u="s1@file:3")) == {T: "lost (s2@file:4)"}


def test_targets_are_emptied_and_those_that_cannot_be_keep_their_rows_released() -> None:
    recovered = {T: "lost", U: "lost"}
    sink = ReleasingSink()
    applied: list[TableId] = []
    batch: Any = None  # passed through to the sink only
    follow_recoveries(None, recovered, [target(T), target(U)], sink, batch, applied.append)
    assert sink.emptied == [T, U] and applied == [T, U] and sink.released == []
    for targets, refusing in (
        ([target(T), target(U)], ReleasingSink(refuse=True)),  # e.g. a Kafka upsert topic
        ([target(T, U)], ReleasingSink()),  # a route: the target holds both tables' rows
    ):
        applied = []
        follow_recoveries(None, recovered, targets, refusing, batch, applied.append)
        assert applied == [] and refusing.emptied == []
        assert refusing.released == [t.table.source for t in targets for _ in t.sources]

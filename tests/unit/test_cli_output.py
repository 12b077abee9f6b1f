"""What ``status`` and ``verify`` print fits where it goes: cut to a terminal's width,
never cut in a pipe or a file (where scripts and logs read it)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sparkcdc.cli.commands import output_console, verdict_json, verdict_table
from sparkcdc.cli.status_view import status_view
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.metrics import LogHead
from sparkcdc.pipeline.status import (
    PipelineStatus,
    TableStatus,
    seconds_behind,
    status_json,
)
from sparkcdc.verify.compare import Comparison
from sparkcdc.verify.run import TableVerdict

LONG = "order_lines_with_a_name_longer_than_any_terminal_column_would_show_whole"
POSITION = "mysql-bin.000123:987654321 (GTID 0-1001-123456789,1-1002-987654321)"


def status() -> PipelineStatus:
    return PipelineStatus(
        pipeline="shop",
        source="mysql",
        sink="delta",
        checkpoint="/data/checkpoints/shop",
        committed_batch=41,
        committed_at=1_700_000_000.0,
        position=POSITION,
        head=POSITION,
        bytes_behind=0,
        seconds_behind=0.0,
        waiting_since=None,
        source_error=None,
        written_batch=41,
        written_at=1_700_000_000.0,
        newest_commit=1_699_999_999.0,
        fetch_lag=0.4,
        emit_lag=1.2,
        tables=[
            TableStatus(f"app.{LONG}", "snapshotting", 500, 2000, 0.25, 0, 0, 0, f"/lake/{LONG}"),
            TableStatus("app.small", "streaming", 11, None, 1.0, 3, 2, 1, "/lake/small"),
        ],
    )


def test_status_and_verify_print_whole_values_in_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    console = output_console()  # pytest's captured stdout is not a terminal
    console.print(status_view(status(), now=1_700_000_010.0))
    verdicts = [TableVerdict(TableId("app", LONG), "equal", POSITION, Comparison(5, 5, 1, 0, 0))]
    console.print(verdict_table(verdicts))
    out = capsys.readouterr().out
    assert out.count(POSITION) == 3
    assert f"app.{LONG}" in out and f"/lake/{LONG}" in out
    assert "500 rows of ~2,000 (25%)" in out
    assert "11 rows (done)" in out
    assert "last committed batch 41 at 2023-11-14 22:13:20 UTC (10 s ago)" in out
    assert "…" not in out
    assert "tried again" not in out  # said only when a connection was lost
    assert "paused" not in out
    console.print(status_view(replace(status(), source_retries=3), now=1_700_000_010.0))
    out = capsys.readouterr().out
    assert "lost connections tried again: 3 to the source, 0 to the target" in out
    assert "oldest change not read yet" not in out  # caught up
    behind = replace(status(), bytes_behind=600, seconds_behind=70.0, waiting_since=1_699_999_940.0)
    console.print(status_view(behind, now=1_700_000_010.0))
    out = capsys.readouterr().out
    assert "600 bytes behind" in out
    assert "oldest change not read yet: written 2023-11-14 22:12:20 UTC (70 s ago)" in out
    console.print(status_view(replace(status(), paused_by_file=True), now=1_700_000_010.0))
    assert "paused: " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (LogHead("b:9", 0), 0.0),  # caught up
        (LogHead("b:9", 0, None, True), 0.0),
        (LogHead("b:9", 500, 90.0, True), 10.0),  # the oldest waiting change: 10 s old
        (LogHead("b:9", 500, 101.0, True), 0.0),  # written after now (clocks apart)
        (LogHead("b:9", 500, None, True), 0.0),  # bytes but no transaction (a rotation)
        (LogHead("b:9", 500), None),  # the log cannot tell (PostgreSQL)
        (LogHead("b:9", None), None),
    ],
)
def test_seconds_behind_is_the_age_of_the_oldest_change_not_read(
    head: LogHead, expected: float | None
) -> None:
    assert seconds_behind(head, now=100.0) == expected


def test_json_forms_are_complete() -> None:
    data = json.loads(status_json(status()))
    assert data["tables"][0]["table"] == f"app.{LONG}"
    assert data["bytes_behind"] == 0 and data["committed_batch"] == 41
    assert data["source_retries"] == 0 and data["sink_retries"] == 0
    assert data["paused_by_file"] is False
    assert data["seconds_behind"] == 0.0 and data["waiting_since"] is None
    verdict = TableVerdict(TableId("app", "t"), "different", POSITION, Comparison(5, 4, 2, 1, 1))
    assert verdict_json(verdict)["differing_keys"] == 1

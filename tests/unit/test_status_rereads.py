"""``sparkcdc status`` shows a running re-read (issue: status showed such a table as
merely streaming): which signal, its key range, how far it got, paused or not."""

from __future__ import annotations

import json
from dataclasses import replace

from rich.console import Console

from sparkcdc.cli.status_view import status_view
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.status import PipelineStatus, TableStatus, running_rereads
from sparkcdc.snapshot.progress import Resnapshot


def offset(paused: bool = False) -> str:
    tables = {
        "app.orders": {"done": True, "again": Resnapshot("fix", 100, 200, True, 150).to_json()},
        "app.audit": {"done": True, "again": Resnapshot("old", None, None, done=True).to_json()},
        "app.items": {"done": True, "again": Resnapshot("all").to_json()},
        "app.users": {"done": True},
    }
    return json.dumps({"log": {}, "tables": tables, **({"paused": True} if paused else {})})


def test_running_rereads_name_signal_range_and_key_reached() -> None:
    found = running_rereads(offset())
    assert found == {
        TableId("app", "orders"): {
            "signal": "fix",
            "from": "100",
            "to": "200",
            "at": "150",
            "paused": False,
        },
        TableId("app", "items"): {
            "signal": "all",
            "from": None,
            "to": None,
            "at": None,
            "paused": False,
        },
    }
    assert all(r["paused"] for r in running_rereads(offset(paused=True)).values())


def test_the_status_view_shows_the_reread() -> None:
    table = TableStatus("app.orders", "streaming", 500, None, 1.0, 1, 2, 3, None)
    status = PipelineStatus(
        "p", "mysql", "delta", "/c", 7, 0.0, "binlog.000001:4", None, None, None, None,
        None, None, None, None, None, None,
        [table, replace(table, table="app.users")],
    )  # fmt: skip
    rereading = replace(
        status,
        tables=[
            replace(
                table, reread=running_rereads(offset())[TableId("app", "orders")], reread_rows=42
            ),
            replace(table, table="app.users"),
        ],
    )
    console = Console(record=True, width=200)
    console.print(status_view(rereading, now=0.0))
    text = console.export_text()
    assert "streaming, re-reading" in text
    assert "signal 'fix' keys 100..200, at 150, 42 rows read again" in text
    console = Console(record=True, width=200)
    console.print(status_view(status, now=0.0))
    assert "re-reading" not in console.export_text()

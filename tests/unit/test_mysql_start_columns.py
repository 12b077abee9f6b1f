"""A start at an older binlog position takes today's columns only when the binlog since
holds no change of a captured table's columns (binlog/start_columns.py)."""

from __future__ import annotations

import pytest

from sparkcdc.connectors.mysql.binlog.position import BinlogPosition
from sparkcdc.connectors.mysql.binlog.start_columns import check_columns_since
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.schema_change import SchemaChange

T = TableId("shop", "t")
TABLE = CapturedTable(T, (MySqlColumn("id", 1, "int", "int(11)"),), ("id",), "id")


def at(pos: int) -> BinlogPosition:
    return BinlogPosition("binlog.000001", pos)


def change(pos: int, statement: str, **kind: object) -> SchemaChange[BinlogPosition, CapturedTable]:
    return SchemaChange(T, at(pos), at(pos + 10), statement, TABLE, **kind)  # type: ignore[arg-type]


def test_truncates_are_passed_over_and_no_change_starts() -> None:
    walked: list[tuple[int, int]] = []
    changes = {4: change(50, "TRUNCATE t", truncated=True)}

    def first(
        start: BinlogPosition, end: BinlogPosition
    ) -> SchemaChange[BinlogPosition, CapturedTable] | None:
        walked.append((start.pos, end.pos))
        return changes.get(start.pos)

    check_columns_since(at(4), at(100), first, "earliest-offset")
    assert walked == [(4, 100), (60, 100)]


@pytest.mark.parametrize(
    ("found", "what"),
    [
        (change(50, "ALTER TABLE t ADD c INT"), "changed its columns"),
        (change(50, "DROP TABLE t", dropped_tables=(T,)), "was dropped"),
    ],
)
def test_a_change_since_refuses_the_start_saying_how_to_start(
    found: SchemaChange[BinlogPosition, CapturedTable], what: str
) -> None:
    with pytest.raises(SchemaError) as refused:
        check_columns_since(at(4), at(100), lambda s, e: found, "timestamp")
    message = str(refused.value)
    assert f"'scan.startup.mode' timestamp): table shop.t {what} after it" in message
    assert found.statement in message and "'initial'" in message
    assert f"specific-offset from {found.after}" in message


def test_a_position_at_the_end_walks_nothing() -> None:
    def never(start: BinlogPosition, end: BinlogPosition) -> None:
        raise AssertionError("walked")

    check_columns_since(at(100), at(100), never, "specific-offset")

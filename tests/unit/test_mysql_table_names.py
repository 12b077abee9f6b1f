"""Table maps named by the schema history (binlog/table_names.py, table_drift.py): a row
event's columns are the table's columns as of its position, taken by position; the names
a FULL table map carries are a cross-check, never the source."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.rowdecode.plan import (
    BLOB,
    ENUM,
    LONG,
    LONGLONG,
    SET,
    VARCHAR,
    WireColumn,
    build_plan,
)
from sparkcdc.connectors.mysql.binlog.table_drift import table_map_drift
from sparkcdc.connectors.mysql.binlog.table_names import library_encoding, name_columns
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.table import TableId

ID = MySqlColumn("id", 1, "bigint", "bigint(20) unsigned", unsigned=True, primary_key=True)
NAME = MySqlColumn("name", 2, "varchar", "varchar(20)", charset="latin1")
DATA = MySqlColumn("data", 3, "blob", "blob")
SIZE = MySqlColumn("size", 4, "enum", "enum('s','m','l')", charset="utf8mb4")
TAGS = MySqlColumn("tags", 5, "set", "set('a','b')", charset="utf8mb4")
COUNT = MySqlColumn("count", 6, "int", "int(11)")
TABLE = CapturedTable(TableId("shop", "t"), (ID, NAME, DATA, SIZE, TAGS, COUNT), ("id",), "id")


def library_columns(*, names: bool) -> list[Any]:
    """A table map's columns as python-mysql-replication leaves them: without optional
    metadata (NO_LOG, or MINIMAL while the server is not at FULL) no name, no sign, no
    character set, no labels."""

    def column(name: str, kind: int, **extra: Any) -> Any:
        base = {"name": name if names else None, "type": kind, "unsigned": False}
        base |= {"character_set_name": None, "enum_values": None, "set_values": None}
        return SimpleNamespace(**(base | extra))

    return [
        column("id", LONGLONG, unsigned=names),
        column(
            "name", VARCHAR, max_length=20, **({"character_set_name": "cp1252"} if names else {})
        ),
        column("data", BLOB, length_size=2),
        column("size", ENUM, size=1),
        column("tags", SET, size=1),
        column("count", LONG),
    ]


def wire(columns: list[Any]) -> list[WireColumn]:
    return [WireColumn.from_library(c) for c in columns]


def test_a_table_map_without_metadata_is_named_by_position() -> None:
    columns = library_columns(names=False)
    assert table_map_drift(wire(columns), TABLE) is None
    name_columns(columns, TABLE.columns)
    assert [c.name for c in columns] == list(TABLE.column_names)
    assert columns[0].unsigned and not columns[5].unsigned
    assert [c.character_set_name for c in columns[1:5]] == ["cp1252", "binary", "utf8", "utf8"]
    assert columns[3].enum_values == ["", "s", "m", "l"]
    assert columns[4].set_values == ["a", "b"]
    # the compiled plan of the named map covers every column, in the table's slots
    plan = build_plan(wire(columns), TABLE)
    assert plan.entries is not None, plan.reason
    assert [e[1] for e in plan.entries] == list(range(6))


def test_full_metadata_names_are_a_cross_check_by_position() -> None:
    columns = library_columns(names=True)
    assert table_map_drift(wire(columns), TABLE) is None
    swapped = library_columns(names=True)
    swapped[1].name, swapped[5].name = "count", "name"
    drift = table_map_drift(wire(swapped), TABLE)
    assert drift == "column 2 is count in the binlog's row metadata, name in the schema history"


def test_a_column_more_or_a_type_at_another_position_is_drift() -> None:
    columns = library_columns(names=False)
    assert table_map_drift(wire(columns[:-1]), TABLE) == "5 columns in the binlog, 6 captured"
    moved = [columns[0], columns[5], *columns[1:5]]  # count moved FIRST-after-id
    drift = table_map_drift(wire(moved), TABLE)
    assert drift is not None and drift.startswith("column name: binlog type 3")


def test_the_sign_is_compared_only_where_the_event_says_it() -> None:
    signed = library_columns(names=True)
    signed[0].unsigned = False
    assert table_map_drift(wire(signed), TABLE) is not None
    assert table_map_drift(wire(library_columns(names=False)), TABLE) is None


def test_library_encodings_are_the_full_table_maps() -> None:
    assert library_encoding("utf8mb4") == library_encoding("utf8mb3") == "utf8"
    assert library_encoding("latin1") == "cp1252"
    assert library_encoding(None) == "binary"


@given(st.permutations(range(6)))
def test_any_order_of_columns_is_named_from_its_own_history(order: list[int]) -> None:
    """A history whose columns are in another order (FIRST / AFTER) names a table map in
    that order: what the event has at position n is the history's column n."""
    table = CapturedTable(
        TableId("shop", "t"), tuple(TABLE.columns[i] for i in order), ("id",), "id"
    )
    template = library_columns(names=False)
    columns = [template[i] for i in order]
    assert table_map_drift(wire(columns), table) is None
    name_columns(columns, table.columns)
    assert [c.name for c in columns] == [TABLE.columns[i].name for i in order]

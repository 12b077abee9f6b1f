"""The table-event vocabulary (core/table_events.py): Flink CDC's type names, the column
moves as the offset keeps them, and what each event asks of a sink."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import (
    COLUMN_CHANGE_TYPES,
    CREATE_TABLE,
    DROP_TABLE,
    NO_MOVES,
    SCHEMA_CHANGE_TYPES,
    TRUNCATE_TABLE,
    AlterColumnsEvent,
    ColumnMoves,
    CreateTableEvent,
    DropTableEvent,
    LostLogEvent,
    TruncateTableEvent,
)
from sparkcdc.pipeline.change_types import CHANGE_TYPES, FAMILIES

T = TableId("app", "t")
NAMES = st.text("abc_", min_size=1, max_size=4)


def test_the_types_are_flink_cdcs_and_the_sink_options_use_them() -> None:
    assert SCHEMA_CHANGE_TYPES == (
        "add.column",
        "alter.column.type",
        "create.table",
        "drop.column",
        "drop.table",
        "rename.column",
        "truncate.table",
    )
    assert CHANGE_TYPES == SCHEMA_CHANGE_TYPES
    assert FAMILIES["column"] == COLUMN_CHANGE_TYPES


@given(st.dictionaries(NAMES, NAMES, max_size=3), st.lists(NAMES, max_size=3, unique=True))
def test_column_moves_read_back_from_the_offset_entry(
    renamed: dict[str, str], dropped: list[str]
) -> None:
    moves = ColumnMoves(renamed, tuple(dropped))
    assert ColumnMoves.from_json(moves.to_json()) == moves
    assert (moves.to_json() == {}) == (moves == NO_MOVES)


def test_each_event_names_the_type_a_sink_must_apply() -> None:
    """A lost log's recovery empties the target: a sink that truncates applies it."""
    assert CreateTableEvent(T, "", {}).kind == CREATE_TABLE
    assert TruncateTableEvent(T, "TRUNCATE t").kind == TRUNCATE_TABLE
    assert DropTableEvent(T, "DROP TABLE t").kind == DROP_TABLE
    assert LostLogEvent(T, "lost").kind == TRUNCATE_TABLE
    assert AlterColumnsEvent(T, "ALTER TABLE t ...", {}).kind == ""  # types per target


def test_a_statement_is_shown_on_one_line_and_cut() -> None:
    long = "ALTER TABLE t\n  ADD COLUMN " + "x" * 300
    short = TruncateTableEvent(T, long).short
    assert "\n" not in short and len(short) == 160 and short.endswith("...")
    assert TruncateTableEvent(T, "TRUNCATE   t").short == "TRUNCATE t"

"""A table's comments (core/comments.py): empty ones are none, a projection keeps its
columns' own, and they are no part of a MySQL column's or table's shape."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.binlog.ddl_columns import alter_table, changes_columns
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import MySqlColumn
from sparkcdc.core.comments import NO_COMMENTS, Comments
from sparkcdc.core.table import TableId


def test_empty_comments_are_none_and_a_projection_keeps_its_columns() -> None:
    comments = Comments.of("", [("a", ""), ("b", "bee"), ("c", None)])
    assert comments == Comments(None, (("b", "bee"),)) and bool(comments)
    assert not Comments.of(None, [("a", "")]) and Comments() == NO_COMMENTS
    both = Comments("t", (("a", "x"), ("b", "y")))
    assert both.only(["b", "z"]) == Comments("t", (("b", "y"),))
    assert both.column("a") == "x" and both.column("z") is None


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=6))
def test_every_kept_comment_reads_back_by_its_column(found: dict[str, str]) -> None:
    comments = Comments.of(None, found.items())
    assert {n: comments.column(n) for n in found} == {n: (t or None) for n, t in found.items()}


TABLE = CapturedTable(
    TableId("shop", "t"),
    (
        MySqlColumn("id", 1, "int", "int(11)", nullable=False, primary_key=True),
        MySqlColumn("note", 2, "int", "int", comment="old words"),  # as an ALTER says it
    ),
    ("id",),
    "id",
    "the table",
)


def test_a_comment_is_no_part_of_the_shape_but_an_alter_says_it() -> None:
    """A MODIFY that changes only a comment changes no column (no schema change); an
    ADD COLUMN's comment is the new column's."""
    assert CapturedTable(TABLE.table_id, TABLE.columns, ("id",), "id", "other") == TABLE
    by_name = {("shop", "t"): TABLE}
    assert changes_columns("ALTER TABLE t MODIFY note INT COMMENT 'new'", "shop", by_name) is None
    added = alter_table("ALTER TABLE t ADD COLUMN later INT COMMENT 'it''s new'", TABLE, None)
    assert [c.comment for c in added.table.columns] == [None, "old words", "it's new"]
    assert added.table.comment == "the table"

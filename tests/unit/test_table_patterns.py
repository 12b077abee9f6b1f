"""``tables`` patterns: which of them may match tables created later (``may_grow``), the
fact that puts a one-table stream watching for created tables in the envelope."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.snapshot.options import table_patterns


@pytest.mark.parametrize(
    ("text", "grows"),
    [
        ("shop.orders", False),
        ("shop.orders, shop.items", False),
        (r"my\-db.t\-1", False),  # re.escape's escaped punctuation is literal
        ("shop.orders_.*", True),
        ("shop.(orders|items)", True),
        ("shop.orders_[0-9]+", True),
        (r"app_db.\.*", True),
        (r"shop.t\d", True),  # an escaped letter is a class
        ("s[a-z].orders", True),  # the namespace part counts too
        ("shop.orders, shop.items_.*", True),  # any pair
    ],
)
def test_literal_names_do_not_grow_and_patterns_do(text: str, grows: bool) -> None:
    assert table_patterns(text).may_grow is grows


#: Names of printable characters: a pair splits at its first unescaped dot, pairs at commas.
NAME = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters=",."), min_size=1
)


@given(NAME, NAME)
def test_escaped_names_are_literal_and_match_only_themselves(namespace: str, table: str) -> None:
    patterns = table_patterns(f"{re.escape(namespace)}.{re.escape(table)}")
    assert not patterns.may_grow
    assert patterns.matches(namespace, table)

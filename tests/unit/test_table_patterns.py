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


@pytest.mark.parametrize(
    ("text", "flink"),
    [
        ("app_db.orders_*", r"app_db.orders_\.*"),
        ("app_db.*_audit", r"app_db.\.*_audit"),
        ("shop*.orders", r"shop\.*.orders"),
        ("*.orders_*_v2", r"\.*.orders_\.*_v2"),
        ("shop.orders, app_db.items*", r"app_db.items\.*"),  # the pair that looks like one
    ],
)
def test_a_valid_pattern_that_looks_like_a_shell_glob_gets_flinks_syntax(
    text: str, flink: str
) -> None:
    """``orders_*`` is a valid regular expression (``orders`` then any number of ``_``),
    so it is not refused (Flink CDC accepts it too); the hint names what was likely meant,
    in the label every "no table matches" message shows and in the pipeline's notes."""
    try:
        patterns = table_patterns(text)
    except ValueError as exc:  # not a regular expression at all: the hint is in the error
        assert f"write '{flink}'" in str(exc)
        return
    (hint,) = patterns.hints
    assert f"write '{flink}'" in hint
    assert f"'{flink}'" in patterns.label


@pytest.mark.parametrize(
    "text",
    [
        r"app_db.\.*",
        "app_db.orders.*",  # a dot after the first is the regular expression's
        "shop.orders_[0-9]*",
        r"shop.t\d*",
        "shop.(orders|items)*",
        "shop.orders",
    ],
)
def test_regular_expressions_get_no_glob_hint(text: str) -> None:
    assert table_patterns(text).hints == ()


#: Literal pieces of a glob: what a table name is made of.
PIECE = st.text(st.sampled_from("abcz_019"), max_size=4)


@given(st.lists(PIECE, min_size=2, max_size=4), st.lists(PIECE, min_size=3, max_size=3))
def test_the_suggested_pattern_matches_what_the_glob_would(
    pieces: list[str], fillers: list[str]
) -> None:
    """Whatever the stars stand for in a name, the suggestion matches that name (and is
    itself no glob): the hint never points to a pattern that misses a table the glob meant."""
    glob = "*".join(pieces)
    try:
        patterns = table_patterns(f"db.{glob}")
    except ValueError as exc:
        hint = str(exc)
    else:
        (hint,) = patterns.hints
    suggested = re.search(r"write '([^']+)'", hint)
    assert suggested is not None
    flink = table_patterns(suggested.group(1))
    assert flink.hints == ()
    stars = [*fillers[: len(pieces) - 1], ""]  # what each star stands for; none after the last
    name = "".join(piece + filler for piece, filler in zip(pieces, stars, strict=True))
    assert flink.matches("db", name)

"""The linear-time matcher of signal patterns agrees with ``re.fullmatch`` and stays fast on
patterns that make ``re`` backtrack exponentially (#63)."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sparkcdc.snapshot.linear_regex import MAX_STATES, LinearPattern, PatternError

ATOMS = ["a", "b", ".", r"\.", r"\w", r"\W", r"\d", r"\s", "[ab]", "[^a.]", "[a-c]", r"[\w.]"]
ATOMS += ["^", "$", r"\b", r"\B", r"\A", r"\Z", "_", "é", "[é-ü]"]
QUANTIFIERS = ["", "", "*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{,2}", "{2,}?"]


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    pieces = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.booleans()):
            inner = "|".join(draw(patterns(depth + 1)) for _ in range(draw(st.integers(1, 2))))
            atom = draw(st.sampled_from(["(?:{})", "({})", "(?i:{})", "(?s:{})"])).format(inner)
        else:
            atom = draw(st.sampled_from(ATOMS))
        pieces.append(atom + draw(st.sampled_from(QUANTIFIERS)))
    return "".join(pieces)


TEXTS = st.text(st.sampled_from("abAB._ é\n1-Ü"), max_size=8)


@settings(max_examples=400, deadline=None)
@given(patterns(), TEXTS, st.sampled_from(["", "(?i)", "(?m)", "(?a)", "(?s)"]))
def test_agrees_with_re_fullmatch(pattern: str, text: str, flags: str) -> None:
    pattern = flags + pattern
    try:
        expected = re.fullmatch(pattern, text) is not None
    except re.error:
        assume(False)
    assert LinearPattern(pattern).fullmatch(text) == expected, (pattern, text)


@pytest.mark.timeout(120)  # a fail-safe: milliseconds here, centuries for re
@pytest.mark.parametrize(
    "pattern", [r"(?:[\w.]+)+!", r"(a|a)*b", r"(a*)*b", r"(?:a|aa)+c", r"(\w+\.?)+\d"]
)
def test_patterns_that_backtrack_exponentially_run_in_linear_time(pattern: str) -> None:
    compiled = LinearPattern(pattern)
    assert not compiled.fullmatch("shop." + "a" * 5000)  # re: 2**5000 ways to fail
    for short in ("a" * 10 + "!", "a" * 10 + "b", "a" * 10 + "c", "a" * 10 + "1"):
        assert compiled.fullmatch(short) == (re.fullmatch(pattern, short) is not None)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", "backtracking"),
        (r"(?=a)a", "backtracking"),
        (r"(?<!b)a", "backtracking"),
        (r"(?>a+)", "backtracking"),
        (r"a++", "backtracking"),
        (r"(a)?(?(1)b|c)", "backtracking"),
        (r"(", "not a valid regular expression"),
        (r"a{100000}", "too large"),
        (f"(?:a{{{MAX_STATES // 4}}}){{5}}", "too large"),
    ],
)
def test_what_needs_backtracking_or_is_too_big_is_refused(pattern: str, why: str) -> None:
    with pytest.raises(PatternError, match=why):
        LinearPattern(pattern)


def test_the_work_of_one_pattern_is_bounded() -> None:
    pattern = LinearPattern("(?:" + "|".join(f"a{{0,{n}}}" for n in range(60, 90)) + ")*b")
    with pytest.raises(PatternError, match="steps"):
        for _ in range(10_000):
            pattern.fullmatch("a" * 300 + "c")

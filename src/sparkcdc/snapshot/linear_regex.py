"""Whole-string matching of a Python regular expression in time linear in the text.

Signals name tables by regular expression, as Debezium's do, and a signal comes from
whoever may write to the signal file or topic. Python's ``re`` backtracks: a pattern like
``(?:[\\w.]+)+!`` takes exponential time on a table name, and the stream's planning with
it. Here the pattern is parsed by Python's own parser (so the syntax is exactly ``re``'s)
and run as a Thompson automaton: the set of states reachable after each character, at
most :data:`MAX_STATES` of them, so a match costs O(len(text) x states) whatever the
pattern. Whether a whole text matches is a question about the pattern's language, which
does not depend on how an engine searches it, so the answer is ``re.fullmatch``'s.

What needs backtracking to mean anything is refused (:class:`PatternError`):
back-references, look-ahead and look-behind, conditionals, atomic groups and possessive
repeats. Pure Python, no dependencies.
"""

from __future__ import annotations

import re
import re._constants as sre  # type: ignore[import-not-found]  # re's own (3.11+)
import re._parser as sre_parse  # type: ignore[import-not-found]
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Most automaton states one pattern may have: ``a{1000}`` takes 1000, so counted
#: repeats are what this bounds.
MAX_STATES = 5_000
#: Most state visits one pattern may spend over all its matches (about a second of Python):
#: a signal's pattern is matched against every captured table's name.
MAX_WORK = 2_000_000

Predicate = Callable[[str], bool]
#: A zero-width condition on the text at a position: (text, position) -> holds.
Assertion = Callable[[str, int], bool]


class PatternError(ValueError):
    """The pattern is not valid, or uses what a linear-time match cannot do."""


class InvalidPatternError(PatternError):
    """The text is no regular expression at all (``re`` would refuse it too)."""


@dataclass
class _State:
    kind: str  #: 'char', 'split', 'assert' or 'match'
    test: Any = None  #: a Predicate ('char') or an Assertion ('assert')
    out: list[int] = field(default_factory=list)


class LinearPattern:
    """A compiled pattern; :meth:`fullmatch` is ``re.fullmatch(pattern, text) is not None``."""

    def __init__(self, pattern: str) -> None:
        try:
            parsed = sre_parse.parse(pattern, 0)
        except (re.error, RecursionError, OverflowError) as exc:
            raise InvalidPatternError(f"not a valid regular expression: {exc}") from None
        self.pattern = pattern
        self._states: list[_State] = [_State("match")]
        #: State visits left (:data:`MAX_WORK`) and steps already taken, by the set of
        #: states and the character read (a lazily built deterministic automaton).
        self._work = MAX_WORK
        self._asserts = False
        self._steps: dict[tuple[tuple[int, ...], str], tuple[int, ...]] = {}
        try:
            self._start = self._sequence(list(parsed), parsed.state.flags, 0)
        except RecursionError:
            raise PatternError("the pattern is nested too deeply") from None

    def fullmatch(self, text: str) -> bool:
        """Whether all of ``text`` matches; :class:`PatternError` once the pattern has
        spent :data:`MAX_WORK` (over all its calls)."""
        current = self._closure([self._start], text, 0)
        for position, char in enumerate(text):
            key = (current, char)
            found = self._steps.get(key)
            if found is None:
                moved = [
                    state.out[0]
                    for index in current
                    if (state := self._states[index]).kind == "char" and state.test(char)
                ]
                found = self._closure(moved, text, position + 1)
                if not self._asserts and len(self._steps) < 10_000:
                    self._steps[key] = found  # without assertions, the text does not matter
            if not found:
                return False
            current = found
        return 0 in current

    # -- running ---------------------------------------------------------------------------

    def _closure(self, starts: Sequence[int], text: str, position: int) -> tuple[int, ...]:
        """The states reachable from ``starts`` without reading a character."""
        seen: set[int] = set()
        found: list[int] = []
        stack = list(reversed(starts))
        while stack:
            index = stack.pop()
            if index in seen:
                continue
            seen.add(index)
            self._work -= 1
            if self._work < 0:
                raise PatternError(
                    f"matching the pattern took more than {MAX_WORK:,} steps; use a simpler "
                    "one (or list the tables)"
                )
            state = self._states[index]
            if state.kind == "split":
                stack.extend(reversed(state.out))
            elif state.kind == "assert":
                if state.test(text, position):
                    stack.append(state.out[0])
            else:
                found.append(index)
        return tuple(found)

    # -- building (continuation style: each piece is built in front of what follows it) --

    def _add(self, kind: str, test: Any = None, out: Sequence[int] = ()) -> int:
        if len(self._states) >= MAX_STATES:
            raise PatternError(
                f"the pattern is too large (over {MAX_STATES} states; counted repeats such "
                "as {1000} count each repetition)"
            )
        self._states.append(_State(kind, test, list(out)))
        return len(self._states) - 1

    def _sequence(self, items: list[tuple[Any, Any]], flags: int, then: int) -> int:
        for op, value in reversed(items):
            then = self._item(op, value, flags, then)
        return then

    def _item(self, op: Any, value: Any, flags: int, then: int) -> int:
        if op is sre.LITERAL:
            return self._add("char", _literal(value, flags), [then])
        if op is sre.NOT_LITERAL:
            same = _literal(value, flags)
            return self._add("char", lambda c: not same(c), [then])
        if op is sre.ANY:
            dotall = bool(flags & re.DOTALL)
            return self._add("char", (lambda c: True) if dotall else (lambda c: c != "\n"), [then])
        if op is sre.IN:
            return self._add("char", _set(value, flags), [then])
        if op is sre.SUBPATTERN:
            _, add, remove, body = value
            return self._sequence(list(body), (flags | add) & ~remove, then)
        if op is sre.BRANCH:
            return self._add("split", out=[self._sequence(list(b), flags, then) for b in value[1]])
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):  # greediness cannot change a whole match
            return self._repeat(value, flags, then)
        if op is sre.AT:
            self._asserts = True
            return self._add("assert", _at(value, flags), [then])
        raise PatternError(
            f"'{str(op).lower()}' needs backtracking; back-references, look-arounds, "
            "conditionals, atomic groups and possessive repeats are not supported here"
        )

    def _repeat(self, value: Any, flags: int, then: int) -> int:
        low, high, body = value
        items = list(body)
        if high is sre.MAXREPEAT:  # a loop: into the body and back, or on
            loop = self._add("split")
            self._states[loop].out = [self._sequence(items, flags, loop), then]
            then = loop
        else:
            for _ in range(int(high) - int(low)):  # optional copies, innermost last
                then = self._add("split", out=[self._sequence(items, flags, then), then])
        for _ in range(int(low)):
            then = self._sequence(items, flags, then)
        return then


def _literal(code: int, flags: int) -> Predicate:
    char = chr(code)
    if not flags & re.IGNORECASE:
        return lambda c: c == char
    return lambda c: c == char or _fold(c) == _fold(char)


def _fold(char: str) -> str:
    return char.lower() if len(char.lower()) == 1 else char


def _set(items: list[tuple[Any, Any]], flags: int) -> Predicate:
    negate = bool(items) and items[0][0] is sre.NEGATE
    tests: list[Predicate] = []
    for op, value in items[1:] if negate else items:
        if op is sre.LITERAL:
            tests.append(_literal(value, flags))
        elif op is sre.RANGE:
            tests.append(_range(value, flags))
        elif op is sre.CATEGORY:
            tests.append(_category(value, flags))
        else:
            raise PatternError(f"'{str(op).lower()}' in a character set is not supported")

    def member(c: str) -> bool:
        return any(test(c) for test in tests) != negate

    return member


def _range(bounds: tuple[int, int], flags: int) -> Predicate:
    low, high = bounds
    if not flags & re.IGNORECASE:
        return lambda c: low <= ord(c) <= high
    return lambda c: any(low <= ord(v) <= high for v in {c, _fold(c), c.upper()} if len(v) == 1)


def _category(category: Any, flags: int) -> Predicate:
    ascii_only = bool(flags & re.ASCII)

    def word(c: str) -> bool:
        if ascii_only:
            return c.isascii() and (c.isalnum() or c == "_")
        return c.isalnum() or c == "_"

    def digit(c: str) -> bool:
        return c.isdecimal() and (c.isascii() or not ascii_only)

    def space(c: str) -> bool:
        return c in " \t\n\r\f\v" if ascii_only else c.isspace()

    tests: dict[Any, Predicate] = {
        sre.CATEGORY_WORD: word,
        sre.CATEGORY_NOT_WORD: lambda c: not word(c),
        sre.CATEGORY_DIGIT: digit,
        sre.CATEGORY_NOT_DIGIT: lambda c: not digit(c),
        sre.CATEGORY_SPACE: space,
        sre.CATEGORY_NOT_SPACE: lambda c: not space(c),
    }
    if category not in tests:
        raise PatternError(f"'{str(category).lower()}' is not supported")
    return tests[category]


def _at(where: Any, flags: int) -> Assertion:
    multiline = bool(flags & re.MULTILINE)
    word = _category(sre.CATEGORY_WORD, flags)

    def boundary(text: str, i: int) -> bool:
        before = i > 0 and word(text[i - 1])
        after = i < len(text) and word(text[i])
        return before != after

    tests: dict[Any, Assertion] = {
        sre.AT_BEGINNING_STRING: lambda t, i: i == 0,
        sre.AT_BEGINNING: lambda t, i: i == 0 or (multiline and t[i - 1] == "\n"),
        sre.AT_END_STRING: lambda t, i: i == len(t),
        sre.AT_END: lambda t, i: (
            i == len(t)
            or (i == len(t) - 1 and t[i] == "\n")
            or (multiline and i < len(t) and t[i] == "\n")
        ),
        sre.AT_BOUNDARY: boundary,
        sre.AT_NON_BOUNDARY: lambda t, i: bool(t) and not boundary(t, i),  # as re: not in ""
    }
    if where not in tests:
        raise PatternError(f"'{str(where).lower()}' is not supported")
    return tests[where]

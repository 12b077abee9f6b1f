"""MySQL 8's accent- and case-sensitive UCA 9.0.0 collations (``utf8mb4_0900_as_ci``,
``utf8mb4_0900_as_cs``) as Python sort keys.

Their ``WEIGHT_STRING`` holds several levels, each a run of 16-bit weights, separated by a
zero unit: ``'A'`` under ``utf8mb4_0900_as_cs`` is ``1C47 0000 0020 0000 0008`` (base
letter, accent, case). The server compares two strings level by level, each as a weight
sequence where a shorter prefix sorts first, which is exactly the byte order of the whole
weight string, since the separator is below every weight. So a value's key is the
concatenation, level by level, of its characters' weights at that level, with a character
below every weight between levels; each character's weights per level come from the
server (collation.py reads one level; this module splits several). All ``_0900_``
collations are NO PAD: trailing spaces count, and no padding rule applies.

Exactness needs the same two things as one level: no contractions (checked over the same
candidate pairs, against the level-wise concatenation) and a known rule for the
supplementary planes (the implicit weight at level one, one constant weight per level
after it, as the server gives unassigned code points, plus the exceptions it lists).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sparkcdc.core.errors import SchemaError

#: The multi-level UCA 9.0.0 collations this module reproduces.
MULTI_LEVEL = re.compile(r"[a-z0-9]+_(?:[a-z]+_)?0900_as_c[is]")
_SUPPLEMENTARY = re.compile("[\U00010000-\U0010ffff]")
#: Between levels in a key: below every weight unit, as the server's zero separator.
SEPARATOR = "\x00"


def split_levels(weight: bytes) -> list[str]:
    """A multi-level weight string as one ``str`` per level (one character per 16-bit
    weight unit), split at the zero units that separate the levels."""
    units = [int.from_bytes(weight[i : i + 2], "big") for i in range(0, len(weight), 2)]
    levels: list[str] = [""]
    for unit in units:
        if unit == 0:
            levels.append("")
        else:
            levels[-1] += chr(unit)
    return levels


@dataclass
class LevelWeights:
    """A multi-level collation's weights, per level: ``bmp[level][cp]``; supplementary code
    points use ``exceptions[cp]`` (per level) or the rule: level one the UCA implicit
    weight, later levels ``rule_tail``."""

    collation: str
    bmp: list[list[str]]
    rule_tail: list[str]
    exceptions: dict[int, list[str]] = field(default_factory=dict)

    def key(self, value: str) -> str:
        """What compares (``<``, ``==``) like ``value`` under the collation."""
        if value.isascii() or not _SUPPLEMENTARY.search(value):
            return SEPARATOR.join(value.translate(table) for table in self.bmp)
        levels = ["" for _ in self.bmp]
        for character in value:
            for level, weights in enumerate(self._character(ord(character))):
                levels[level] += weights
        return SEPARATOR.join(levels)

    def _character(self, cp: int) -> list[str]:
        if cp < 0x10000:
            return [table[cp] for table in self.bmp]
        found = self.exceptions.get(cp)
        if found is not None:
            return found
        from sparkcdc.connectors.mysql.snapshot.collation import implicit_weight

        first = implicit_weight(cp)
        units = "".join(
            chr(int.from_bytes(first[i : i + 2], "big")) for i in range(0, len(first), 2)
        )
        return [units, *self.rule_tail]


def _literal(data: bytes) -> str:
    return f"X'{data.hex()}'" if data else "''"


def _inexact(coll: str, reason: str) -> SchemaError:
    return SchemaError(f"collation {coll} cannot be reproduced outside the server: {reason}")


def _weight_sql(cs: str, coll: str) -> str:
    """The SQL of code point ``cp``'s weight string (``cp`` a column of the query)."""
    return f"WEIGHT_STRING(CONVERT(CHAR(cp USING utf32) USING {cs}) COLLATE {coll})"


def extract_levels(conn: Any, cs: str, coll: str, bmp_sql: str, holds: str) -> LevelWeights:
    """Read a multi-level collation's weights from the server; SchemaError if inexact.
    ``bmp_sql`` yields ``cp`` over the BMP, ``holds`` tells whether the charset holds it
    (collation.py's generators)."""
    from sparkcdc.connectors.mysql.server.connection import query

    raw = {
        int(cp): bytes(w)
        for cp, w in query(
            conn, f"SELECT cp, {_weight_sql(cs, coll)} FROM ({bmp_sql}) t WHERE {holds}"
        )
    }
    if any(len(w) % 2 for w in raw.values()):
        raise _inexact(coll, "its weights are not 16-bit units")
    split = {cp: split_levels(w) for cp, w in raw.items()}
    count = len(split[0x20])
    if count < 2 or any(len(levels) != count for levels in split.values()):
        raise _inexact(coll, "its characters do not all have the same number of weight levels")
    unknown = split[ord("?")]
    bmp = [[split.get(cp, unknown)[level] for cp in range(0x10000)] for level in range(count)]
    _check_no_contractions(conn, cs, coll, split, count)
    rule_tail, exceptions = _supplementary_weights(conn, cs, coll, count)
    return LevelWeights(coll, bmp, rule_tail, exceptions)


def _check_no_contractions(
    conn: Any, cs: str, coll: str, split: dict[int, list[str]], count: int
) -> None:
    """Raise unless every candidate pair's weights are the level-wise concatenation of its
    characters' (a contraction would make a key built per character wrong)."""
    from sparkcdc.connectors.mysql.server.connection import query
    from sparkcdc.connectors.mysql.snapshot.collation import _CONTRACTION_CANDIDATES

    candidates = [cp for lo, hi in _CONTRACTION_CANDIDATES for cp in range(lo, hi + 1)]
    levels = [f"l{i}" for i in range(count)]
    rows = " UNION ALL ".join(
        f"SELECT {cp} AS cp, "
        + ", ".join(
            f"{_literal(b''.join(ord(u).to_bytes(2, 'big') for u in split[cp][i]))} AS l{i}"
            for i in range(count)
        )
        for cp in candidates
        if cp in split
    )
    chars = (
        f"SELECT cp, CONVERT(CHAR(cp USING utf32) USING {cs}) AS ch, {', '.join(levels)} "
        f"FROM ({rows}) s"
    )
    expected = ", X'0000', ".join(f"x.{name}, y.{name}" for name in levels)
    mismatches = query(
        conn,
        f"SELECT x.cp, y.cp FROM ({chars}) x, ({chars}) y WHERE NOT "
        f"(WEIGHT_STRING(CONCAT(x.ch, y.ch) COLLATE {coll}) <=> CONCAT({expected})) LIMIT 5",
    )
    if mismatches:
        shown = ", ".join(f"U+{int(a):04X} U+{int(b):04X}" for a, b in mismatches)
        raise _inexact(
            coll, f"its weights depend on neighbouring characters (contractions), e.g. for {shown}"
        )


def _supplementary_weights(
    conn: Any, cs: str, coll: str, count: int
) -> tuple[list[str], dict[int, list[str]]]:
    """The supplementary planes' rule (implicit at level one, one constant tail for the
    rest: the tail's levels after one) and the characters the server weighs otherwise."""
    from sparkcdc.connectors.mysql.server.connection import query
    from sparkcdc.connectors.mysql.snapshot.collation import (
        _IMPLICIT_SQL,
        _RULE_PROBES,
        _SUPPLEMENTARY_PLANES,
        MAX_SUPPLEMENTARY_EXCEPTIONS,
        implicit_weight,
    )

    weight = _weight_sql(cs, coll)
    probes = {
        int(cp): bytes(w)
        for cp, w in query(
            conn,
            f"SELECT cp, {weight} FROM ("
            + " UNION ALL ".join(f"SELECT {cp} AS cp" for cp in _RULE_PROBES)
            + ") t",
        )
    }
    tails = {w[4:] for w in probes.values()}
    if len(tails) != 1 or any(w[:4] != implicit_weight(cp) for cp, w in probes.items()):
        raise _inexact(coll, "no known rule gives the weights of supplementary characters")
    tail = tails.pop()
    found = query(
        conn,
        f"SELECT cp, w FROM (SELECT cp, {weight} AS w FROM ({_SUPPLEMENTARY_PLANES}) t) u "
        f"WHERE NOT (w <=> CONCAT({_IMPLICIT_SQL}, {_literal(tail)})) "
        f"LIMIT {MAX_SUPPLEMENTARY_EXCEPTIONS + 1}",
    )
    if len(found) > MAX_SUPPLEMENTARY_EXCEPTIONS:
        raise _inexact(
            coll,
            f"more than {MAX_SUPPLEMENTARY_EXCEPTIONS} supplementary characters have their own "
            "weights",
        )
    exceptions = {int(cp): split_levels(bytes(w)) for cp, w in found}
    if any(len(levels) != count for levels in exceptions.values()):
        raise _inexact(coll, "supplementary characters have another number of weight levels")
    return split_levels(tail)[1:], exceptions  # the tail starts with level one's end

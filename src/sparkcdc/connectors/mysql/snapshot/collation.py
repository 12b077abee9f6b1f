"""String collations as Python sort keys, read from the server's own weight tables.

Which rows a chunk's ``WHERE k >= lo AND k < hi`` returns is decided by the server's
collation, so Python must order (and equate) string keys of binlog events the same way.
Re-implementing collations in Python would drift from the server (versions, tailorings,
MariaDB quirks), so the weights are read from the server instead, once per process and
collation: ``WEIGHT_STRING`` of every BMP code point in one query, and of the
supplementary planes as a rule plus the exceptions to it (an implicit-weight formula, the
code point itself, or one weight for all, e.g. U+FFFD under ``utf8mb4_general_ci``).

A value's key is then its characters' weights concatenated (``str.translate`` over a table
of weight strings, one ``str`` character per weight unit), made PAD SPACE aware by
:func:`sparkcdc.snapshot.keys.pad_space_key` unless the collation is NO PAD. Expansions
(``ß`` = ``ss`` under ``utf8mb4_unicode_ci``) and ignorable characters (empty weights)
work by construction.

Concatenation is exact only for single-level collations without contractions (several
characters sharing one weight, such as ``ch`` in ``utf8mb4_czech_ci``). The extraction
checks the server for both, over all pairs of a few hundred candidate characters (Latin,
combining marks, Cyrillic, Thai, Lao, Tibetan, ...), and refuses the collation otherwise:
the caller then reports a clear error (chunk keys) or falls back to exact values (row
identity). A contraction between characters outside that candidate set, or one of three
or more characters whose two-character prefix is no contraction, would go unnoticed; the
root UCA collations (``utf8mb4_unicode_ci``, ``utf8mb4_unicode_520_ci``) have none.

The queries need no table and no database (code points come from a cross join of 16-row
derived tables), so the CDC account suffices. This module is pickled to Spark executors:
drivers are imported lazily and loaded tables never travel (see :class:`ServerCollation`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sparkcdc.connectors.mysql.config import MySqlSourceConfig
from sparkcdc.core.errors import SchemaError
from sparkcdc.snapshot.keys import pad_space, pad_space_key

log = logging.getLogger(__name__)

#: Charsets whose ``_bin`` collations order by Unicode code point: no server table needed.
CODE_POINT_CHARSETS = frozenset({"utf8mb4", "utf8mb3", "utf8", "ascii"})

#: More supplementary exceptions than this and the collation is refused (a full table of
#: the supplementary planes would cost ~100 MB per Python worker).
MAX_SUPPLEMENTARY_EXCEPTIONS = 200_000

_NAME = re.compile(r"[A-Za-z0-9_]+")
_SUPPLEMENTARY = re.compile("[\U00010000-\U0010ffff]")
_HEX_DIGITS = "(" + " UNION ALL ".join(f"SELECT {d} AS d" for d in range(16)) + ")"

#: ``cp`` over the BMP (0..0xFFFF) and over the supplementary planes (0x10000..0x10FFFF).
_BMP = (
    f"SELECT a.d * 4096 + b.d * 256 + c.d * 16 + e.d AS cp "
    f"FROM {_HEX_DIGITS} a, {_HEX_DIGITS} b, {_HEX_DIGITS} c, {_HEX_DIGITS} e"
)
_SUPPLEMENTARY_PLANES = (
    f"SELECT 65536 + p.d * 65536 + a.d * 4096 + b.d * 256 + c.d * 16 + e.d AS cp FROM "
    f"{_HEX_DIGITS} p, {_HEX_DIGITS} a, {_HEX_DIGITS} b, {_HEX_DIGITS} c, {_HEX_DIGITS} e"
)

#: Characters whose pairs are checked for contractions and multi-level weights: ASCII
#: letters and digits, Latin-1 and Latin Extended-A letters, the middle dot, combining
#: diacritics, Cyrillic, Arabic alef and its marks, Tamil, Sinhala, Thai, Lao, Tibetan
#: subjoined letters and vowels, Myanmar, Balinese and kana voicing marks.
_CONTRACTION_CANDIDATES = (
    (0x30, 0x39),
    (0x41, 0x5A),
    (0x61, 0x7A),
    (0xB7, 0xB7),
    (0xC0, 0x17F),
    (0x300, 0x36F),
    (0x400, 0x45F),
    (0x627, 0x627),
    (0x653, 0x655),
    (0xB92, 0xB92),
    (0xBC6, 0xBD7),
    (0xDD9, 0xDDF),
    (0xE01, 0xE4E),
    (0xE81, 0xECD),
    (0xF71, 0xF84),
    (0xFB2, 0xFB3),
    (0x1025, 0x102E),
    (0x1B05, 0x1B35),
    (0x3099, 0x309A),
)

#: Private-use code points of planes 15 and 16, which no Unicode version assigns weights to:
#: they reveal a collation's default rule for the supplementary planes.
_RULE_PROBES = (0xFFFFD, 0x10FFFD)


def implicit_weight(cp: int) -> bytes:
    """UCA implicit weight (base FBC0) of an unassigned code point, as the server writes it."""
    return ((0xFBC0 + (cp >> 15)) << 16 | (cp & 0x7FFF) | 0x8000).to_bytes(4, "big")


_IMPLICIT_SQL = "UNHEX(LPAD(HEX(((0xFBC0 + (cp >> 15)) << 16) | (cp & 0x7FFF) | 0x8000), 8, '0'))"


@dataclass
class CollationWeights:
    """One collation's weights, as read from the server; :meth:`key` is the sort key.

    ``bmp[cp]`` is the weight string of code point ``cp`` (one ``str`` character per
    weight unit); code points the charset cannot hold get the weight of ``'?'``, which is
    what the server converts them to. Supplementary code points use ``exceptions`` or else
    ``rule``: ``"implicit"``, ``"code_point"`` or a constant weight string.
    """

    collation: str
    pad: bool
    space: str
    bmp: list[str]
    rule: str
    exceptions: dict[int, str] = field(default_factory=dict)

    def key(self, value: str) -> str:
        """What compares (``<``, ``==``) like ``value`` under the collation."""
        weights = value.translate(self.bmp)
        if not value.isascii() and _SUPPLEMENTARY.search(value):
            # translate leaves characters past the table as they are; BMP weight units are
            # all <= U+FFFF (checked when loading), so what remains above is one of them
            weights = _SUPPLEMENTARY.sub(self._supplementary, weights)
        return pad_space_key(weights, self.space) if self.pad else weights

    def _supplementary(self, match: re.Match[str]) -> str:
        cp = ord(match.group())
        found = self.exceptions.get(cp)
        if found is not None:
            return found
        if self.rule == "code_point":
            return match.group()
        if self.rule == "implicit":
            return _units(implicit_weight(cp), 2)
        return self.rule


class Weights(Protocol):
    """A collation's sort key (one weight level: :class:`CollationWeights`; several:
    collation_levels.LevelWeights)."""

    def key(self, value: str) -> str: ...


def _units(weight: bytes, width: int) -> str:
    """A weight string as one character per ``width``-byte big-endian unit."""
    return "".join(
        chr(int.from_bytes(weight[i : i + width], "big")) for i in range(0, len(weight), width)
    )


def _name(value: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise SchemaError(f"unexpected {what} name {value!r}")
    return value


def extract_weights(conn: Any, charset: str, collation: str) -> Weights:
    """Read ``collation``'s weights from the server (about 0.5 s); SchemaError if inexact.
    MySQL 8's multi-level ``_0900_as_ci`` / ``_as_cs`` collations: collation_levels.py."""
    from sparkcdc.connectors.mysql.server.connection import query
    from sparkcdc.connectors.mysql.snapshot.collation_levels import MULTI_LEVEL, extract_levels

    cs = _name(charset, "charset")
    coll = _name(collation, "collation")
    value = f"CONVERT(CHAR(cp USING utf32) USING {cs})"
    # a code point the charset cannot hold converts to '?' and does not survive the round trip
    holds = f"CAST(CONVERT({value} USING utf32) AS BINARY) = CAST(CHAR(cp USING utf32) AS BINARY)"
    if MULTI_LEVEL.fullmatch(coll.lower()):
        return extract_levels(conn, cs, coll, _BMP, holds)
    weight = f"WEIGHT_STRING({value} COLLATE {coll})"

    def fail(reason: str) -> SchemaError:
        return SchemaError(
            f"collation {collation} cannot be reproduced outside the server: {reason}"
        )

    raw: dict[int, bytes] = {
        int(cp): bytes(w)
        for cp, w in query(conn, f"SELECT cp, {weight} FROM ({_BMP}) t WHERE {holds}")
    }
    space = raw.get(0x20, b"")
    width = len(space)
    if not width or any(len(w) % width for w in raw.values()):
        raise fail("its weights are not whole units of a space's (several weight levels?)")
    shared: dict[bytes, str] = {}  # identical weights share one object
    units = {cp: shared.get(w) or shared.setdefault(w, _units(w, width)) for cp, w in raw.items()}
    if any(u > "\uffff" for w in units.values() for u in w):
        raise fail("weights of the Basic Multilingual Plane exceed U+FFFF")
    unknown = units[ord("?")]
    bmp = [units.get(cp, unknown) for cp in range(0x10000)]

    mismatches = _contraction_pairs(conn, cs, coll)
    if mismatches:
        shown = ", ".join(f"U+{a:04X} U+{b:04X}" for a, b in mismatches)
        raise fail(
            "its weights depend on neighbouring characters (contractions or several weight "
            f"levels), e.g. for {shown}"
        )

    rule, exceptions = _supplementary_weights(conn, cs, coll, width)
    if isinstance(rule, bytes):
        rule = _units(rule, width)
    return CollationWeights(
        collation=collation,
        pad=not is_no_pad(collation),
        space=units[0x20],
        bmp=bmp,
        rule=rule,
        exceptions={cp: _units(w, width) for cp, w in exceptions.items()},
    )


def _contraction_pairs(conn: Any, cs: str, coll: str) -> list[tuple[int, int]]:
    """Pairs of candidate characters whose weight is not the concatenation of theirs.

    The candidates are listed literally: derived from the 64k-row generator, the server
    re-evaluates it for every pair (20 s instead of 0.2 s).
    """
    from sparkcdc.connectors.mysql.server.connection import query

    cps = " UNION ALL ".join(
        f"SELECT {cp} AS cp" for lo, hi in _CONTRACTION_CANDIDATES for cp in range(lo, hi + 1)
    )
    chars = (
        f"SELECT ch, WEIGHT_STRING(ch COLLATE {coll}) AS w, cp FROM "
        f"(SELECT cp, CONVERT(CHAR(cp USING utf32) USING {cs}) AS ch FROM ({cps}) s) t"
    )
    rows = query(
        conn,
        f"SELECT x.cp, y.cp FROM ({chars}) x, ({chars}) y "
        f"WHERE NOT (WEIGHT_STRING(CONCAT(x.ch, y.ch) COLLATE {coll}) <=> CONCAT(x.w, y.w)) "
        "LIMIT 5",
    )
    return [(int(x), int(y)) for x, y in rows]


def _supplementary_weights(
    conn: Any, cs: str, coll: str, width: int
) -> tuple[str | bytes, dict[int, bytes]]:
    """The default rule for code points above U+FFFF, and the code points that differ."""
    from sparkcdc.connectors.mysql.server.connection import query

    value = f"CONVERT(CHAR(cp USING utf32) USING {cs})"
    weight = f"WEIGHT_STRING({value} COLLATE {coll})"
    probes = query(
        conn,
        f"SELECT cp, {weight}, CAST(CONVERT({value} USING utf32) AS BINARY) = "
        f"CAST(CHAR(cp USING utf32) AS BINARY) FROM ("
        + " UNION ALL ".join(f"SELECT {cp} AS cp" for cp in _RULE_PROBES)
        + ") t",
    )
    samples = {int(cp): bytes(w) for cp, w, _ in probes}
    if not all(held for _, _, held in probes):
        # the charset has no supplementary characters (utf8mb3, latin1, ...): values never
        # hold them; give them the weight of '?' like any character it cannot hold
        ((unknown,),) = query(conn, f"SELECT WEIGHT_STRING(CONVERT('?' USING {cs}) COLLATE {coll})")
        return bytes(unknown), {}
    rule: str | bytes
    if len(set(samples.values())) == 1:
        rule = next(iter(samples.values()))
        expected, args = "%s", [rule]
    elif width >= 3 and all(w == cp.to_bytes(width, "big") for cp, w in samples.items()):
        rule, expected, args = "code_point", f"UNHEX(LPAD(HEX(cp), {2 * width}, '0'))", []
    elif width == 2 and all(w == implicit_weight(cp) for cp, w in samples.items()):
        rule, expected, args = "implicit", _IMPLICIT_SQL, []
    else:
        raise SchemaError(
            f"collation {coll} cannot be reproduced outside the server: no known rule gives "
            "the weights of supplementary characters"
        )
    rows = query(
        conn,
        f"SELECT cp, w FROM (SELECT cp, {weight} AS w FROM ({_SUPPLEMENTARY_PLANES}) t) u "
        f"WHERE NOT (w <=> {expected}) LIMIT {MAX_SUPPLEMENTARY_EXCEPTIONS + 1}",
        args,
    )
    if len(rows) > MAX_SUPPLEMENTARY_EXCEPTIONS:
        raise SchemaError(
            f"collation {coll} cannot be reproduced outside the server: more than "
            f"{MAX_SUPPLEMENTARY_EXCEPTIONS} supplementary characters have their own weights"
        )
    return rule, {int(cp): bytes(w) for cp, w in rows}


_loaded: dict[tuple[str, int, str, str], Weights | SchemaError] = {}
_loading = threading.Lock()


def load_weights(config: MySqlSourceConfig, charset: str, collation: str) -> Weights:
    """:func:`extract_weights` once per process and server (later calls are a dict look-up).

    Refusals are cached too, so a row-identity fallback does not query again for every key.
    """
    cache_key = (config.hostname, config.port, charset.lower(), collation.lower())
    found = _loaded.get(cache_key)
    if found is None:
        with _loading:
            found = _loaded.get(cache_key)
            if found is None:
                found = _extract(config, charset, collation)
                _loaded[cache_key] = found
    if isinstance(found, SchemaError):
        raise found
    return found


def _extract(config: MySqlSourceConfig, charset: str, collation: str) -> Weights | SchemaError:
    from sparkcdc.connectors.mysql.server.connection import connect, with_retries

    def attempt() -> Weights:
        conn = connect(config)
        try:
            return extract_weights(conn, charset, collation)
        finally:
            conn.close()

    try:
        what = f"reading the weights of collation {collation}"
        return with_retries(config, what, attempt, final=True)
    except SchemaError as exc:
        return exc


class ServerCollation:
    """Picklable sort-key function of a server collation (``KeyOrder.collate``).

    Pickles as (config, charset, collation) only: each process loads the table itself on
    first use, from the module cache, so no 64k-entry table travels with every task.
    Non-strings pass through unchanged.
    """

    __slots__ = ("_key", "charset", "collation", "config")

    def __init__(self, config: MySqlSourceConfig, charset: str, collation: str) -> None:
        self.config = config
        self.charset = charset
        self.collation = collation
        self._key: Callable[[str], str] | None = None

    def load(self) -> ServerCollation:
        """Load the weights now (raises SchemaError for collations that cannot be exact)."""
        if self._key is None:
            self._key = load_weights(self.config, self.charset, self.collation).key
        return self

    def __call__(self, value: Any) -> Any:
        key = self._key
        if key is None:
            key = self.load()._key
            assert key is not None
        return key(value) if isinstance(value, str) else value

    def __reduce__(self) -> tuple[Any, ...]:
        return (ServerCollation, (self.config, self.charset, self.collation))

    def __repr__(self) -> str:
        return f"ServerCollation({self.collation})"


def is_no_pad(collation: str) -> bool:
    """Whether trailing spaces count in comparisons (NO PAD): MariaDB names such collations
    ``*_nopad_*``; MySQL 8's UCA 9.0.0 collations (``utf8mb4_0900_ai_ci``,
    ``utf8mb4_de_pb_0900_as_cs``, ``utf8mb4_0900_bin``...) are all NO PAD."""
    name = collation.lower()
    return "_nopad_" in name or "_0900_" in name


def is_code_point_collation(charset: str | None, collation: str | None) -> bool:
    """Whether the collation orders by code point (``utf8mb4_bin``, ``utf8mb4_nopad_bin``,
    MySQL 8's ``utf8mb4_0900_bin``).

    ``latin1_bin`` is not: it orders by cp1252 byte, where ``€`` (0x80) precedes ``ÿ``.
    """
    cs, coll = (charset or "").lower(), (collation or "").lower()
    return cs in CODE_POINT_CHARSETS and coll in (f"{cs}_bin", f"{cs}_nopad_bin", f"{cs}_0900_bin")


def collation_key(
    config: MySqlSourceConfig, charset: str | None, collation: str | None
) -> Callable[[Any], Any] | None:
    """The sort key of a string column's values; None when ``str`` order already is exact.

    Loads server collations eagerly, so unsupported ones fail here with SchemaError.
    """
    if collation is None or charset is None:  # not a string column after all
        return None
    if is_code_point_collation(charset, collation):
        return None if is_no_pad(collation) else pad_space
    return ServerCollation(config, charset, collation).load()

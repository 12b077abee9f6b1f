"""Python key order and equality agree with the server's, collation by collation.

For each collation a table holds a few hundred random strings that stress the rules (case,
accents, expansions like ß, ignorable and control characters, tabs and trailing spaces
under PAD SPACE, emoji and other supplementary characters, the empty string). The server's
``ORDER BY``/``GROUP BY`` classes, its ``=`` and the rows of the production chunk query
must be exactly what ``chunk_key_order``/``row_key`` compute in Python.
"""

from __future__ import annotations

import itertools
import random
import uuid
import zlib
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import MySqlSourceConfig, parse_config
from sparkcdc.connectors.mysql.server.connection import connect, query
from sparkcdc.connectors.mysql.server.discovery import CapturedTable, describe_table
from sparkcdc.connectors.mysql.server.sql import quote_table
from sparkcdc.connectors.mysql.snapshot.chunk_query import chunk_query
from sparkcdc.connectors.mysql.snapshot.collation import ServerCollation
from sparkcdc.connectors.mysql.snapshot.keys import chunk_key_order, row_key
from sparkcdc.core.errors import SchemaError
from sparkcdc.core.table import TableId
from sparkcdc.embedded import EmbeddedMariaDB
from sparkcdc.embedded.binlog_server import BinlogServer
from sparkcdc.snapshot.chunks import Chunk
from sparkcdc.snapshot.keys import KeyOrder
from sparkcdc.snapshot.progress import TableProgress

#: (server flavour, charset, collation): MariaDB's, MySQL 8.0's (its default
#: ``utf8mb4_0900_ai_ci``, UCA 9.0.0 and NO PAD) and MySQL 5.7's.
COLLATIONS = [
    ("mysql8", "utf8mb4", "utf8mb4_0900_ai_ci"),
    ("mysql8", "utf8mb4", "utf8mb4_0900_as_cs"),
    ("mysql8", "utf8mb4", "utf8mb4_0900_as_ci"),
    ("mysql8", "utf8mb4", "utf8mb4_bin"),
    ("mysql8", "utf8mb4", "utf8mb4_general_ci"),
    ("mysql57", "utf8mb4", "utf8mb4_general_ci"),
    ("mysql57", "utf8mb4", "utf8mb4_unicode_ci"),
    ("mysql57", "utf8mb4", "utf8mb4_bin"),
]
COLLATIONS += [
    ("mariadb", charset, collation)
    for charset, collation in [
        ("utf8mb4", "utf8mb4_general_ci"),
        ("utf8mb4", "utf8mb4_unicode_ci"),
        ("utf8mb4", "utf8mb4_unicode_520_ci"),
        ("utf8mb4", "utf8mb4_bin"),
        ("utf8mb4", "utf8mb4_nopad_bin"),
        ("utf8mb4", "utf8mb4_general_nopad_ci"),
        ("utf8mb4", "utf8mb4_unicode_nopad_ci"),
        ("utf8mb4", "utf8mb4_unicode_520_nopad_ci"),
        ("utf8mb3", "utf8mb3_general_ci"),
        ("latin1", "latin1_swedish_ci"),
        ("latin1", "latin1_bin"),
        ("latin1", "latin1_swedish_nopad_ci"),
        ("latin1", "latin1_german1_ci"),
    ]
]

#: Pieces of random strings: letters in both cases, accents (precomposed and combining),
#: expansions and ligatures, spaces of several kinds, control and ignorable characters,
#: punctuation, CJK, the highest BMP code points and supplementary characters (emoji,
#: mathematical letters, Deseret with case pairs, a CJK Extension B ideograph).
PIECES = [
    *"aAbBeEsSzZ09",
    *"äÄàáÁéÉèÈêëîïñÑöÖøØåÅæÆœŒÿ€",
    "ß",
    "ss",
    "SS",
    "ﬁ",
    "a\u0300",
    "e\u0301",
    "\u0308",
    " ",
    "  ",
    "\t",
    "\n",
    "\x00",
    "\x01",
    "\x1f",
    "\u00a0",
    "\u3000",
    "\u200b",
    "\u00ad",
    "!",
    "_",
    "-",
    "~",
    "中",
    "\ufffd",
    "\uffee",
    "😀",
    "😁",
    "🂡",
    "𝔸",
    "𐐀",
    "𐐨",
    "𠀀",
    "\U000e0001",
]
TAILS = ["", "", "", " ", "  ", "\t", " \t", "\x00", " a", "\u00a0"]


def _holds(charset: str, text: str) -> bool:
    """Whether a column in ``charset`` stores ``text`` as it is (MySQL latin1 is cp1252)."""
    if charset == "latin1":
        try:
            text.encode("cp1252")
        except UnicodeEncodeError:
            return False
        return True
    return charset == "utf8mb4" or all(c <= "\uffff" for c in text)


def _random_strings(charset: str, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    pieces = [p for p in PIECES if _holds(charset, p)]
    out = ["", " ", "\t", "a", "A", "a ", "a\t", "a\t ", "ab", "a b", "a\u00a0"]
    for base in ("ss", "ß", "abc", "Abc", "ÄBC", "aBc  "):
        if _holds(charset, base):
            out.append(base)
    while len(out) < count:
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))
        text += rng.choice(TAILS)
        if rng.random() < 0.3:  # case variants of an earlier string
            other = rng.choice(out)
            text = rng.choice([other.upper(), other.lower(), other.swapcase(), other + " "])
        if _holds(charset, text) and len(text) <= 30:
            out.append(text)
    return out


def _config(mariadb: BinlogServer, db: str, table: str) -> MySqlSourceConfig:
    return parse_config({**mariadb.source_options(), "database-name": db, "table-name": table})


def _load(
    mariadb: BinlogServer, db: str, charset: str, collation: str, values: list[str]
) -> tuple[MySqlSourceConfig, CapturedTable, Any, list[tuple[int, str]]]:
    mariadb.execute(
        f"CREATE TABLE t (id INT PRIMARY KEY, k VARCHAR(40) CHARACTER SET {charset} "
        f"COLLATE {collation}, KEY (k))",
        database=db,
    )
    mariadb.execute(
        "INSERT INTO t VALUES " + ", ".join(["(%s, %s)"] * len(values)),
        [x for row in enumerate(values) for x in row],
        database=db,
    )
    config = _config(mariadb, db, "t")
    conn = connect(config)
    table = describe_table(conn, TableId(db, "t"), "k")
    stored = [
        (int(i), k) for i, k in query(conn, f"SELECT id, k FROM {quote_table(table.table_id)}")
    ]
    assert sorted(k for _, k in stored) == sorted(values), "the server stored other strings"
    return config, table, conn, stored


def _python_classes(order: KeyOrder, stored: list[tuple[int, str]]) -> list[list[int]]:
    """Ids grouped by equal keys, groups in key order (what GROUP BY k ORDER BY k gives)."""
    ranked = sorted(stored, key=lambda row: order.sort_key(row[1]))
    return [
        sorted(i for i, _ in group)
        for _, group in itertools.groupby(ranked, key=lambda row: order.sort_key(row[1]))
    ]


@pytest.mark.parametrize(("flavor", "charset", "collation"), COLLATIONS)
def test_order_equality_and_chunks_match_the_server(
    request: pytest.FixtureRequest, flavor: str, charset: str, collation: str
) -> None:
    binlog: BinlogServer = request.getfixturevalue(flavor)
    db = binlog.create_database(f"coll_{collation}_{uuid.uuid4().hex[:6]}")
    values = _random_strings(charset, 400, seed=zlib.crc32(collation.encode()))
    config, table, conn, stored = _load(binlog, db, charset, collation, values)
    try:
        order = chunk_key_order(table, config)
        t = quote_table(table.table_id)
        query(conn, "SET SESSION group_concat_max_len = 1000000")

        # order and ties: GROUP BY classes in ORDER BY order, read along the index on k
        # (a filesort is not always consistent with the collation's own comparison: under
        # latin1_swedish_nopad_ci it interleaves '' and '\x00', MariaDB 10.11)
        server = [
            sorted(int(i) for i in ids.split(","))
            for (ids,) in query(
                conn, f"SELECT GROUP_CONCAT(id) FROM {t} FORCE INDEX (k) GROUP BY k ORDER BY k"
            )
        ]
        python = _python_classes(order, stored)
        if server != python:  # show the first disagreement readably
            by_id = dict(stored)
            for s, p in zip(server, python, strict=False):
                assert [by_id[i] for i in s] == [by_id[i] for i in p]
        assert server == python

        # equality: the server's = on every pair
        equal_pairs = {
            (int(a), int(b))
            for a, b in query(conn, f"SELECT a.id, b.id FROM {t} a JOIN {t} b ON a.k = b.k")
        }
        keys = {i: order.sort_key(k) for i, k in stored}
        assert equal_pairs == {(a, b) for a in keys for b in keys if keys[a] == keys[b]}

        # order: the server's < on every pair (what chunk and cursor conditions use)
        less_pairs = {
            (int(a), int(b))
            for a, b in query(conn, f"SELECT a.id, b.id FROM {t} a JOIN {t} b ON a.k < b.k")
        }
        assert less_pairs == {(a, b) for a in keys for b in keys if keys[a] < keys[b]}

        # chunks and cursors: the production chunk query against in_chunk / emitted
        rng = random.Random(7)
        bounds: list[str | None] = [None, *(k for _, k in stored)]
        for _ in range(60):
            lo, hi = rng.choice(bounds), rng.choice(bounds)
            sql, args = chunk_query(table, Chunk(lo, hi))
            expected = sorted(int(row[0]) for row in query(conn, sql, args))
            assert sorted(i for i, k in stored if order.in_chunk(k, Chunk(lo, hi))) == expected
            cursor = rng.choice(bounds[1:])
            below = sorted(
                int(i) for (i,) in query(conn, f"SELECT id FROM {t} WHERE k < %s", [cursor])
            )
            progress = TableProgress(started=True, cursor=cursor)
            assert sorted(i for i, k in stored if order.emitted(k, progress)) == below
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("charset", "collation"),
    [
        ("utf8mb4", "utf8mb4_general_ci"),
        ("utf8mb4", "utf8mb4_unicode_520_ci"),
        ("utf8mb4", "utf8mb4_bin"),
        ("utf8mb4", "utf8mb4_nopad_bin"),
        ("latin1", "latin1_swedish_ci"),
        ("utf8mb4", "utf8mb4_czech_ci"),  # contractions: identified by exact value
    ],
)
def test_row_identity_follows_the_collation_of_string_keys(
    mariadb: EmbeddedMariaDB, mysql_db: str, charset: str, collation: str
) -> None:
    mariadb.execute(
        f"CREATE TABLE p (k VARCHAR(20) CHARACTER SET {charset} COLLATE {collation}, n INT, "
        "PRIMARY KEY (k, n))",
        database=mysql_db,
    )
    config = _config(mariadb, mysql_db, "p")
    conn = connect(config)
    try:
        table = describe_table(conn, TableId(mysql_db, "p"), None)
        key_of = row_key(table, config)
        values = _random_strings(charset, 120, seed=3)
        exact = collation == "utf8mb4_czech_ci"
        for a, b in itertools.combinations(values[:60], 2):
            ((same,),) = query(
                conn,
                f"SELECT CONVERT(%s USING {charset}) COLLATE {collation} = "
                f"CONVERT(%s USING {charset})",
                [a, b],
            )
            python_same = key_of((a, 1)) == key_of((b, 1))
            assert python_same == (a == b if exact else bool(same)), (a, b)
        assert key_of(("x", 1)) != key_of(("x", 2))
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("column", "problem"),
    [
        ("VARCHAR(10) COLLATE utf8mb4_czech_ci", "depend on neighbouring characters"),
        ("VARCHAR(10) COLLATE utf8mb4_danish_ci", "depend on neighbouring characters"),
        ("VARCHAR(10) COLLATE utf8mb4_uca1400_as_cs", "weight levels"),
        ("ENUM('b', 'a', 'c')", "not declared in text order"),
        ("SET('a', 'b')", "SET sorts by bit mask"),
    ],
)
def test_keys_that_cannot_be_ordered_exactly_are_refused(
    mariadb: EmbeddedMariaDB, mysql_db: str, column: str, problem: str
) -> None:
    mariadb.execute(f"CREATE TABLE r (k {column} PRIMARY KEY)", database=mysql_db)
    config = _config(mariadb, mysql_db, "r")
    conn = connect(config)
    try:
        table = describe_table(conn, TableId(mysql_db, "r"), None)
    finally:
        conn.close()
    with pytest.raises(SchemaError, match=problem) as caught:
        chunk_key_order(table, config)
    assert "scan.incremental.snapshot.chunk.key-column" in str(caught.value)


def test_enum_labels_in_text_order_are_ordered(mariadb: EmbeddedMariaDB, mysql_db: str) -> None:
    mariadb.execute("CREATE TABLE e (k ENUM('a', 'B', 'c') PRIMARY KEY)", database=mysql_db)
    config = _config(mariadb, mysql_db, "e")
    conn = connect(config)
    try:
        order = chunk_key_order(describe_table(conn, TableId(mysql_db, "e"), None), config)
    finally:
        conn.close()
    assert order.sort_key("a") < order.sort_key("B") < order.sort_key("c")


def test_server_collation_pickles_without_its_table(mariadb: EmbeddedMariaDB) -> None:
    import pickle

    config = _config(mariadb, "d", "t")
    collate = ServerCollation(config, "utf8mb4", "utf8mb4_unicode_ci").load()
    data = pickle.dumps(collate)
    assert len(data) < 4096
    again = pickle.loads(data)
    assert again("Straße") == collate("STRASSE  ")

"""Chunk splitting on awkward keys, against a real MariaDB, with writes between batches.

Each case snapshots a table in small chunks over several micro-batches while rows are
inserted, updated, re-keyed and deleted in between; the replayed changelog must equal the
table, with no duplicate insert and every pre-image/delete matching the emitted row.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded import EmbeddedMariaDB
from tests.support.changelog import ChangelogReplayer
from tests.support.inprocess import run_batches

Gen = Callable[[random.Random, int], Any]

CASES: dict[str, tuple[str, Gen, int]] = {
    # name: (key column DDL, key generator(rng, i), rows)
    "dense_int": ("k INT", lambda r, i: i, 400),
    "sparse_bigint": ("k BIGINT", lambda r, i: i * 10**12 + r.randrange(1000), 200),
    "unsigned_bigint_top": ("k BIGINT UNSIGNED", lambda r, i: 2**64 - 1 - i * 7, 300),
    "negative_int": ("k INT", lambda r, i: -(10**6) + i * 13, 300),
    "decimal": ("k DECIMAL(20,4)", lambda r, i: Decimal(i) / 7 + Decimal("-5000.5"), 300),
    "datetime": (
        "k DATETIME(6)",
        lambda r, i: dt.datetime(2020, 1, 1) + dt.timedelta(seconds=i * 3.5),
        300,
    ),
    "varbinary": ("k VARBINARY(16)", lambda r, i: r.randbytes(r.randint(1, 8)), 300),
    "varchar_bin": ("k VARCHAR(20) COLLATE utf8mb4_bin", lambda r, i: f"key-{r.random():.8f}", 300),
    "varchar_general_ci": ("k VARCHAR(20) COLLATE utf8mb4_general_ci", lambda r, i: mixed(r), 250),
    "varchar_unicode_ci": ("k VARCHAR(20) COLLATE utf8mb4_unicode_ci", lambda r, i: mixed(r), 250),
    "varchar_latin1_ci": (
        "k VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_swedish_ci",
        lambda r, i: mixed(r, "aAeéEÉsSß \t-"),
        250,
    ),
    "empty": ("k INT", lambda r, i: i, 0),
    "one_row": ("k INT", lambda r, i: i, 1),
}


def mixed(rng: random.Random, alphabet: str = "aAbBéÉßs \t-😀") -> str:
    """Strings that collide under case-insensitive, accent-insensitive and PAD SPACE rules."""
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))


def rows_of(rng: random.Random, gen: Gen, count: int) -> dict[Any, int]:
    keys: dict[Any, int] = {}
    i = 0
    while len(keys) < count and i < count * 50:
        keys.setdefault(gen(rng, i), rng.randrange(1000))
        i += 1
    return keys


def changer(
    mariadb: EmbeddedMariaDB, db: str, rng: random.Random, gen: Gen
) -> Callable[[int], None]:
    fresh = iter(range(10**6, 10**7))

    def between(batch: int) -> None:
        existing = [r[0] for r in mariadb.execute("SELECT k FROM t", database=db)]
        with mariadb.connect(db) as conn, conn.cursor() as cur:
            for _ in range(rng.randint(1, 6)):
                op = rng.random()
                if op < 0.3 or not existing:
                    cur.execute("INSERT IGNORE INTO t VALUES (%s, %s)", (gen(rng, next(fresh)), 1))
                elif op < 0.6:
                    cur.execute("UPDATE t SET v = v + 1 WHERE k = %s", (rng.choice(existing),))
                elif op < 0.8:
                    new = gen(rng, next(fresh))
                    cur.execute(
                        "UPDATE IGNORE t SET k = %s WHERE k = %s", (new, rng.choice(existing))
                    )
                else:
                    cur.execute("DELETE FROM t WHERE k = %s", (rng.choice(existing),))

    return between


def normal(value: Any) -> Any:
    return bytes(value) if isinstance(value, bytearray) else value


@pytest.mark.parametrize("case", sorted(CASES))
def test_chunking_awkward_keys_replays_to_the_table(
    mariadb: EmbeddedMariaDB, mysql_db: str, case: str
) -> None:
    ddl, gen, count = CASES[case]
    rng = random.Random(case)
    mariadb.execute(f"CREATE TABLE t ({ddl} PRIMARY KEY, v INT)", database=mysql_db)
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT IGNORE INTO t VALUES (%s, %s)", list(rows_of(rng, gen, count).items())
        )
        cur.execute("ANALYZE TABLE t")
    config = parse_config(
        {
            **mariadb.source_options(),
            "database-name": mysql_db,
            "table-name": "t",
            "scan.incremental.snapshot.chunk.size": "23",
            "scan.incremental.snapshot.rows-per-partition": "50",
        }
    )
    replayer = ChangelogReplayer(lambda r: normal(r["k"]), ["k", "v"])
    source = MySqlCdcSource(config)
    batches: list[int] = []

    def on_batch(rows: list[dict[str, Any]]) -> None:
        batches.append(len(rows))
        replayer.apply_batch({**r, "k": normal(r["k"])} for r in rows)

    run_batches(source, None, on_batch, max_rows=60, between=changer(mariadb, mysql_db, rng, gen))
    expected = {
        normal(k): (normal(k), v)
        for k, v in mariadb.execute("SELECT k, v FROM t", database=mysql_db)
    }
    assert replayer.state == expected
    if count > 100:
        assert len(batches) > 3


def test_composite_key_with_long_runs_of_one_chunk_key_value(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    """The chunk key (first primary key column) repeats far more often than a chunk holds."""
    mariadb.execute(
        "CREATE TABLE t (tenant INT, id INT, v INT, PRIMARY KEY (tenant, id))", database=mysql_db
    )
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, %s, 0)", [(i % 4, i) for i in range(600)])
    config = parse_config(
        {
            **mariadb.source_options(),
            "database-name": mysql_db,
            "table-name": "t",
            "scan.incremental.snapshot.chunk.size": "40",
        }
    )
    replayer = ChangelogReplayer(lambda r: (r["tenant"], r["id"]), ["tenant", "id", "v"])
    rng = random.Random(5)

    def between(_: int) -> None:
        with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
            cur.execute("UPDATE t SET v = v + 1 WHERE id = %s", (rng.randrange(600),))
            cur.execute(
                "UPDATE IGNORE t SET tenant = %s WHERE id = %s",
                (rng.randrange(6), rng.randrange(600)),
            )
            cur.execute(
                "INSERT IGNORE INTO t VALUES (%s, %s, 9)",
                (rng.randrange(6), rng.randrange(600, 700)),
            )

    run_batches(MySqlCdcSource(config), None, replayer.apply_batch, max_rows=100, between=between)
    expected = {
        (a, b): (a, b, v) for a, b, v in mariadb.execute("SELECT * FROM t", database=mysql_db)
    }
    assert replayer.state == expected


def test_nullable_non_key_chunk_column_keeps_nulls_in_the_first_chunk(
    mariadb: EmbeddedMariaDB, mysql_db: str
) -> None:
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY, grp INT NULL, v INT)", database=mysql_db)
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO t VALUES (%s, %s, 0)",
            [(i, None if i % 5 == 0 else i % 37) for i in range(400)],
        )
    config = parse_config(
        {
            **mariadb.source_options(),
            "database-name": mysql_db,
            "table-name": "t",
            "scan.incremental.snapshot.chunk.size": "30",
            "scan.incremental.snapshot.chunk.key-column": "GRP",
        }
    )
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "grp", "v"])
    rng = random.Random(9)

    def between(_: int) -> None:  # moves rows across chunks, into and out of NULL
        with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
            for _ in range(4):
                grp = None if rng.random() < 0.3 else rng.randrange(40)
                cur.execute(
                    "UPDATE t SET grp = %s, v = v + 1 WHERE id = %s", (grp, rng.randrange(400))
                )

    run_batches(MySqlCdcSource(config), None, replayer.apply_batch, max_rows=60, between=between)
    expected = {i: (i, g, v) for i, g, v in mariadb.execute("SELECT * FROM t", database=mysql_db)}
    assert replayer.state == expected


@pytest.mark.parametrize(
    ("ddl", "values"),
    [
        ("k FLOAT", [1.0, 1.0, 1.0, 1.0, 1.0000001, 2.0, 2.5, -3.25]),  # 6-digit text rounding
        (
            "k DECIMAL(50,2)",
            [
                Decimal(v)
                for v in ("20", "100", "-7.5", "99999999999999999999999999999999999999999.99", "3")
            ],
        ),
        (
            "k TIME(1)",
            ["99:00:00", "100:00:00", "-01:00:00", "-02:00:00.5", "00:00:00.1", "838:59:59"],
        ),
    ],
)
def test_chunk_keys_whose_text_misorders(
    mariadb: EmbeddedMariaDB, mysql_db: str, ddl: str, values: list[Any]
) -> None:
    """Keys the server orders as numbers/durations but Python sees as text (or rounds)."""
    mariadb.execute(f"CREATE TABLE t (id INT PRIMARY KEY, {ddl}, v INT)", database=mysql_db)
    with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO t VALUES (%s, %s, 0)", [(i, v) for i, v in enumerate(values * 3)]
        )
    config = parse_config(
        {
            **mariadb.source_options(),
            "database-name": mysql_db,
            "table-name": "t",
            "scan.incremental.snapshot.chunk.size": "2",
            "scan.incremental.snapshot.chunk.key-column": "k",
        }
    )
    replayer = ChangelogReplayer(lambda r: r["id"], ["id", "k", "v"])
    rng = random.Random(ddl)

    def between(_: int) -> None:  # touch rows already emitted (low keys) and not yet
        with mariadb.connect(mysql_db) as conn, conn.cursor() as cur:
            for _ in range(3):
                cur.execute(
                    "UPDATE t SET v = v + 1 WHERE id = %s", (rng.randrange(len(values) * 3),)
                )

    run_batches(MySqlCdcSource(config), None, replayer.apply_batch, max_rows=4, between=between)
    expected = {
        i: (i, k, v) for i, k, v in mariadb.execute("SELECT id, k, v FROM t", database=mysql_db)
    }
    got = {i: row for i, row in replayer.state.items()}
    assert set(got) == set(expected)
    for i, (_, _k, v) in expected.items():  # keys travel as the source's own text forms
        assert got[i][2] == v, (i, got[i], expected[i])

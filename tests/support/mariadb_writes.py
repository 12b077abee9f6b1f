"""The random writer and table state on the harness's MariaDB or MySQL
(tests/support/random_writer.py): the statements are valid on both."""

from __future__ import annotations

from typing import Any

from sparkcdc.embedded.binlog_server import BinlogServer
from tests.support.random_writer import RandomWriter, WriteStatements

MARIADB_WRITES = WriteStatements(
    upsert=(
        "INSERT INTO orders (id, name, qty) VALUES (%s, %s, %s) "
        "ON DUPLICATE KEY UPDATE qty = qty + 1"
    ),
    update="UPDATE orders SET qty = qty + 1, name = CONCAT(name, 'u') WHERE id = %s",
    move="UPDATE IGNORE orders SET id = %s WHERE id = %s",
    delete="DELETE FROM orders WHERE id = %s",
    audit="INSERT INTO audit (note) VALUES (%s)",
)


def mariadb_writer(mariadb: BinlogServer, db: str, seed: int, key_space: int) -> RandomWriter:
    """Random writes to ``db.orders`` and ``db.audit`` (tables of the ``orders`` fixture)."""
    return RandomWriter(lambda: mariadb.connect(db), MARIADB_WRITES, seed, key_space)


def numbers(first: int, last: int) -> str:
    """A derived table of the integers ``seq`` from ``first`` to ``last`` (at most 10,000),
    for ``INSERT ... SELECT`` on MySQL as on MariaDB (which alone has ``seq_1_to_N``)."""
    digits = "(" + " UNION ALL ".join(f"SELECT {d} AS d" for d in range(10)) + ")"
    return (
        f"(SELECT a.d * 1000 + b.d * 100 + c.d * 10 + e.d AS seq FROM {digits} a, {digits} b, "
        f"{digits} c, {digits} e HAVING seq BETWEEN {first} AND {last}) AS numbers"
    )


def fill_orders(server: BinlogServer, db: str, rows: int, first: int = 0) -> None:
    """``rows`` rows into ``db.orders (id, name, qty)``, ids ``first...`` (MySQL has no
    ``seq_1_to_N`` tables)."""
    with server.connect(db) as conn, conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO orders (id, name, qty) VALUES (%s, %s, %s)",
            [(i, f"n{i}", i % 7) for i in range(first, first + rows)],
        )


def table_state(mariadb: BinlogServer, db: str, table: str) -> dict[Any, tuple[Any, ...]]:
    """A table's rows by their first column (the key)."""
    return {r[0]: tuple(r) for r in mariadb.execute(f"SELECT * FROM `{table}`", database=db)}

"""Property (issue 61): random column DDL interleaved with random row changes, on servers
that write no column names into row events (MariaDB ``NO_LOG``, MySQL 8.0 ``MINIMAL``):
after every batch, replaying the envelope's changelog (each column change applied to the
replayed rows as a consumer applies it) equals the table on the server. Every row is
decoded by position with the schema history, so a history that drifts from the server by
one column shows up as values under the wrong names."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.source import MySqlCdcSource
from sparkcdc.embedded.binlog_server import BinlogServer
from tests.conftest import on_flavors
from tests.support.inprocess import run_batches

mariadb = on_flavors("mariadb", "mysql8")

TYPES = ("INT", "VARCHAR(8)")

#: One step: (what, a number choosing a column or key, a number choosing a place or value).
steps = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "drop", "rename", "move", "insert", "insert", "update", "update", "delete"]
        ),
        st.integers(0, 50),
        st.integers(0, 10_000),
    ),
    min_size=4,
    max_size=12,
)


@dataclass
class Model:
    """The table's columns (name, type) in order, as the test changed it."""

    columns: list[tuple[str, str]] = field(default_factory=lambda: [("id", "INT")])
    keys: list[int] = field(default_factory=list)
    made: int = 0

    def others(self) -> list[tuple[str, str]]:
        return [c for c in self.columns if c[0] != "id"]

    def place(self, n: int, exclude: str = "") -> str:
        """FIRST, AFTER a column, or '' (last)."""
        names = [c for c, _ in self.columns if c != exclude]
        choice = n % (len(names) + 2)
        if choice == len(names):
            return ""
        if choice == len(names) + 1:
            return " FIRST"
        return f" AFTER `{names[choice]}`"

    def value(self, kind: str, n: int) -> Any:
        return n if kind == "INT" else f"v{n % 997}"


def statement(model: Model, what: str, a: int, b: int) -> tuple[str, Any] | None:
    """The SQL of one step and what it does to replayed rows (None: nothing to do)."""
    others = model.others()
    if what == "add":
        model.made += 1
        name, kind = f"c{model.made}", TYPES[b % 2]
        sql = f"ALTER TABLE t ADD COLUMN `{name}` {kind}{model.place(a)}"
        return sql, ("add", name)
    if what in ("drop", "rename", "move") and not others:
        return None
    if what == "drop":
        name = others[a % len(others)][0]
        return f"ALTER TABLE t DROP COLUMN `{name}`", ("drop", name)
    if what == "rename":
        name, kind = others[a % len(others)]
        model.made += 1
        new = f"c{model.made}"
        return f"ALTER TABLE t CHANGE `{name}` `{new}` {kind}", ("rename", name, new)
    if what == "move":
        name, kind = others[a % len(others)]
        where = model.place(b, exclude=name) or " FIRST"
        return f"ALTER TABLE t MODIFY `{name}` {kind}{where}", None
    if what == "insert":
        key = 1 + max(model.keys, default=0)
        names = ", ".join(f"`{c}`" for c, _ in model.columns)
        values = [
            key if c == "id" else model.value(k, b + i) for i, (c, k) in enumerate(model.columns)
        ]
        marks = ", ".join(["%s"] * len(values))
        return f"INSERT INTO t ({names}) VALUES ({marks})", ("values", values, "insert", key)
    if not model.keys:
        return None
    key = model.keys[a % len(model.keys)]
    if what == "delete":
        return "DELETE FROM t WHERE id = %s", ("values", [key], "delete", key)
    if not others:
        return None
    name, kind = others[b % len(others)]
    value = model.value(kind, a * 31 + b)
    return f"UPDATE t SET `{name}` = %s WHERE id = %s", ("values", [value, key], "update", key)


def apply(model: Model, sql: str, effect: Any, server: BinlogServer, db: str) -> None:
    """Run the step on the server; keep the model's columns and keys as the server's."""
    if effect is not None and effect[0] == "values":
        server.execute(sql, tuple(effect[1]), database=db)
        if effect[2] == "insert":
            model.keys.append(effect[3])
        elif effect[2] == "delete":
            model.keys.remove(effect[3])
        return
    server.execute(sql, database=db)
    rows = server.execute(
        "SELECT COLUMN_NAME, UPPER(COLUMN_TYPE) FROM information_schema.COLUMNS "
        "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION",
        (db,),
    )
    model.columns = [(str(n), "INT" if str(k).startswith("INT") else "VARCHAR(8)") for n, k in rows]


def evolve(state: dict[int, dict[str, Any]], effect: Any) -> None:
    """A column change applied to the replayed rows, as an evolving consumer applies it."""
    if effect is None or effect[0] == "values":
        return
    for image in state.values():  # rows read again by the change's batch have it already
        if effect[0] == "add":
            image.setdefault(effect[1], None)
        elif effect[0] == "drop":
            image.pop(effect[1], None)
        elif effect[1] in image:
            image[effect[2]] = image.pop(effect[1])


def table_now(server: BinlogServer, db: str) -> dict[int, dict[str, Any]]:
    with server.connect(db) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM t")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        return {row["id"]: row for row in rows}


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=steps)
# a MODIFY that leaves the column where it was, twice: the read stopped at the second as
# at a change the planning scan missed (found by this test in CI)
@example(plan=[("add", 0, 0), ("move", 0, 0), ("move", 0, 0)])
# the same with a VARCHAR column, which the statement gives no character set: the read's
# own check, not knowing the table's default, took it for a change (found in a full run)
@example(plan=[("add", 0, 7653), ("move", 0, 0), ("move", 0, 0)])
def test_replay_equals_the_table_after_every_batch(
    mariadb: BinlogServer, plan: list[tuple[str, int, int]]
) -> None:
    db = mariadb.create_database(f"hist_{uuid.uuid4().hex[:10]}")
    mariadb.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=db)
    mariadb.execute("CREATE TABLE u (id INT PRIMARY KEY)", database=db)  # the envelope
    options = {
        **mariadb.source_options(),
        "database-name": db,
        "table-name": "t|u",
        "server-id": "6400-6410",
    }
    cdc = MySqlCdcSource(parse_config(options))
    model = Model()
    state: dict[int, dict[str, Any]] = {}

    def replay(rows: list[dict[str, Any]]) -> None:
        for r in sorted(rows, key=lambda r: r["_commit_version"]):
            if r["table_name"] != "t":
                continue
            if r["before"]:
                state.pop(json.loads(r["before"])["id"], None)
            if r["after"]:
                image = json.loads(r["after"])
                state[image["id"]] = image

    try:
        offset = run_batches(cdc, None, replay)
        for what, a, b in plan:
            step = statement(model, what, a, b)
            if step is None:
                continue
            sql, effect = step
            apply(model, sql, effect, mariadb, db)
            offset = run_batches(cdc, offset, replay)
            evolve(state, effect)
            assert state == table_now(mariadb, db), (sql, plan)
    finally:
        cdc.close()
        mariadb.execute(f"DROP DATABASE `{db}`")

"""The PostgreSQL fixture of the conformance suite (connector ``postgres``).

Each test's namespace is a schema of one shared database, with its own replication slot
and publication (named after the schema), dropped when the test ends: a server has a
limited number of slots.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from sparkcdc.embedded import EmbeddedPostgres
from tests.conformance.connector import BadOption, ConnectorUnderTest, TypeCase
from tests.support.postgres_writes import POSTGRES_WRITES
from tests.support.random_writer import RandomWriter


class PostgresConnector(ConnectorUnderTest):
    name = "postgres"

    def __init__(self, server: EmbeddedPostgres, database: str, upsert: bool = False) -> None:
        """``upsert``: tables keep REPLICA IDENTITY DEFAULT and are captured with
        ``changelog-mode: upsert`` (their changelog then replays by key)."""
        self.server, self.database = server, database
        self.by_key = upsert
        self.identity = "DEFAULT" if upsert else "FULL"

    def connect(self, namespace: str) -> Any:
        return self.server.connect(self.database, options=f"-c search_path={namespace}")

    def create_database(self, stem: str) -> str:
        self.server.execute(f'CREATE SCHEMA "{stem}"', dbname=self.database)
        return stem

    def drop(self, namespace: str) -> None:
        slot = slot_name(namespace)
        self.server.execute(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
            "WHERE slot_name LIKE %s AND active_pid IS NOT NULL",
            (slot + "%",),
            dbname=self.database,
        )
        self.server.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
            "WHERE slot_name = %s",
            (slot,),
            dbname=self.database,
        )
        self.server.execute(f'DROP PUBLICATION IF EXISTS "{slot}"', dbname=self.database)

    def execute(self, namespace: str, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        with self.connect(namespace) as conn, conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall()) if cur.description else []

    def options(self, namespace: str, tables: str) -> dict[str, str]:
        return {
            "hostname": self.server.host,
            "port": str(self.server.port),
            "username": self.server.user,
            "password": self.server.password,
            "database-name": self.database,
            "schema-name": re.escape(namespace),
            "table-name": tables,
            "slot.name": slot_name(namespace),
            "changelog-mode": "upsert" if self.by_key else "all",
        }

    def proxied(self, options: dict[str, str], port: int) -> dict[str, str]:
        return {**options, "port": str(port)}

    def create_orders(self, namespace: str, rows: int) -> None:
        self.execute(
            namespace, "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)"
        )
        self.execute(namespace, "CREATE TABLE audit (id SERIAL PRIMARY KEY, note TEXT)")
        for table in ("orders", "audit"):
            self.execute(namespace, f"ALTER TABLE {table} REPLICA IDENTITY {self.identity}")
        with self.connect(namespace) as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO orders VALUES (%s, %s, %s)",
                [(i * 3, f"name{i}", i % 50) for i in range(rows)],
            )

    def writer(self, namespace: str, seed: int, key_space: int) -> RandomWriter:
        return RandomWriter(lambda: self.connect(namespace), POSTGRES_WRITES, seed, key_space)

    def create_table(self, namespace: str, definition: str) -> None:
        self.execute(namespace, f"CREATE TABLE {definition}")
        name = definition.split("(", 1)[0].strip()
        self.execute(namespace, f"ALTER TABLE {name} REPLICA IDENTITY {self.identity}")

    def create_commented_table(self, namespace: str) -> None:
        self.create_table(namespace, "noted (id INT PRIMARY KEY, note VARCHAR(20), plain INT)")
        self.execute(namespace, "COMMENT ON TABLE noted IS 'the ''noted'' table'")
        self.execute(namespace, "COMMENT ON COLUMN noted.id IS 'the key'")
        self.execute(namespace, "COMMENT ON COLUMN noted.note IS 'it''s \\ a note'")

    def type_cases(self) -> list[TypeCase]:
        return [
            TypeCase("c_small", "SMALLINT", (-32768, 0, 32767)),
            TypeCase("c_big", "BIGINT", (-(2**63), 2**63 - 1)),
            TypeCase("c_exact", "NUMERIC(30,10)", (Decimal("-12345678901234567890.0123456789"),)),
            TypeCase("c_any", "NUMERIC", ("NaN", "1e-30", "123456789012345678901234567890.5")),
            TypeCase("c_real", "DOUBLE PRECISION", (-1.5e300, 0.1, float("nan"), float("inf"))),
            TypeCase("c_single", "REAL", (0.1, -3.4e38)),
            TypeCase("c_flag", "BOOLEAN", (True, False)),
            TypeCase("c_text", "VARCHAR(32)", ("", "naïve ☃ 𝄞", "a  ", 'q"u,o{t}e\\')),
            TypeCase("c_fixed", "CHAR(4)", ("a", "")),
            TypeCase("c_blob", "BYTEA", (b"", b"\x00\xff\x10")),
            TypeCase("c_day", "DATE", ("0001-01-01", "2024-02-29", "infinity")),
            TypeCase("c_moment", "TIMESTAMP(6)", ("2024-02-29 23:59:59.999999", "-infinity")),
            TypeCase(
                "c_instant", "TIMESTAMPTZ", ("1970-01-01 00:00:01+00", "2038-01-19 03:14:07.5+02")
            ),
            TypeCase("c_forever", "TIMESTAMPTZ", ("infinity", "-infinity")),
            TypeCase("c_clock", "TIME(2)", ("12:34:56.78",)),
            TypeCase("c_net", "INET", ("192.168.0.1", "10.0.0.0/8")),
            TypeCase("c_oid", "OID", (0, 4294967295)),
            TypeCase("c_bits", "BIT VARYING(8)", ("", "1011")),
            TypeCase("c_cash", "MONEY", ("12.34", "-0.5")),
            TypeCase("c_span", "INTERVAL", ("1 year 2 mons -3 days 04:05:06.7",)),
            TypeCase("c_id", "UUID", ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",)),
            TypeCase("c_doc", "JSONB", ('{"a": [1, 2.5, null]}',)),
            TypeCase("c_list", "INTEGER[]", ([1, None, 3], [])),
            TypeCase("c_words", "TEXT[]", (["a,b", 'c"d', None, "NULL", ""],)),
        ]

    def bad_options(self) -> list[BadOption]:
        return [
            BadOption({"scan.startup.mode": "sometimes"}, r"'scan\.startup\.mode'.*initial"),
            BadOption({"scan.incremental.snapshot.chunk.size": "0"}, r"chunk\.size.*>= 1"),
            BadOption({"port": "http"}, r"'port'.*integer"),
            BadOption({"slot.name": "Bad-Name"}, r"'slot\.name'.*lower-case"),
            BadOption(
                {"decoding.plugin.name": "decoderbufs"}, r"'decoding\.plugin\.name'.*pgoutput"
            ),
            BadOption({"no.such.option": "1"}, r"unknown option 'no\.such\.option'"),
            BadOption({"changelog-mode": "retract"}, r"'changelog-mode'.*all, upsert"),
        ]

    def wrong_password(self, options: dict[str, str], password: str) -> dict[str, str]:
        return {**options, "password": password}


def slot_name(namespace: str) -> str:
    """The namespace's replication slot (and publication): a valid slot name."""
    return re.sub(r"[^a-z0-9_]", "_", namespace.lower())[:40]

"""The MariaDB fixture of the conformance suite (connector ``mysql``)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from sparkcdc.embedded import EmbeddedMariaDB
from tests.conformance.connector import BadOption, ConnectorUnderTest, TypeCase
from tests.support.mariadb_writes import MARIADB_WRITES
from tests.support.random_writer import RandomWriter


class MariaDbConnector(ConnectorUnderTest):
    name = "mysql"

    def __init__(self, server: EmbeddedMariaDB, extra: dict[str, str] | None = None) -> None:
        """``extra``: options every test's source gets (a variant of the connector)."""
        self.server = server
        self.extra = dict(extra or {})

    def create_database(self, stem: str) -> str:
        return self.server.create_database(stem)

    def execute(self, namespace: str, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        return self.server.execute(sql, args, database=namespace)

    def options(self, namespace: str, tables: str) -> dict[str, str]:
        return {
            **self.server.source_options(),
            "database-name": re.escape(namespace),
            "table-name": tables,
            **self.extra,
        }

    def proxied(self, options: dict[str, str], port: int) -> dict[str, str]:
        return {**options, "port": str(port)}

    def create_orders(self, namespace: str, rows: int) -> None:
        self.execute(
            namespace, "CREATE TABLE orders (id BIGINT PRIMARY KEY, name VARCHAR(64), qty INT)"
        )
        self.execute(namespace, "CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, note TEXT)")
        with self.server.connect(namespace) as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO orders VALUES (%s, %s, %s)",
                [(i * 3, f"name{i}", i % 50) for i in range(rows)],
            )

    def writer(self, namespace: str, seed: int, key_space: int) -> RandomWriter:
        return RandomWriter(lambda: self.server.connect(namespace), MARIADB_WRITES, seed, key_space)

    def type_cases(self) -> list[TypeCase]:
        return [
            TypeCase("c_small", "SMALLINT", (-32768, 0, 32767)),
            TypeCase("c_big", "BIGINT UNSIGNED", (0, 2**64 - 1)),
            TypeCase("c_exact", "DECIMAL(30,10)", (Decimal("-12345678901234567890.0123456789"),)),
            TypeCase("c_real", "DOUBLE", (-1.5e300, 0.1, 3.0)),
            TypeCase("c_flag", "BOOLEAN", (True, False)),
            TypeCase("c_text", "VARCHAR(32) CHARACTER SET utf8mb4", ("", "naïve ☃ 𝄞", "a  ")),
            TypeCase("c_blob", "VARBINARY(16)", (b"", b"\x00\xff\x10")),
            TypeCase("c_day", "DATE", ("1000-01-01", "2024-02-29", "9999-12-31")),
            TypeCase("c_moment", "DATETIME(6)", ("2024-02-29 23:59:59.999999",)),
            TypeCase(
                "c_instant",
                "TIMESTAMP(3) NULL",
                ("1970-01-01 00:00:01.000", "2038-01-19 03:14:07.999"),
            ),
            TypeCase("c_clock", "TIME(2)", ("-838:59:59.00", "12:34:56.78")),
            TypeCase("c_doc", "JSON", ('{"a": [1, 2.5, null]}',)),
            TypeCase("c_choice", "ENUM('x','y')", ("x", "y")),
        ]

    def create_commented_table(self, namespace: str) -> None:
        self.create_table(
            namespace,
            "noted (id INT PRIMARY KEY COMMENT 'the key', "
            "note VARCHAR(20) COMMENT 'it''s \\\\ a note', plain INT) "
            "COMMENT='the ''noted'' table'",
        )

    logs_comments = True

    def add_commented_column(self, namespace: str) -> None:
        self.execute(namespace, "ALTER TABLE noted ADD COLUMN later INT COMMENT 'added later'")

    def option_type_cases(self) -> list[tuple[dict[str, str], list[TypeCase]]]:
        # Flink CDC's treat-tinyint1-as-boolean.enabled: false: TINYINT(1) and BOOLEAN
        # are TINYINT numbers (unsigned: a short)
        numbers = [
            TypeCase("c_flag", "BOOLEAN", (1, 0, -128, 127)),
            TypeCase("c_tiny1", "TINYINT(1)", (5, -3, 0, 1)),
            TypeCase("c_tiny1u", "TINYINT(1) UNSIGNED", (0, 255, 2, 1)),
            TypeCase("c_tiny", "TINYINT", (-128, 127, 1, 0)),
        ]
        return [({"treat-tinyint1-as-boolean.enabled": "false"}, numbers)]

    def bad_options(self) -> list[BadOption]:
        return [
            BadOption({"scan.startup.mode": "sometimes"}, r"'scan\.startup\.mode'.*initial"),
            BadOption({"scan.incremental.snapshot.chunk.size": "0"}, r"chunk\.size.*>= 1"),
            BadOption({"port": "http"}, r"'port'.*integer"),
            BadOption({"scan.startup.mode": "timestamp"}, r"scan\.startup\.timestamp-millis"),
            BadOption({"no.such.option": "1"}, r"unknown option 'no\.such\.option'"),
        ]

    def wrong_password(self, options: dict[str, str], password: str) -> dict[str, str]:
        return {**options, "password": password}

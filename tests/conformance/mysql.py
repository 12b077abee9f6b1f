"""The MySQL 8.0 fixture of the conformance suite (connector ``mysql``, Oracle's server):
what MariaDB cannot prove here. MySQL reports no binlog position of a consistent snapshot,
so every chunk is placed by a high watermark; its defaults are kept (``utf8mb4_0900_ai_ci``,
``caching_sha2_password``, binary JSON in row events, ``binlog_row_metadata=MINIMAL``: rows
named by the schema history)."""

from __future__ import annotations

from decimal import Decimal

from sparkcdc.embedded import EmbeddedMySQL
from tests.conformance.connector import TypeCase
from tests.conformance.mariadb import MariaDbConnector


class MySqlConnector(MariaDbConnector):
    """The MariaDB fixture's statements (valid on both) against a MySQL server."""

    def __init__(self, server: EmbeddedMySQL, extra: dict[str, str] | None = None) -> None:
        super().__init__(server, extra)  # type: ignore[arg-type]

    def type_cases(self) -> list[TypeCase]:
        return [
            TypeCase("c_small", "SMALLINT", (-32768, 0, 32767)),
            TypeCase("c_big", "BIGINT UNSIGNED", (0, 2**64 - 1)),
            TypeCase("c_exact", "DECIMAL(30,10)", (Decimal("-12345678901234567890.0123456789"),)),
            TypeCase("c_real", "DOUBLE", (-1.5e300, 0.1, 3.0)),
            TypeCase("c_flag", "BOOLEAN", (True, False)),
            TypeCase("c_text", "VARCHAR(32)", ("", "naïve ☃ 𝄞", "a  ")),
            TypeCase("c_blob", "VARBINARY(16)", (b"", b"\x00\xff\x10")),
            TypeCase("c_day", "DATE", ("1000-01-01", "2024-02-29", "9999-12-31")),
            TypeCase("c_moment", "DATETIME(6)", ("2024-02-29 23:59:59.999999",)),
            TypeCase(
                "c_instant",
                "TIMESTAMP(3) NULL",
                ("1970-01-01 00:00:01.000", "2038-01-19 03:14:07.999"),
            ),
            TypeCase("c_clock", "TIME(2)", ("-838:59:59.00", "12:34:56.78")),
            # MySQL's own JSON: binary in the row events, not text as on MariaDB
            TypeCase("c_doc", "JSON", ('{"a": [1, 2.5, null]}', '"text"', "[]")),
            TypeCase("c_choice", "ENUM('x','y')", ("x", "y")),
            TypeCase("c_year", "YEAR", (1901, 2024, 2155)),
        ]

"""JDBC sink options and SQL without servers: every bad option named with the valid values,
passwords never shown, and the DDL/DML each dialect generates."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DecimalType,
    FloatType,
    LongType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from sparkcdc.core.errors import OptionError, SchemaError
from sparkcdc.core.secret import Secret
from sparkcdc.core.table import TableId
from sparkcdc.sinks.jdbc.config import JdbcSinkConfig, JdbcUrl, TableName
from sparkcdc.sinks.jdbc.csv_blocks import CsvForm
from sparkcdc.sinks.jdbc.dialects import MySqlTarget, PostgresTarget, Target

PASSWORD = "s3cr3t-Pa55w0rd!"
BASE = {"url": "postgresql://db.example.com/shop", "username": "u", "password": PASSWORD}


def error(**changes: object) -> str:
    with pytest.raises(OptionError) as info:
        JdbcSinkConfig.from_options({**BASE, **changes})
    message = str(info.value)
    assert message.startswith("jdbc sink: "), message
    assert PASSWORD not in message
    return message


def test_defaults_and_yaml_scalars() -> None:
    config = JdbcSinkConfig.from_options({**BASE, "Batch-Size": 500})
    assert config.url == JdbcUrl("postgresql", "db.example.com", 5432, "shop")
    assert config.batch_size == 500
    assert config.table_name == TableName(None, "{table}")
    assert config.offsets_table == TableName(None, "sparkcdc_offsets")
    assert config.password == Secret(PASSWORD)
    assert PASSWORD not in repr(config)
    assert pickle.loads(pickle.dumps(config)) == config


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("jdbc:mysql://h:3307/d", JdbcUrl("mysql", "h", 3307, "d")),
        ("mariadb://h/d", JdbcUrl("mysql", "h", 3306, "d")),
        ("postgres://[::1]:6000/d", JdbcUrl("postgresql", "::1", 6000, "d")),
    ],
)
def test_url_forms(url: str, expected: JdbcUrl) -> None:
    assert JdbcSinkConfig.from_options({**BASE, "url": url}).url == expected


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("oracle://h/d", "unknown scheme"),
        ("postgresql://h", "database name is missing"),
        ("mysql://h:99999/d", "port"),
        ("mysql:///d", "host is missing"),
        ("mysql://h/d?ssl=true", "query parameters"),
    ],
)
def test_bad_urls_name_the_option_and_forms(url: str, why: str) -> None:
    message = error(url=url)
    assert "option 'url'" in message and why in message
    assert "postgresql://host[:port]/database" in message


def test_credentials_in_the_url_are_refused_and_hidden() -> None:
    message = error(url=f"postgresql://u:{PASSWORD}@h/d")
    assert "use 'username' and 'password'" in message
    assert "postgresql://******@h/d" in message


@pytest.mark.parametrize(
    "password", ["pa/ss@word", "p@ss/w:rd", "a@b@c", "/leading", "trailing@", "x?y#z@"]
)
@pytest.mark.parametrize("url", ["{s}u:{p}@h:5432/d", "jdbc:{s}u:{p}@h/d", "{s}u:{p}@h"])
def test_passwords_with_url_syntax_never_show(password: str, url: str) -> None:
    """A password holding '/', '@', ':' or '?' ends no redaction early (#63)."""
    for scheme in ("postgresql://", "mysql://"):
        with pytest.raises(OptionError) as info:
            JdbcSinkConfig.from_options({**BASE, "url": url.format(s=scheme, p=password)})
        message = str(info.value)
        assert password not in message
        shown = message.split("invalid value '", 1)[1].split("': ", 1)[0]
        assert shown.removeprefix("jdbc:").startswith(f"{scheme}******@h"), shown
        assert "credentials in the URL are not accepted" in message


def test_unknown_and_missing_options() -> None:
    message = error(**{"batch_size": "10"})
    assert "unknown option 'batch_size'" in message and "Did you mean 'batch-size'?" in message
    assert "offsets-table" in message and "table-name" in message
    with pytest.raises(OptionError, match="option 'username' is required"):
        JdbcSinkConfig.from_options({"url": BASE["url"]})
    assert "option 'batch-size'" in error(**{"batch-size": "0"})


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("{schema}.{table}", "unknown placeholder '{schema}'"),
        ("a.b.c", "'qualifier.name'"),
        ("{table", "expected '}'"),
        (".{table}", "'qualifier.name'"),
    ],
)
def test_bad_table_patterns(pattern: str, why: str) -> None:
    message = error(**{"table-name": pattern})
    assert "option 'table-name'" in message and why in message
    assert "{database}" in message


def test_table_patterns_resolve_with_qualifiers() -> None:
    config = JdbcSinkConfig.from_options({**BASE, "table-name": "cdc_{database}.{table}_v1"})
    assert config.table_name.resolve("shop", "orders") == ("cdc_shop", "orders_v1")
    assert "no placeholders" in error(**{"offsets-table": "{table}"})
    offsets = JdbcSinkConfig.from_options({**BASE, "offsets-table": "meta.offs"}).offsets_table
    assert offsets == TableName("meta", "offs")


# ------------------------------------------------------------------------------------------


def struct(*columns: tuple[str, DataType]) -> StructType:
    """A StructType without a SparkSession (``fromDDL`` needs one)."""
    result = StructType()
    for name, data_type in columns:
        result = result.add(name, data_type)
    return result


SCHEMA = struct(
    ("region", StringType()),
    ("id", LongType()),
    ("raw", BinaryType()),
    ("amount", DecimalType(38, 10)),
    ("at", TimestampType()),
    ("local", TimestampNTZType()),
    ("f", FloatType()),
    ("ok", BooleanType()),
    ("b", ByteType()),
)
TARGET = Target(TableId("shop", "t"), "s", "t%x", SCHEMA, ("region", "id", "raw"))


def dialects() -> tuple[PostgresTarget, MySqlTarget]:
    config = JdbcSinkConfig.from_options(BASE)
    return PostgresTarget(config), MySqlTarget(config)


def test_postgres_sql() -> None:
    pg, _ = dialects()
    assert pg.create_table_sql(TARGET) == (
        'CREATE TABLE "s"."t%%x" (\n  "region" text NOT NULL,\n  "id" bigint NOT NULL,\n'
        '  "raw" bytea NOT NULL,\n  "amount" numeric(38,10),\n  "at" timestamptz,\n'
        '  "local" timestamp,\n  "f" real,\n  "ok" boolean,\n  "b" smallint,\n'
        '  PRIMARY KEY ("region", "id", "raw")\n)'
    )
    upsert = pg.upsert_sql(TARGET, 2)
    assert upsert.count("(%s, %s, %s, %s, %s, %s, %s, %s, %s)") == 2
    assert upsert.endswith(
        'ON CONFLICT ("region", "id", "raw") DO UPDATE SET "amount" = EXCLUDED."amount", '
        '"at" = EXCLUDED."at", "local" = EXCLUDED."local", "f" = EXCLUDED."f", '
        '"ok" = EXCLUDED."ok", "b" = EXCLUDED."b"'
    )
    assert pg.delete_sql(TARGET, 2) == (
        'DELETE FROM "s"."t%%x" WHERE ("region", "id", "raw") IN ((%s, %s, %s), (%s, %s, %s))'
    )
    assert pg.rows_per_statement(100) == 655  # PostgreSQL's 65535 parameters


def test_mysql_sql_and_key_column_sizes() -> None:
    _, my = dialects()
    ddl = my.create_table_sql(TARGET)
    # Two variable-length key parts share InnoDB's 3072 index bytes after the BIGINT.
    assert "`region` VARCHAR(382) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL" in ddl
    assert "`raw` VARBINARY(1528) NOT NULL" in ddl
    assert "`amount` DECIMAL(38,10)" in ddl and "`at` DATETIME(6)" in ddl
    assert "`f` FLOAT" in ddl and "`ok` BOOLEAN" in ddl and "`b` TINYINT" in ddl
    assert ddl.endswith(") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
    assert "ON DUPLICATE KEY UPDATE `amount` = VALUES(`amount`)" in my.upsert_sql(TARGET, 1)
    key_only = Target(TableId("a", "b"), "s", "k", struct(("k", StringType())), ("k",))
    assert "VARCHAR(768)" in my.create_table_sql(key_only)
    assert my.upsert_sql(key_only, 1).endswith("ON DUPLICATE KEY UPDATE `k` = VALUES(`k`)")
    assert pg_key_only_does_nothing(key_only)


def test_mysql_load_statement_unhexes_binary_and_quotes_names_and_file() -> None:
    _, my = dialects()
    odd = Target(
        TableId("a", "b"),
        "s`1",
        "t%x",
        struct(("id", LongType()), ("r`aw", BinaryType()), ("n", StringType())),
        ("id",),
    )
    sql = my._load_sql(odd, "/tmp/sparkcdc-load-a'b%/0.csv")
    assert sql == (
        "LOAD DATA LOCAL INFILE '/tmp/sparkcdc-load-a''b%%/0.csv' IGNORE INTO TABLE "
        "`s``1`.`t%%x` CHARACTER SET utf8mb4 FIELDS TERMINATED BY ',' OPTIONALLY "
        "ENCLOSED BY '\"' ESCAPED BY '' LINES TERMINATED BY '\\n' (`id`, @c1, `n`) "
        "SET `r``aw` = UNHEX(@c1)"
    )
    assert (sql % ()).startswith("LOAD DATA LOCAL INFILE '/tmp/sparkcdc-load-a''b%/0.csv'")


def test_csv_forms_tell_null_from_empty_and_write_what_each_target_reads() -> None:
    """The CSV text per target family (``csv_blocks``' executor side): NULL unquoted
    (empty for PostgreSQL, the word for MySQL, where the quoted word stays a string),
    quotes doubled, instants in UTC (with ``Z``, or naive), booleans, 32-bit floats."""
    import pyarrow as pa

    from sparkcdc.sinks.jdbc.csv_blocks import MYSQL_CSV, POSTGRES_CSV, _write_csv

    batch = pa.RecordBatch.from_arrays(
        [
            pa.array(['a "q",\\', "", None, "NULL"]),
            pa.array([0, 1_700_000_000_123_456, None, -1], pa.timestamp("us", "Europe/Paris")),
            pa.array([True, False, None, True]),
            pa.array([3.4028234663852886e38, 0.1, None, -0.0], pa.float32()),
        ],
        ["c0", "c1", "c2", "c3"],
    )

    def text(form: CsvForm) -> list[str]:
        (block,) = list(_write_csv(iter([batch]), form))
        assert block.column(1).to_pylist() == [4]
        written: bytes = block.column(0)[0].as_py()
        return written.decode().splitlines()

    assert text(MYSQL_CSV) == [
        '"a ""q"",\\","1970-01-01 00:00:00.000000","1","3.4028234663852886e+38"',
        '"","2023-11-14 22:13:20.123456","0","0.10000000149011612"',
        "NULL,NULL,NULL,NULL",
        '"NULL","1969-12-31 23:59:59.999999","1","-0"',
    ]
    assert text(POSTGRES_CSV) == [
        '"a ""q"",\\","1970-01-01 00:00:00.000000Z","true","3.4028235e+38"',
        '"","2023-11-14 22:13:20.123456Z","false","0.1"',
        ",,,",
        '"NULL","1969-12-31 23:59:59.999999Z","true","-0"',
    ]


def test_an_upsert_of_rows_read_again_leaves_kept_columns_alone() -> None:
    """A row read again carries NULL where the target keeps a column its table lost: an
    update leaves those columns as they are (an insert still writes every column)."""
    pg, my = dialects()
    keep = ("amount", "at", "local", "f", "ok")
    upsert = pg.upsert_sql(TARGET, 1, keep)
    assert upsert.startswith('INSERT INTO "s"."t%%x" ("region", "id", "raw", "amount"')
    assert upsert.endswith('DO UPDATE SET "b" = EXCLUDED."b"')
    assert pg.upsert_sql(TARGET, 1, (*keep, "b")).endswith("DO NOTHING")
    assert my.upsert_sql(TARGET, 1, keep).endswith("ON DUPLICATE KEY UPDATE `b` = VALUES(`b`)")
    # nothing left to update: the first key column, to itself (not a kept first column)
    first_kept = Target(
        TableId("a", "b"), "s", "t", struct(("d", StringType()), ("k", LongType())), ("k",)
    )
    assert my.upsert_sql(first_kept, 1, ("d",)).endswith("UPDATE `k` = VALUES(`k`)")


def pg_key_only_does_nothing(target: Target) -> bool:
    pg, _ = dialects()
    return pg.upsert_sql(target, 1).endswith('ON CONFLICT ("k") DO NOTHING')


def test_unsupported_types_are_named() -> None:
    pg, my = dialects()
    schema = struct(("id", LongType()), ("tags", ArrayType(StringType())))
    target = Target(TableId("shop", "t"), None, "t", schema, ("id",))
    for dialect in (pg, my):
        with pytest.raises(SchemaError, match=r"column 'tags' has Spark type 'array<string>'"):
            dialect.create_table_sql(target)


def test_connection_errors_scrub_the_password() -> None:
    pg, _ = dialects()
    error = pg.connection_error(RuntimeError(f"bad password {PASSWORD} for u"))
    assert PASSWORD not in str(error) and "******" in str(error)
    assert "postgresql://db.example.com:5432/shop" in str(error)

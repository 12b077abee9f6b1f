"""``treat-tinyint1-as-boolean.enabled``: one decision (types.reads_tinyint1_as_boolean)
that every MySQL type mapping follows, without a server (the conformance suite reads the
same values from the snapshot and the binlog of MariaDB, MySQL 8.0 and 5.7)."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pytest

from sparkcdc.connectors.mysql.binlog.ddl_columns import alter_table
from sparkcdc.connectors.mysql.binlog.ddl_rewrites import keeps_values
from sparkcdc.connectors.mysql.config import parse_config
from sparkcdc.connectors.mysql.dialect import with_tinyint1_option
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.connectors.mysql.server.types import (
    MySqlColumn,
    arrow_type,
    binlog_converter,
    reads_tinyint1_as_boolean,
    snapshot_converter,
    value_family,
)
from sparkcdc.connectors.mysql.snapshot.keys import chunk_key_order
from sparkcdc.connectors.mysql.snapshot.native_reader import Kind, column_kind
from sparkcdc.core.errors import SchemaError, SourceConfigurationError
from sparkcdc.core.table import TableId

OPTIONS = {"hostname": "h", "username": "u", "password": "p", "tables": "d.t"}


def tinyint1(boolean: bool, unsigned: bool = False, name: str = "flag") -> MySqlColumn:
    column_type = "tinyint(1) unsigned" if unsigned else "tinyint(1)"
    return MySqlColumn(name, 2, "tinyint", column_type, unsigned, tinyint1_boolean=boolean)


def table(*columns: MySqlColumn) -> CapturedTable:
    key = MySqlColumn("id", 1, "int", "int(11)", nullable=False, primary_key=True)
    flag = columns[0].tinyint1_boolean if columns else True
    key = dataclasses.replace(key, tinyint1_boolean=flag)
    return CapturedTable(TableId("shop", "t"), (key, *columns), ("id",), "id")


def test_the_option_defaults_to_flink_cdcs_boolean_and_parses() -> None:
    assert parse_config(OPTIONS).tinyint1_boolean is True
    off = {**OPTIONS, "treat-tinyint1-as-boolean.enabled": "false"}
    assert parse_config(off).tinyint1_boolean is False


def test_tinyint1_is_boolean_by_default_and_a_tinyint_number_otherwise() -> None:
    assert reads_tinyint1_as_boolean(tinyint1(True))
    assert arrow_type(tinyint1(True)) == pa.bool_()
    from_snapshot, from_binlog = (
        snapshot_converter(tinyint1(True)),
        binlog_converter(tinyint1(True)),
    )
    assert from_snapshot is not None and from_snapshot(5) is True
    assert from_binlog is not None and from_binlog(0) is False
    assert column_kind(tinyint1(True)) == Kind.BOOL_INT
    number = tinyint1(False)
    assert not reads_tinyint1_as_boolean(number)
    assert (value_family(number), arrow_type(number)) == ("int", pa.int8())
    assert arrow_type(tinyint1(False, unsigned=True)) == pa.int16()  # as Flink CDC: SMALLINT
    assert snapshot_converter(number) is None and binlog_converter(number) is None
    assert column_kind(number) == Kind.I8
    # BIT(1) and wider TINYINTs are untouched by the option
    bit = MySqlColumn("b", 3, "bit", "bit(1)", tinyint1_boolean=False)
    assert arrow_type(bit) == pa.bool_()
    wide = MySqlColumn("w", 4, "tinyint", "tinyint(4)", tinyint1_boolean=True)
    assert arrow_type(wide) == pa.int8()


def test_a_tinyint1_chunk_key_is_orderable_as_a_number_only() -> None:
    config = parse_config(OPTIONS)
    keyed = CapturedTable(TableId("shop", "t"), (tinyint1(True),), (), "flag")
    with pytest.raises(SchemaError, match=r"treat-tinyint1-as-boolean\.enabled: false"):
        chunk_key_order(keyed, config)
    numbers = CapturedTable(TableId("shop", "t"), (tinyint1(False),), (), "flag")
    assert chunk_key_order(numbers, config).sort_key(-3) < chunk_key_order(
        numbers, config
    ).sort_key(5)


def test_columns_an_alter_adds_take_the_tables_reading() -> None:
    for boolean in (True, False):
        altered = alter_table(
            "ALTER TABLE shop.t ADD COLUMN ok BOOLEAN, ADD COLUMN n TINYINT(1)",
            table(tinyint1(boolean)),
            "utf8mb4",
        ).table
        types = {c.name: arrow_type(c) for c in altered.columns}
        expected = pa.bool_() if boolean else pa.int8()
        assert types == {"id": pa.int32(), "flag": expected, "ok": expected, "n": expected}


def test_a_retype_to_or_from_tinyint1_keeps_values_only_when_read_as_numbers() -> None:
    wide = MySqlColumn("flag", 2, "tinyint", "tinyint(4)")
    assert not keeps_values(tinyint1(True), dataclasses.replace(wide, tinyint1_boolean=True))
    assert keeps_values(tinyint1(False), dataclasses.replace(wide, tinyint1_boolean=False))
    small = MySqlColumn("flag", 2, "smallint", "smallint(6)", tinyint1_boolean=False)
    assert keeps_values(tinyint1(False), small)


def test_a_checkpoint_keeps_the_reading_its_tables_were_captured_with() -> None:
    old = table(tinyint1(True))
    assert with_tinyint1_option(old, True) is old
    with pytest.raises(SourceConfigurationError) as refused:
        with_tinyint1_option(old, False)
    message = str(refused.value)
    assert "treat-tinyint1-as-boolean.enabled" in message and "flag" in message
    assert "set it back to 'true'" in message
    # a table without TINYINT(1) columns just takes the option (for columns added later)
    plain = table(MySqlColumn("n", 2, "int", "int(11)"))
    assert all(not c.tinyint1_boolean for c in with_tinyint1_option(plain, False).columns)

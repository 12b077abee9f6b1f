"""``scan.incremental.snapshot.chunk.key-column``: one column, or Flink CDC's per-table form."""

from __future__ import annotations

import pytest

from sparkcdc.connectors.mysql.config import parse_config as mysql_config
from sparkcdc.connectors.postgres.config import parse_config as postgres_config
from sparkcdc.core.errors import OptionError
from sparkcdc.snapshot.options import chunk_key_columns

OPTION = "scan.incremental.snapshot.chunk.key-column"


def test_one_column_for_every_table() -> None:
    parsed = chunk_key_columns(" created_at ")
    assert parsed.column_for("db", "t") == "created_at"
    assert parsed.column_for("other", "x") == "created_at"


def test_per_table_entries_first_match_wins() -> None:
    parsed = chunk_key_columns(r"shop.orders:order_id; shop.log_\.*:at ;shop.\.*:id;")
    assert parsed.column_for("shop", "orders") == "order_id"
    assert parsed.column_for("shop", "log_2026") == "at"
    assert parsed.column_for("shop", "users") == "id"
    assert parsed.column_for("crm", "orders") is None  # the primary key's first column
    # patterns match whole names, as 'tables' does
    assert parsed.column_for("shop2", "orders") is None


@pytest.mark.parametrize(
    "text", ["", ";", "shop.orders:", ":id", "orders:id", "shop.orders:id;oops", "shop.(:id"]
)
def test_malformed_values_name_the_option_and_the_form(text: str) -> None:
    options = {"hostname": "h", "username": "u", "tables": "shop.orders", OPTION: text}
    for parse in (mysql_config, postgres_config):
        with pytest.raises(OptionError) as caught:
            parse({**options, "database-name" if parse is postgres_config else "x": "d"})
        message = str(caught.value)
        assert OPTION in message
        assert "namespace.table:column" in message


def test_configs_carry_the_parsed_option() -> None:
    config = mysql_config(
        {"hostname": "h", "username": "u", "tables": "shop.\\.*", OPTION: "shop.orders:sku"}
    )
    assert config.chunk_key_columns.column_for("shop", "orders") == "sku"
    assert config.chunk_key_columns.column_for("shop", "users") is None

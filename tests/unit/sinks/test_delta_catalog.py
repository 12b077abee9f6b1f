"""The Delta sink's catalog targets, offline: how a target's catalog name splits (as Spark's
SQL parser splits it), and which sink blocks name catalog tables, external locations and
table properties, or are refused with the fix (sinks/delta/catalog.py, config.py). Into a
Hive metastore end to end: tests/integration/test_delta_catalog.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import OptionError
from sparkcdc.sinks.delta.catalog import SESSION_CATALOG, split_name, sql_name, table_parts
from sparkcdc.sinks.delta.config import DeltaSinkConfig


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("lake.orders", ("lake", "orders")),
        ("spark_catalog.lake.orders", ("spark_catalog", "lake", "orders")),
        ("`a.b`.c", ("a.b", "c")),
        ("`x``y`.`z`", ("x`y", "z")),
        ("cat.`sch ema`.`t.1`", ("cat", "sch ema", "t.1")),
    ],
)
def test_names_split_at_dots_outside_backticks(name: str, parts: tuple[str, ...]) -> None:
    assert split_name(name) == parts


@pytest.mark.parametrize("name", ["", "a..b", ".a", "a.", "`a", "a.``"])
def test_a_malformed_name_is_refused(name: str) -> None:
    with pytest.raises(ValueError):
        split_name(name)


@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=4))
def test_a_quoted_name_splits_back_into_its_parts(parts: list[str]) -> None:
    assert split_name(sql_name(parts)) == tuple(parts)


def test_one_or_two_parts_are_in_the_session_catalog_and_more_than_three_refused() -> None:
    assert table_parts("lake.orders", "t") == (SESSION_CATALOG, "lake", "orders")
    assert table_parts("uc.lake.orders", "t") == ("uc", "lake", "orders")
    # a route's one-part sink-table: the sink's default namespace
    assert table_parts("orders", "t") == (SESSION_CATALOG, "default", "orders")
    for name in ("a.b.c.d", "a.b.c.d.e"):
        with pytest.raises(OptionError, match="expected 'catalog\\.schema\\.table'"):
            table_parts(name, "t")


def test_without_path_the_targets_are_catalog_tables_written_by_spark() -> None:
    config = DeltaSinkConfig.from_options({"table-name": "spark_catalog.lake.{table}"})
    assert config.catalog and config.path is None and config.writer == "spark"
    assert config.location is None and config.local_folder is None
    default = DeltaSinkConfig.from_options({})
    assert default.catalog and default.table_name == "{database}.{table}"
    with_path = DeltaSinkConfig.from_options({"path": "lake"})
    assert not with_path.catalog and with_path.table_name == "{database}/{table}"


def test_table_properties_and_an_external_location_relative_to_the_pipeline_file(
    tmp_path: Path,
) -> None:
    config = DeltaSinkConfig.from_options(
        {
            "location": "external",
            "table.properties.delta.logRetentionDuration": "interval 30 days",
            "table.properties.owner.Team": "data",
        }
    ).resolved(tmp_path)
    assert config.location == str(tmp_path / "external")
    assert config.local_folder == tmp_path / "external"  # checked writable up front
    assert dict(config.table_properties) == {
        "delta.logRetentionDuration": "interval 30 days",
        "owner.Team": "data",  # the key's case kept: Delta's own keys are camel case
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"writer": "native"}, "'writer: spark' for catalog tables"),
        ({"path": "lake", "location": "x"}, "'location' is for catalog tables"),
        ({"table-name": "a.b.c.{table}"}, "has 4 part"),
        ({"table-name": "`lake.{table}"}, "unclosed backtick"),
        ({"table.properties.sparkcdc.appends-for": "x"}, "keeps itself"),
    ],
)
def test_catalog_options_that_cannot_work_are_refused_with_the_fix(
    options: dict[str, str], message: str
) -> None:
    with pytest.raises(OptionError, match=message):
        DeltaSinkConfig.from_options(options)

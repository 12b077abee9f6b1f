"""The Delta sink's catalog targets, offline: how a target's catalog name splits (as Spark's
SQL parser splits it), and which sink blocks name catalog tables, external locations and
table properties, or are refused with the fix (sinks/delta/catalog.py, config.py). Into a
Hive metastore end to end: tests/integration/test_delta_catalog.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from sparkcdc.sinks.delta.catalog import (
    SESSION_CATALOG,
    literal,
    split_name,
    sql_name,
    table_parts,
    target_name,
)
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.moved_folders import earlier_folder
from sparkcdc.sinks.delta.sink import external_folder, shared_folder


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


@pytest.mark.parametrize("spelt", ["SPARK_CATALOG", "Spark_Catalog", "spark_catalog"])
def test_the_session_catalog_is_named_in_any_case(spelt: str) -> None:
    """Spark's CatalogManager finds its session catalog by name ignoring case: the target
    is the session catalog's table, its external folder the session catalog's, one target
    with ``lake.orders``, and an in-memory session catalog would forget it."""
    parts = table_parts(f"{spelt}.lake.orders", "t")
    assert parts == table_parts("lake.orders", "t") == (SESSION_CATALOG, "lake", "orders")
    assert external_folder("/x", parts) == str(Path("/x/lake/orders").resolve())
    assert table_parts("UC.lake.orders", "t")[0] == "UC"  # other catalogs: as configured


def test_the_earlier_folder_of_another_catalogs_target() -> None:
    """Before folders per catalog, another catalog's external target was in
    ``<location>/<schema>/<table>``: looked at when its catalog forgot it, unless that is
    a session catalog target's folder now (sinks/delta/moved_folders.py)."""
    uc = ("uc", "s", "t")
    earlier = earlier_folder("/lake", uc, ())
    assert earlier == str(Path("/lake/s/t").resolve())
    assert earlier_folder("/lake", (SESSION_CATALOG, "s", "t"), ()) is None
    taken = {external_folder("/lake", (SESSION_CATALOG, "s", "t"))}
    assert earlier_folder("/lake", uc, taken) is None


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


@pytest.mark.parametrize(
    ("source", "parts"),
    [
        # a source database or schema with a dot or a backtick is one part
        (TableId("shop.eu", "orders"), (SESSION_CATALOG, "shop.eu", "orders")),
        (TableId("sh`op", "orders"), (SESSION_CATALOG, "sh`op", "orders")),
        (TableId("shop", "ord`ers"), (SESSION_CATALOG, "shop", "ord`ers")),
        # a table name's dots stay separators: a route's sink-table names a catalog so
        (TableId("spark_catalog", "lake.orders"), (SESSION_CATALOG, "lake", "orders")),
        (TableId("", "orders"), (SESSION_CATALOG, "default", "orders")),
    ],
)
def test_source_names_become_catalog_names_part_by_part(
    source: TableId, parts: tuple[str, str, str]
) -> None:
    assert table_parts(target_name("{database}.{table}", source), "t") == parts


def test_external_folders_of_two_catalogs_or_nested_ones_are_refused() -> None:
    a, b, c = TableId("a", "t"), TableId("b", "t"), TableId("c", "t")
    session = external_folder("/lake", (SESSION_CATALOG, "s", "t"))
    other = external_folder("/lake", ("uc", "s", "t"))
    assert session == str(Path("/lake/s/t").resolve()) and other.endswith("/uc/s/t")
    assert shared_folder({a: session, b: other}) is None
    assert "share the external folder" in (shared_folder({a: session, b: session}) or "")
    # catalog s's schema t's table z lies inside the session table s.t's folder
    nested = external_folder("/lake", ("s", "t", "z"))
    problem = shared_folder({a: session, c: nested}) or ""
    assert str(a) in problem and str(c) in problem


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "it's",
        'say "hi"',
        "back\\slash\\'",
        "\\u0041",
        "x'); DROP TABLE y; --",
        "ends\\",  # would take the closing quote in raw mode (review)
        "ends\\\\",
    ],
)
def test_property_values_are_literals_in_either_parser_mode(value: str) -> None:
    escaped = literal(value)
    assert escaped.startswith("'") and escaped.endswith("'")
    inner = escaped[1:-1]
    # no quote ends the literal early: every quote and backslash inside is escaped
    assert re.fullmatch(r"(?:[^'\\]|\\.)*", inner, re.S)
    trailing = len(value) - len(value.rstrip("\\"))
    if "'" in value and '"' in value:
        with pytest.raises(OptionError, match="both quote characters"):
            literal(value, raw=True)
    elif trailing % 2:
        with pytest.raises(OptionError, match="ends in a backslash"):
            literal(value, raw=True)
    else:
        raw = literal(value, raw=True)
        assert raw[1:-1] == value and raw[0] not in value
        # Spark's lexer pairs a backslash with the next character in either mode
        assert re.fullmatch(r"(?:[^\\" + raw[0] + r"]|\\.)*", raw[1:-1], re.S)


def test_clustering_is_parsed_per_table_and_refused_with_the_native_writer() -> None:
    config = DeltaSinkConfig.from_options(
        {"path": "lake", "cluster.key": "app.orders: region , day ; users:country"}
    )
    assert config.cluster_columns(TableId("app", "orders").key) == ("region", "day")
    assert config.cluster_columns(TableId("", "users").key) == ("country",)
    assert config.cluster_columns(TableId("app", "other").key) == ()
    for options, message in [
        ({"cluster.key": "app.orders"}, "'db.table:col1,col2'"),
        ({"cluster.key": "a.t:x;a.t:y"}, "one entry per table"),
        ({"cluster.key": "a.t:p,q,r,s,u"}, "at most 4"),
        ({"path": "l", "writer": "native", "cluster.key": "a.t:x"}, "'writer: spark'"),
    ]:
        with pytest.raises(OptionError, match=message):
            DeltaSinkConfig.from_options(options)


def test_storage_option_errors_of_catalog_sinks_name_the_spark_writer_only() -> None:
    options = {"storage-options.AWS_REGION": "eu-west-1"}
    with pytest.raises(OptionError) as refused:
        DeltaSinkConfig.from_options(options)
    assert "writer: native" not in str(refused.value)
    with pytest.raises(OptionError, match="or set 'writer: native'"):
        DeltaSinkConfig.from_options({**options, "path": "lake"})

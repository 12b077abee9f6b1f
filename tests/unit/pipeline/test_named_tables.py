"""Sink options that name target tables (the Delta sink's ``cluster.key``, Flink CDC's
``partition.key`` form): an entry that names no target is refused before anything runs,
naming the option, the entry and what it could have meant; with
``scan.newly-added-table.enabled`` an entry for a table that may be created later waits
for it."""

from __future__ import annotations

import re

import pytest
from pyspark.sql.types import IntegerType, StructField, StructType

from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from sparkcdc.pipeline.named_tables import check_named_tables, created_later
from sparkcdc.pipeline.rules import RouteRule
from sparkcdc.pipeline.targets import Target, plan_targets
from sparkcdc.sinks.base import SinkTable
from sparkcdc.sinks.delta.config import DeltaSinkConfig
from sparkcdc.sinks.delta.sink import DeltaSink
from sparkcdc.snapshot.options import table_patterns


def table(database: str, name: str) -> SinkTable:
    schema = StructType([StructField("id", IntegerType()), StructField("region", IntegerType())])
    return SinkTable(TableId(database, name), schema, ("id",))


def route(source: str, sink_table: str, symbol: str | None = None) -> RouteRule:
    return RouteRule(table_patterns(source), sink_table, symbol, True, "pipeline.yaml:9")


def targets(*routes: RouteRule) -> list[Target]:
    tables = [table("app", "orders"), table("app", "users"), table("shop", "items_1")]
    return plan_targets(tables, routes, (), lambda t, r: t.schema)


def named(text: str) -> dict[str, dict[TableId, str]]:
    """What the Delta sink says ``cluster.key: text`` names."""
    sink = DeltaSink(DeltaSinkConfig.from_options({"path": "lake", "cluster.key": text}))
    return {k: dict(v) for k, v in sink.named_tables().items()}


def refused(text: str, plan: list[Target], may_appear: object = None) -> str:
    with pytest.raises(OptionError) as info:
        if may_appear is None:
            check_named_tables("delta", named(text), plan)
        else:
            check_named_tables("delta", named(text), plan, may_appear)  # type: ignore[arg-type]
    return str(info.value)


def test_entries_naming_targets_pass() -> None:
    check_named_tables("delta", named("app.orders:region;app.users:id,region"), targets())
    routed = targets(route("app.orders", "lake.orders"))
    check_named_tables("delta", named("lake.orders:region"), routed)
    check_named_tables("delta", {}, routed)


def test_a_misspelt_entry_names_the_option_the_entry_and_the_close_targets() -> None:
    message = refused("app.orders:region;app.ordrs:region", targets())
    assert "option 'cluster.key' has entry 'app.ordrs:region'" in message
    assert "app.ordrs is no target of this pipeline" in message
    assert "did you mean app.orders?" in message
    # a name in another case is what it meant, above a merely similar one
    assert "did you mean app.users?" in refused("APP.USERS:id", targets())


def test_an_entry_naming_a_routed_source_table_names_the_routes_target() -> None:
    message = refused("app.orders:region", targets(route("app.orders", "lake.orders")))
    assert "a route writes that source table to lake.orders: name that" in message


def test_an_entry_like_no_target_lists_the_targets() -> None:
    message = refused("zz.qq:id", targets())
    assert "(its targets: app.orders, app.users, shop.items_1)" in message
    assert re.search(r"no target of this pipeline \(it has none\)", refused("a.b:id", []))


def test_tables_created_later_may_be_named_with_newly_added_tables() -> None:
    """With ``scan.newly-added-table.enabled`` an entry waits for a table the source's
    table options match (and no route takes), or a route's sink-table; without it, or for
    a table nothing could make, it is refused as ever."""
    tables = table_patterns(r"app.\.*, shop.items_[0-9]+")
    routes = [route(r"shop.items_[0-9]+", "lake.<>", "<>"), route("app.legacy", "lake.old")]
    plan = targets(*routes)
    later = created_later(True, tables, routes)
    for name in ("app.invoices:id", "lake.items_2:id", "lake.old:id"):
        check_named_tables("delta", named(name), plan, later)
    for name in ("other.invoices:id", "shop.items_2:id", "app.legacy:id", "lake.items_x:id"):
        assert "no target of this pipeline" in refused(name, plan, later), name
    assert "no target" in refused("app.invoices:id", plan, created_later(False, tables, routes))


def test_an_entry_for_a_target_earlier_runs_wrote_waits(caplog: pytest.LogCaptureFixture) -> None:
    """A table dropped since an earlier run left its target: the entry was right when
    made, and a restart must not be refused for it (warned, not refused)."""
    with pytest.raises(OptionError):
        check_named_tables("delta", named("app.gone:id"), targets())
    check_named_tables("delta", named("app.gone:id"), targets(), written={TableId("app", "gone")})
    assert "earlier runs wrote" in caplog.text


def test_a_route_sink_table_without_its_replace_symbol_names_one_table() -> None:
    """Flink CDC lets a route's replace-symbol be missing from its sink-table: that names
    one table (was an IndexError)."""
    routes = [route("app.orders_[0-9]+", "lake.orders", "<>")]
    may_appear = created_later(True, table_patterns("app.\\.*"), routes)
    assert may_appear(TableId("lake", "orders"))
    assert not may_appear(TableId("lake", "others"))


def test_a_routed_source_table_earlier_runs_counted_is_still_refused() -> None:
    """The checkpoint's counts name source tables: an entry naming a source table a route
    writes elsewhere is the typo it was, not a target earlier runs wrote."""
    routed = targets(route("app.orders", "lake.orders"))
    with pytest.raises(OptionError, match=r"a route writes that source table to lake\.orders"):
        check_named_tables(
            "delta", named("app.orders:region"), routed, written={TableId("app", "orders")}
        )

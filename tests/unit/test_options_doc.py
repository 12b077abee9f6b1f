"""Options are declared once: the documentation's tables are rendered from the specs, the
config is filled from the specs, and the shared source options are the same objects
everywhere."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparkcdc.connectors.mysql.config import SPECS, MySqlSourceConfig, parse_config
from sparkcdc.core.errors import OptionError
from sparkcdc.core.options import OptionSpec, build_config, parse_int, parse_options
from sparkcdc.core.options_doc import (
    render_table,
    rewrite,
    shown_default,
    stale_tables,
)
from sparkcdc.core.secret import Secret
from sparkcdc.pipeline.options_tables import (
    COMMAND,
    main,
    options_tables,
    page_tables,
    rebase_links,
)
from sparkcdc.snapshot.options import BASE_STARTUP_MODES, SHARED_SPECS, SourceConfig

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The pages that may hold options tables: the README and every page under docs/.
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

TABLES = options_tables()
ALL_SPECS = [(table.name, spec) for table in TABLES for spec in table.specs]


# -- the documentation ---------------------------------------------------------------------


def test_docs_tables_match_the_specs() -> None:
    for page, tables in page_tables(PAGES, ROOT).items():
        stale = stale_tables(page.read_text(encoding="utf-8"), tables)
        assert not stale, f"{page.name}: options tables {stale} differ from the specs: {COMMAND}"


def test_every_table_is_in_exactly_one_page_and_no_block_is_unknown() -> None:
    placed = page_tables(PAGES, ROOT)  # raises when a table is in no page or in two
    for page, tables in placed.items():
        text = page.read_text(encoding="utf-8")
        assert rewrite(text, tables) == text, f"run: {COMMAND}"
        starts = re.findall(r"<!-- options:([\w.-]+) -->", text)
        assert sorted(starts) == sorted(tables)
    assert sorted(n for tables in placed.values() for n in tables) == sorted(t.name for t in TABLES)


def test_links_in_the_specs_are_rebased_to_the_page() -> None:
    text = "see [docs/signals.md](docs/signals.md#x) and [the design](docs/design.md), [w](https://a/b)"
    assert rebase_links(text, ROOT / "docs" / "postgres.md", ROOT) == (
        "see [signals.md](signals.md#x) and [the design](design.md), [w](https://a/b)"
    )
    assert rebase_links(text, README, ROOT) == text


@pytest.mark.parametrize(("table", "spec"), ALL_SPECS, ids=[f"{t}:{s.name}" for t, s in ALL_SPECS])
def test_every_spec_has_a_doc_and_a_showable_default(table: str, spec: OptionSpec) -> None:
    assert spec.doc.strip(), f"{table}: option '{spec.name}' has no doc"
    shown_default(spec)  # raises when a default needs a default_doc


def test_required_options_keep_a_short_hint_for_their_error() -> None:
    """The "is required (...)" message names the hint: the long README text stays out."""
    for table, spec in ALL_SPECS:
        if spec.required:
            assert spec.hint, f"{table}: required option '{spec.name}' has no hint"


def test_required_message_uses_the_hint() -> None:
    specs = [OptionSpec("url", required=True, hint="a URL", doc="long *Markdown* text")]
    with pytest.raises(OptionError, match=r"option 'url' is required \(a URL\)$"):
        parse_options({}, specs, context="x")


# -- rendering -----------------------------------------------------------------------------


def test_shown_defaults() -> None:
    assert shown_default(OptionSpec("a", required=True)) == "(required)"
    assert shown_default(OptionSpec("a", default=Secret(""), secret=True)) == '""'
    assert shown_default(OptionSpec("a", default=True)) == "`true`"
    assert shown_default(OptionSpec("a", default=1 << 24)) == "16777216"
    assert shown_default(OptionSpec("a", default=0.05)) == "0.05"
    assert shown_default(OptionSpec("a", default="{table}")) == "`{table}`"
    assert shown_default(OptionSpec("a", default=None)) == ""
    assert shown_default(OptionSpec("a", default=())) == ""
    assert shown_default(OptionSpec("a", default=30.0, default_doc="30s")) == "30s"
    assert shown_default(OptionSpec("a.", prefix=True)) == ""


@pytest.mark.parametrize("default", [re.compile("x"), Secret("hunter2"), ("a", "b")])
def test_defaults_without_an_option_spelling_need_default_doc(default: object) -> None:
    with pytest.raises(TypeError, match="default_doc"):
        shown_default(OptionSpec("a", default=default))


def test_render_table_one_row_per_spec_in_order_with_escaped_pipes() -> None:
    table = render_table(
        [
            OptionSpec("b", parse_int(1), 2, doc="x | y\n  continued"),
            OptionSpec("a.", prefix=True, doc="group"),
        ],
        key_header="option",
    )
    assert table.splitlines() == [
        "| option | default | meaning |",
        "|---|---|---|",
        "| `b` | 2 | x \\| y continued |",
        "| `a.*` |  | group |",
    ]


def test_rewrite_replaces_only_marked_blocks_and_is_idempotent() -> None:
    text = "intro\n<!-- options:t -->\nold\n<!-- /options:t -->\noutro\n"
    once = rewrite(text, {"t": "| new |\n"})
    assert once == "intro\n<!-- options:t -->\n\n| new |\n\n<!-- /options:t -->\noutro\n"
    assert rewrite(once, {"t": "| new |\n"}) == once
    assert stale_tables(once, {"t": "| new |\n"}) == []
    assert stale_tables(text, {"t": "| new |\n"}) == ["t"]


def test_rewrite_refuses_unknown_and_missing_blocks() -> None:
    with pytest.raises(ValueError, match="no such options table"):
        rewrite("<!-- options:x -->\n<!-- /options:x -->", {})
    with pytest.raises(ValueError, match="block for t"):
        rewrite("no markers", {"t": "| x |\n"})


def test_cli_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for page in PAGES:
        copy = tmp_path / page.relative_to(ROOT)
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(page, copy)
    copies = [tmp_path / p.relative_to(ROOT) for p in PAGES]
    mysql = tmp_path / "docs" / "mariadb-mysql.md"
    text = mysql.read_text(encoding="utf-8")
    mysql.write_text(text.replace("| `hostname` | (required) |", "| `hostname` | 1 |"))
    root = ["--root", str(tmp_path)]
    assert main(["--check", *map(str, copies), *root]) == 1
    assert COMMAND in capsys.readouterr().out
    assert main(["--write", *map(str, copies), *root]) == 0
    assert mysql.read_text(encoding="utf-8") == text
    assert main(["--check", *map(str, copies), *root]) == 0


def test_cli_refuses_a_table_in_two_pages_or_in_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twice = tmp_path / "twice.md"
    twice.write_text("<!-- options:pipeline -->\n<!-- /options:pipeline -->\n")
    assert main(["--check", str(README), *map(str, PAGES[1:]), str(twice)]) == 2
    assert "options table pipeline must be in exactly one page" in capsys.readouterr().err
    assert main(["--check", str(twice)]) == 2
    assert "found in none of the pages" in capsys.readouterr().err


# -- the config is filled from the specs -----------------------------------------------------


def test_every_config_attribute_is_declared_by_exactly_one_spec() -> None:
    attrs = [s.attr for s in SPECS if s.attr is not None]
    assert len(attrs) == len(set(attrs))
    assert set(attrs) == {f.name for f in dataclasses.fields(MySqlSourceConfig)}


#: A value for every option, none of them the default.
EVERY_OPTION = {
    "hostname": "db",
    "port": "3307",
    "username": "cdc",
    "password": "pw",
    "database-name": "shop",
    "table-name": "orders",
    "server-id": "5500-5510",
    "server-time-zone": "Europe/Berlin",
    "scan.startup.mode": "specific-offset",
    "scan.startup.specific-offset.file": "binlog.000003",
    "scan.startup.specific-offset.pos": "154",
    "scan.startup.specific-offset.gtid-set": "0-1-100",
    "scan.startup.timestamp-millis": "1700000000000",
    "scan.incremental.snapshot.chunk.size": "11",
    "scan.incremental.snapshot.chunk.key-column": "id",
    "scan.incremental.snapshot.rows-per-partition": "13",
    "scan.incremental.snapshot.rows-per-batch": "17",
    "scan.snapshot.fetch.size": "19",
    "scan.snapshot.reader": "classic",
    "chunk-key.even-distribution.factor.upper-bound": "23.0",
    "chunk-key.even-distribution.factor.lower-bound": "0.5",
    "connect.timeout": "29s",
    "connect.max-retries": "7",
    "heartbeat.interval": "31s",
    "metadata.list": "op_ts",
    "maxRowsPerTrigger": "37",
    "scan.snapshot.position": '{"file": "binlog.000002", "pos": 4, "gtid": null}',
    "jdbc.properties.sslMode": "required",
    "signal.consumer.security.protocol": "SSL",
    "tables.exclude": "shop.audit_\\.*",
}


def test_parse_config_fills_every_attribute_from_its_spec() -> None:
    opts = parse_options(EVERY_OPTION, SPECS, context="mysql-cdc")
    config = parse_config(EVERY_OPTION)
    for spec in SPECS:
        if spec.name == "tables.exclude":  # folded into the tables attribute
            assert spec.attr is None
            assert config.tables.excluded == opts[spec.name].pairs
            continue
        assert spec.attr is not None
        if spec.name == "tables":  # computed from database-name and table-name
            assert config.tables.pairs == ((opts["database-name"], opts["table-name"]),)
            continue
        expected = opts.groups[spec.name] if spec.prefix else opts[spec.name]
        assert getattr(config, spec.attr) == expected, spec.name
    required = ("hostname", "username", "database-name", "table-name")
    defaults = parse_config({k: EVERY_OPTION[k] for k in required})
    for spec in SPECS:
        if spec.name == "tables.exclude":
            assert defaults.tables.excluded == ()
            continue
        assert spec.attr is not None
        given = spec.name in required
        if not (given or spec.required or spec.prefix or spec.name in ("server-id", "tables")):
            assert getattr(defaults, spec.attr) == spec.default, spec.name


def test_build_config_refuses_values_no_spec_declares() -> None:
    specs = [OptionSpec("a", attr="a")]
    opts = parse_options({"a": "1"}, specs, context="x")
    with pytest.raises(TypeError, match="no option declares: b"):
        build_config(dict, specs, opts, b=2)
    assert build_config(dict, specs, opts, a="2") == {"a": "2"}
    with pytest.raises(TypeError, match="two options fill attribute 'a'"):
        build_config(dict, [*specs, OptionSpec("b", attr="a")], opts)


# -- shared source options -------------------------------------------------------------------


def test_mysql_declares_the_shared_specs_themselves() -> None:
    for shared in SHARED_SPECS:
        assert any(spec is shared for spec in SPECS), shared.name
    (mode,) = (s for s in SPECS if s.name == "scan.startup.mode")
    assert mode.choices[: len(BASE_STARTUP_MODES)] == tuple(BASE_STARTUP_MODES)
    assert issubclass(MySqlSourceConfig, SourceConfig)


def test_source_config_holds_exactly_the_shared_attributes() -> None:
    shared = {s.attr for s in SHARED_SPECS} | {"startup_mode"}
    assert shared == {f.name for f in dataclasses.fields(SourceConfig)}


def test_listing_every_options_table_imports_no_spark_or_drivers() -> None:
    code = (
        "import sys, sparkcdc.snapshot.options, sparkcdc.pipeline.options_tables as t; "
        "t.options_tables(); "
        "banned = ('pyspark', 'MySQLdb', 'pymysql', 'pymysqlreplication', 'psycopg'); "
        "print([m for m in sys.modules if m.split('.')[0] in banned])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- dependencies ----------------------------------------------------------------------------


def test_pydantic_is_declared_only_if_used() -> None:
    """Options are self-describing specs, not pydantic models: a dependency nobody imports
    only slows installs and invites version conflicts."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    dependencies = re.search(r"^dependencies = \[(.*?)^\]", pyproject, re.DOTALL | re.MULTILINE)
    assert dependencies is not None
    declared = re.search(r'"pydantic\b', dependencies.group(1)) is not None
    used = any(
        re.search(r"^\s*(from|import) pydantic\b", path.read_text(encoding="utf-8"), re.MULTILINE)
        for path in (ROOT / "src").rglob("*.py")
    )
    assert declared == used


def test_tables_is_flink_cdcs_comma_separated_list_or_the_pair_of_options() -> None:
    base = {k: EVERY_OPTION[k] for k in ("hostname", "username")}
    config = parse_config(base | {"tables": r"shop.orders, app_\d+.t_[0-9]{1,3}, a\.b.\.*"})
    assert config.matches("shop", "orders") and config.matches("app_7", "t_12")
    assert config.matches("a.b", "x.y")  # an escaped dot is the regular expression's dot
    assert not config.matches("shop", "items") and not config.matches("app_7", "orders")
    with pytest.raises(OptionError, match="either option 'tables' or 'database-name'"):
        parse_config(base | {"tables": "shop.orders", "table-name": "orders"})
    with pytest.raises(OptionError, match=r"option 'table-name' is required .*or 'tables'"):
        parse_config(base | {"database-name": "shop"})
    with pytest.raises(OptionError, match="'orders' is not one"):
        parse_config(base | {"tables": "shop.orders, orders"})

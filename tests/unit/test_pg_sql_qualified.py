"""Every function the PostgreSQL connector's SQL calls is named ``pg_catalog.f(...)``: a user
who may create functions in a schema on the search path (``public`` on PostgreSQL 14 and
older) cannot hijack a call with a closer signature (#63). The sessions' safe
``search_path`` (server/connection.py) covers operators and types; this keeps the SQL
itself explicit. Text shown to users (errors, option docs) is not run and not checked."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import sparkcdc.connectors.postgres as package
from sparkcdc.connectors.postgres.server.connection import SEARCH_PATH, connection_arguments

ROOT = Path(package.__file__).parent
#: Looks like SQL.
SQL = re.compile(r"\b(SELECT|FROM|WHERE|THEN|FILTER)\b|::|_changes\(")
#: ``name(`` not qualified (``x.name(``) and not a quoted identifier's end.
CALL = re.compile(r"(?<![.\w\"])([A-Za-z_]\w*)\(")
#: SQL syntax that looks like a call but is not a function looked up on the search path.
SYNTAX = {"any", "all", "exists", "in", "values", "coalesce", "greatest", "least", "nullif", "k"}
SYNTAX |= {"substring", "row", "array", "filter", "over", "cast", "key", "dom", "table"}


def _run_sql(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """String constants outside docstrings, raised errors and option docs."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))
        if isinstance(node, ast.Raise) or (isinstance(node, ast.keyword) and node.arg == "doc"):
            skipped.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            yield node.lineno, node.value


def test_every_function_call_is_schema_qualified() -> None:
    unqualified = [
        f"{path.relative_to(ROOT)}:{line}: {match.group(1)}("
        for path in sorted(ROOT.rglob("*.py"))
        for line, text in _run_sql(ast.parse(path.read_text()))
        if SQL.search(text)
        for match in CALL.finditer(text)
        if match.group(1).lower() not in SYNTAX
    ]
    assert unqualified == []


def test_the_check_sees_a_call_left_unqualified() -> None:
    tree = ast.parse('q = "SELECT format(%s, x) FROM t"\nraise E("SELECT f(1)")')
    found = [m.group(1) for _, text in _run_sql(tree) for m in CALL.finditer(text)]
    assert found == ["format"]


def test_every_session_gets_the_safe_search_path() -> None:
    from sparkcdc.connectors.postgres.config import parse_config

    config = parse_config(
        {
            "hostname": "h",
            "username": "u",
            "database-name": "d",
            "schema-name": "s",
            "table-name": "t",
            "slot.name": "s",
        }
    )
    options = connection_arguments(config)["options"]
    assert f"-c search_path={SEARCH_PATH.replace(' ', chr(92) + ' ')}" in options

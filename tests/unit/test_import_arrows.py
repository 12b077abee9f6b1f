"""Imports go only downward (docs/design.md, "Layers"), and no module of the Spark binding
imports the package root or takes part in an import circle, lazy imports inside functions
included: the session (spark/session.py) and the class-data archive (class_archive*.py)
were one."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "sparkcdc"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every sparkcdc module ``path`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "sparkcdc")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "sparkcdc"
        ):
            found.add(node.module)
    return found


GRAPH = {module_name(p): imported(p) for p in PACKAGE.rglob("*.py")}


def reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [m for m in GRAPH.get(start, ()) if m in GRAPH]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(m for m in GRAPH.get(module, ()) if m in GRAPH)
    return seen


def test_the_spark_binding_never_imports_the_package_root() -> None:
    upward = sorted(
        m for m, deps in GRAPH.items() if m.startswith("sparkcdc.spark") and "sparkcdc" in deps
    )
    assert not upward, f"import the module that holds it, not the package root: {upward}"


def test_no_module_of_the_spark_binding_is_in_an_import_circle() -> None:
    circles = sorted(m for m in GRAPH if m.startswith("sparkcdc.spark") and m in reachable(m))
    assert not circles, f"modules that import themselves through others: {circles}"

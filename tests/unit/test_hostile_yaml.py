"""Hostile pipeline files (#63): whatever YAML refuses, and files whose aliases stand for
millions of values, fail as a PipelineFileError naming the line, in bounded time, never as
a raw traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparkcdc.pipeline.yaml_file import MAX_VALUES, PipelineFileError, load_yaml


def laughs(levels: int, width: int = 10) -> str:
    """A billion-laughs file: level n is a list of ``width`` aliases of level n - 1, so the
    last stands for ``width ** levels`` values."""
    lines = ["source: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, levels):
        lines.append(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]")
    return "\n".join(lines) + "\nsink: {type: console}\npipeline: {name: x}\n"


def failure(tmp_path: Path, text: str) -> str:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    with pytest.raises(PipelineFileError) as info:
        load_yaml(path)
    return str(info.value)


@pytest.mark.timeout(120)  # a fail-safe; milliseconds here, the old loader did not finish
@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("source: !!python/object/apply:os.system [ls]\n", 1, "could not determine a constructor"),
        ("a: 1\nsource: !custom x\n", 2, "could not determine a constructor"),
        ("a: 1\nb: 2\nstarted: 2024-13-45\n", 3, "cannot read '2024-13-45'"),
        ("a: 1\nbig: " + "9" * 5000 + "\n", 2, "cannot read"),
        ("source:\n  ? [a, b]\n  : x\n", 2, "a key is a name"),
        (laughs(7), 5, f"more than {MAX_VALUES:,} values"),  # l4 stands for 10^5
        ("a: " + "[" * 60 + "]" * 60 + "\n", 1, "over 50 levels"),
    ],
    ids=["python tag", "unknown tag", "bad date", "huge number", "list key", "10^7 laughs", "deep"],
)
def test_hostile_files_name_the_line(tmp_path: Path, text: str, line: int, why: str) -> None:
    message = failure(tmp_path, text)
    assert message.startswith(f"{tmp_path / 'pipeline.yaml'}:{line}: "), message
    assert why in message, message


@pytest.mark.timeout(120)
def test_nesting_past_the_parser_is_an_error_too(tmp_path: Path) -> None:
    message = failure(tmp_path, "a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert re.search(r"nested too deeply|over 50 levels", message), message


def test_aliases_within_the_bound_still_work(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(laughs(3) + "defaults: &d {a: 1}\nmerged: {<<: *d, b: 2}\n")
    doc = load_yaml(path)
    assert len(doc.data["l2"]) == 10 and doc.data["l2"][0][0] == ["lol"] * 10
    assert doc.data["merged"] == {"a": 1, "b": 2}
    assert doc.lines["merged.b"] == 7

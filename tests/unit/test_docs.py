"""The README and the pages under docs/ say only what works: every relative link resolves
(to a file, and to a heading where it names one), and every example is checked the way
it would be used.

- ``yaml``: a pipeline file loads through the pipeline file parser (``sparkcdc validate
  --offline``); a fragment (a ``sink:`` block, a ``transform:`` block) loads in place of
  the same block of a small complete pipeline. The files under examples/ load too.
- ``python``: compiles.
- ``sh`` (and untagged blocks of ``make`` commands): each command exists; ``sparkcdc``
  command lines parse with the ``sparkcdc`` command's own parser, ``make`` targets are in
  the Makefile, ``python -m`` modules are importable, ``pip install`` names known extras.
- ``json``: parses (a document, or one object per line); ``ini``: parses; ``sql``: parses
  as the page's database speaks it (sqlglot).

Untagged blocks that are not commands are diagrams or transcripts of output, not examples.
"""

from __future__ import annotations

import configparser
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml

from sparkcdc.cli.main import build_parser
from sparkcdc.pipeline.definition import load_pipeline

ROOT = Path(__file__).resolve().parents[2]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))

#: Pages another branch is writing now (docs/mysql.md: MySQL 5.7 / 8.0 / 8.4): links to
#: them are kept while they do not exist here yet.
PENDING_PAGES = {ROOT / "docs" / "mysql.md"}

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w-]*)\s*$")
_LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\((?P<target>[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} +(?P<title>.+?) *#*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> Iterator[Block]:
    """The fenced code blocks of ``page``, indentation (a block in a list item) removed."""
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence = len(match["indent"]), match["fence"]
        end = i + 1
        while lines[end].strip() != fence:
            end += 1
        body = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        yield Block(page, i + 1, match["lang"], body)
        i = end + 1


def without_blocks(page: Path) -> str:
    """``page`` without its code blocks (where ``#`` starts no heading)."""
    text = page.read_text(encoding="utf-8")
    return re.sub(r"^ *```.*?^ *```", "", text, flags=re.DOTALL | re.MULTILINE)


def prose(page: Path) -> str:
    """``page`` without code blocks and inline code (where brackets are not links)."""
    return re.sub(r"`[^`\n]*`", "", without_blocks(page))


def slug(title: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link in a heading: its text
    title = title.lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    for line in without_blocks(page).splitlines():
        match = _HEADING.match(line)
        if match:
            base = slug(match["title"])
            name, n = base, 0
            while name in found:  # GitHub numbers repeated headings
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def links(page: Path) -> list[str]:
    return [m["target"] for m in _LINK.finditer(prose(page))]


# -- links ----------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            if resolved not in PENDING_PAGES:
                broken.append(f"{target}: no such file")
            continue
        if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading '{anchor}' in {resolved.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_checker_sees_what_github_sees(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "# A `code` title: with, punctuation\n## Again\n## Again\n"
        "[a](x.md) [b [c]](y.md#z) ![img](i.png) `[n](not-a-link)`\n"
        "```\n[n](in-a-block)\n# not a heading\n```\n"
    )
    assert anchors(page) == {"a-code-title-with-punctuation", "again", "again-1"}
    assert links(page) == ["x.md", "y.md#z"]


def test_the_newcomers_path_is_on_the_first_screen() -> None:
    """Install -> quickstart -> own database, and the design, within the first 15 lines."""
    first_screen = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:15])
    for target in ("#install", "#quickstart", "#your-own-database", "docs/design.md"):
        assert f"]({target})" in first_screen, target


def test_the_readme_stays_short_and_keeps_its_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    assert "make demo" in lines and "make test" in lines  # alone on their lines (.ci/run)


# -- examples ---------------------------------------------------------------------------------

ALL_BLOCKS = [b for page in PAGES for b in blocks(page)]


def _ids(found: list[Block]) -> list[str]:
    return [b.where for b in found]


YAML = [b for b in ALL_BLOCKS if b.lang == "yaml"]
PYTHON = [b for b in ALL_BLOCKS if b.lang == "python"]
SHELL = [
    b
    for b in ALL_BLOCKS
    if b.lang in ("sh", "bash", "shell")
    or (not b.lang and all(line.startswith("make ") for line in b.text.strip().splitlines()))
]
OTHER = [b for b in ALL_BLOCKS if b.lang in ("json", "ini", "sql")]
KNOWN = {"yaml", "python", "sh", "bash", "shell", "json", "ini", "sql", ""}


def test_every_block_has_a_language_the_checks_know() -> None:
    unknown = [f"{b.where}: {b.lang}" for b in ALL_BLOCKS if b.lang not in KNOWN]
    assert not unknown


#: What a fragment is completed with: the smallest pipeline the parser accepts.
BASE_PIPELINE: dict[str, Any] = {
    "source": {
        "type": "mysql",
        "hostname": "127.0.0.1",
        "username": "cdc",
        "tables": r"app_db.\.*",
    },
    "sink": {"type": "console"},
    "pipeline": {"name": "docs", "checkpoint": "checkpoint"},
}


def load_offline(text: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``text`` through the pipeline file parser, as ``sparkcdc validate --offline`` does;
    ``${VAR}`` references get a value from the environment."""
    for name in re.findall(r"\$\{(\w+)", text):
        monkeypatch.setenv(name, "from-the-environment")
    document = yaml.safe_load(text)
    assert isinstance(document, dict), "a YAML example is a mapping of blocks"
    if not {"source", "sink"} <= set(document):  # a fragment completed by the base pipeline
        complete = dict(BASE_PIPELINE)
        for block, value in document.items():
            base: Any = BASE_PIPELINE.get(block)
            # a block naming its type stands alone; one without (a few source options, the
            # pipeline's spark-conf) adds to the base block
            alone = not isinstance(base, dict) or "type" in value
            complete[block] = value if alone else {**base, **value}
        text = yaml.safe_dump(complete, sort_keys=False)
    path = folder / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    load_pipeline(path)


@pytest.mark.parametrize("block", YAML, ids=_ids(YAML))
def test_yaml_examples_load_as_pipelines(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_offline(block.text, tmp_path, monkeypatch)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_files_load(example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_offline(example.read_text(encoding="utf-8"), tmp_path, monkeypatch)


@pytest.mark.parametrize("block", PYTHON, ids=_ids(PYTHON))
def test_python_examples_compile(block: Block) -> None:
    compile(block.text, block.where, "exec")


def commands(text: str) -> Iterator[list[str]]:
    """The command lines of a shell block, comments and line continuations handled."""
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value command
            words = words[1:]
        if words:
            yield words


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([\w-]+):", text, re.MULTILINE))


def extras() -> set[str]:
    """The extras the installed sparkcdc declares (pyproject.toml's)."""
    return set(importlib.metadata.metadata("sparkcdc").get_all("Provides-Extra") or [])


#: The interpreter's scripts (sparkcdc, spark-submit): pytest may run without them on PATH.
BIN = Path(sys.executable).parent


@functools.cache
def spark_submit_flags() -> set[str]:
    """The options ``spark-submit --help`` lists (PySpark's own launcher)."""
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ["PATH"]])}
    done = subprocess.run(
        [str(BIN / "spark-submit"), "--help"], capture_output=True, text=True, timeout=120, env=env
    )
    return set(re.findall(r"^\s+(--[\w-]+)", done.stdout + done.stderr, re.MULTILINE))


#: Commands of the shell or of other products a page shows in use (Kafka's own tools).
OTHER_PRODUCTS_TOOLS = {".", "cd", "echo", "mkdir", "git", "tar", "kafka-console-producer.sh"}


def check_command(words: list[str]) -> None:
    program = words[0] if words[0] == "." else Path(words[0]).name
    if program == "sparkcdc":
        try:
            build_parser().parse_args(words[1:])
        except SystemExit as exc:
            if exc.code != 0:  # --help and --version exit 0
                raise AssertionError(f"sparkcdc refuses {shlex.join(words)}") from exc
    elif program == "make":
        assert set(words[1:]) <= make_targets(), f"no such make target: {words[1:]}"
    elif program.startswith("python") and words[1:2] == ["-m"]:
        module = words[2]
        assert importlib.util.find_spec(module) is not None, f"no module {module}"
    elif program == "pip" and words[1:2] == ["install"]:
        for word in words[2:]:
            match = re.search(r"\[([\w,-]+)\]", word)
            if match:
                assert set(match[1].split(",")) <= extras(), f"unknown extra in {word}"
    elif program == "spark-submit":
        flags = {w.split("=")[0] for w in words[1:] if w.startswith("--")}
        assert flags <= spark_submit_flags(), f"spark-submit has no {flags - spark_submit_flags()}"
    else:
        found = shutil.which(program, path=os.pathsep.join([str(BIN), os.environ["PATH"]]))
        assert found or program in OTHER_PRODUCTS_TOOLS, f"no command {program}"


@pytest.mark.parametrize("block", SHELL, ids=_ids(SHELL))
def test_shell_examples_name_commands_that_exist(
    block: Block, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # benchmarks.* are modules of the checkout
    monkeypatch.syspath_prepend(str(ROOT))
    for words in commands(block.text):
        check_command(words)


def test_the_command_checks_fail_on_what_does_not_exist() -> None:
    for wrong in (
        ["sparkcdc", "run"],  # the pipeline file is missing
        ["sparkcdc", "status", "p.yaml", "--no-such-flag"],
        ["make", "no-such-target"],
        ["python", "-m", "sparkcdc.no_such_module"],
        ["pip", "install", "sparkcdc[no-such-extra]"],
        ["no-such-program-anywhere"],
        ["spark-submit", "--no-such-option", "x"],
    ):
        with pytest.raises(AssertionError):
            check_command(wrong)


def _sql_dialect(page: Path) -> str:
    return "postgres" if "postgres" in page.name else "mysql"


@pytest.mark.parametrize("block", OTHER, ids=_ids(OTHER))
def test_json_ini_and_sql_examples_parse(block: Block) -> None:
    if block.lang == "json":
        try:
            json.loads(block.text)
        except json.JSONDecodeError:
            for line in block.text.splitlines():
                if line.strip():
                    json.loads(line)
    elif block.lang == "ini":
        configparser.ConfigParser().read_string(block.text)
    else:
        dialect = "mysql" if block.page.name == "README.md" else _sql_dialect(block.page)
        for statement in sqlglot.parse(block.text, read=dialect):
            assert statement is not None

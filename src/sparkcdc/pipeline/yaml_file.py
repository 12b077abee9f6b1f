"""Reading a pipeline YAML file while remembering where each key was written.

Errors in a pipeline file must name the file, the line and the key, so the loader keeps
the line of every mapping key (by dotted path) next to the plain data.

A file is parsed once (PyYAML's safe loader: no Python objects) and read in bounded time
whatever it holds: aliases may repeat a node, so a file of a few lines can stand for a
billion values ("billion laughs"); it may expand to at most :data:`MAX_VALUES` values and
nest :data:`MAX_DEPTH` deep. Whatever the loader refuses (an unknown tag, a date like
2024-13-45, a 5000-digit number) is a :class:`PipelineFileError` naming the line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sparkcdc.core.errors import SparkCdcError

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
#: Values (scalars, lists, mappings) a file may stand for once its aliases are expanded.
MAX_VALUES = 100_000
#: How deep lists and mappings may nest.
MAX_DEPTH = 50


class PipelineFileError(SparkCdcError, ValueError):
    """A pipeline file is not valid YAML or has a wrong key or value."""


@dataclass
class YamlDocument:
    """Parsed YAML data plus the 1-based line of each key (``"sink.path"`` -> 12)."""

    path: Path
    data: dict[str, Any]
    lines: dict[str, int] = field(default_factory=dict)

    def error(self, key: str, message: str) -> PipelineFileError:
        """An error pointing at ``key`` (a dotted path); at its parent if it is absent."""
        return PipelineFileError(f"{self.where(key)}: '{key}': {message}")

    def where(self, key: str) -> str:
        """``file:line`` of ``key``, or of its nearest parent that has a line."""
        probe = key
        while probe and probe not in self.lines:
            probe = probe.rpartition(".")[0]
        line = self.lines.get(probe)
        return f"{self.path}:{line}" if line else str(self.path)


def load_yaml(path: str | Path) -> YamlDocument:
    """Parse ``path``; ``${NAME}`` / ``${NAME:-default}`` in values read the environment
    (keeps passwords out of pipeline files)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise PipelineFileError(f"cannot read pipeline file {file}: {exc.strerror}") from None
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                raise PipelineFileError(f"{file}: the pipeline file is empty")
            if not isinstance(node, yaml.MappingNode):
                raise PipelineFileError(
                    f"{file}:{node.start_mark.line + 1}: a pipeline file is a mapping with the "
                    "keys 'source', 'sink' and 'pipeline'"
                )
            lines: dict[str, int] = {}
            _collect_lines(node, "", lines, [MAX_VALUES], file)
            data = loader.construct_document(node)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            where = f"{file}:{mark.line + 1}" if mark is not None else str(file)
            problem = getattr(exc, "problem", None) or str(exc)
            raise PipelineFileError(f"{where}: invalid YAML: {problem}") from None
        except RecursionError:
            raise PipelineFileError(
                f"{file}: invalid YAML: lists or mappings nested too deeply"
            ) from None
    finally:
        loader.dispose()
    doc = YamlDocument(file, data, lines)
    doc.data = _substitute(data, "", doc)
    return doc


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader whose failures all carry the line: a constructor's own error
    (``datetime.date(2024, 13, 45)``, ``int`` of 5000 digits) becomes a YAML error at the
    node it was building."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {node.value!r} as {node.tag}: {exc}", node.start_mark
            ) from None


def _collect_lines(
    node: yaml.Node,
    prefix: str,
    lines: dict[str, int],
    left: list[int],
    file: Path,
    depth: int = 0,
    origin: int = 0,
) -> None:
    """Lines of mapping keys (``sink.path``) and of list items (``route[0]``, and their
    keys ``route[0].sink-table``); counts the values the node stands for (``left``: how
    many more may come) and its depth, failing past the limits at the line of the
    top-level key being read (``origin``: aliases lead anywhere)."""
    left[0] -= 1
    if left[0] < 0 or depth > MAX_DEPTH:
        what = f"more than {MAX_VALUES:,} values" if left[0] < 0 else f"over {MAX_DEPTH} levels"
        raise PipelineFileError(
            f"{file}:{origin or node.start_mark.line + 1}: this stands for {what} (YAML "
            "aliases repeat what they name); a pipeline file is far smaller"
        )
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = f"{prefix.removesuffix('.')}[{index}]"
            lines[key] = item.start_mark.line + 1
            _collect_lines(item, key + ".", lines, left, file, depth + 1, origin)
        return
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise PipelineFileError(
                f"{file}:{key_node.start_mark.line + 1}: a key is a name, not a list or mapping"
            )
        key = f"{prefix}{key_node.value}"
        lines[key] = key_node.start_mark.line + 1
        start = origin or lines[key]
        _collect_lines(value_node, key + ".", lines, left, file, depth + 1, start)


def _substitute(value: Any, key: str, doc: YamlDocument) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, f"{key}.{k}" if key else str(k), doc) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, key, doc) for v in value]
    if isinstance(value, str) and "${" in value:

        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            found = os.environ.get(name, default)
            if found is None:
                raise doc.error(key, f"environment variable {name} is not set")
            return found

        return _ENV.sub(replace, value)
    return value

"""Reading a pipeline YAML file while remembering where each key was written.

Errors in a pipeline file must name the file, the line and the key, so the loader keeps
the line of every mapping key (by dotted path) next to the plain data.
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
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark is not None else str(file)
        problem = getattr(exc, "problem", None) or str(exc)
        raise PipelineFileError(f"{where}: invalid YAML: {problem}") from None
    if node is None:
        raise PipelineFileError(f"{file}: the pipeline file is empty")
    if not isinstance(node, yaml.MappingNode):
        raise PipelineFileError(
            f"{file}:{node.start_mark.line + 1}: a pipeline file is a mapping with the keys "
            "'source', 'sink' and 'pipeline'"
        )
    lines: dict[str, int] = {}
    _collect_lines(node, "", lines)
    data = yaml.safe_load(text)
    doc = YamlDocument(file, data, lines)
    doc.data = _substitute(data, "", doc)
    return doc


def _collect_lines(node: yaml.Node, prefix: str, lines: dict[str, int]) -> None:
    """Lines of mapping keys (``sink.path``) and of list items (``route[0]``, and their
    keys ``route[0].sink-table``)."""
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = f"{prefix.removesuffix('.')}[{index}]"
            lines[key] = item.start_mark.line + 1
            _collect_lines(item, key + ".", lines)
        return
    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        key = f"{prefix}{key_node.value}"
        lines[key] = key_node.start_mark.line + 1
        _collect_lines(value_node, key + ".", lines)


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

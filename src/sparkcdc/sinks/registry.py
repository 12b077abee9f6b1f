"""Sink types by name: one table of them, option validation (offline) and construction.

A pipeline file names its sink (``sink: type: delta``); the table below says which folder
under ``sinks/`` holds that sink, and the folder's ``__init__`` declares it as ``SINK``, a
:class:`~sparkcdc.sinks.base.SinkType`. Folders are imported only when their sink is asked
for, and a declaration imports just its sink's options module, so validating a pipeline
file imports neither pyspark nor a database driver. Adding a sink: a folder with a ``SINK``
declaration, and one line in :data:`_SINKS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparkcdc.core.errors import OptionError
from sparkcdc.sinks.base import Sink, SinkType
from sparkcdc.sinks.capabilities import SinkCapabilities

#: Sink type name -> the package whose ``SINK`` declares it (in the order messages list them).
_SINKS: Mapping[str, str] = {
    "delta": "sparkcdc.sinks.delta",
    "jdbc": "sparkcdc.sinks.jdbc",
    "console": "sparkcdc.sinks.console",
    "kafka": "sparkcdc.sinks.kafka",
}

#: The names a pipeline file's ``sink: type:`` accepts.
SINK_TYPES = tuple(_SINKS)


def sink_type(kind: str) -> SinkType[Any]:
    """The declaration of sink type ``kind``; raises OptionError listing the valid types."""
    if kind not in _SINKS:
        raise OptionError(f"sink: invalid type '{kind}'. Valid values: {', '.join(SINK_TYPES)}")
    declared: SinkType[Any] = importlib.import_module(_SINKS[kind]).SINK
    return declared


def sink_types() -> list[SinkType[Any]]:
    """Every registered sink type, in :data:`SINK_TYPES` order."""
    return [sink_type(kind) for kind in SINK_TYPES]


def validate_sink_options(kind: str, options: Mapping[str, str]) -> object:
    """Parse a sink's options; raises OptionError naming the option and the valid values."""
    return sink_type(kind).parse(options)


def sink_capabilities(kind: str, options: Mapping[str, str]) -> SinkCapabilities:
    """What a sink of type ``kind`` with ``options`` declares it does
    (sinks/capabilities.py), known offline."""
    declared = sink_type(kind)
    return declared.capabilities(declared.parse(options))


def make_sink(
    kind: str,
    options: Mapping[str, str],
    base_dir: Path | None = None,
    pipeline_id: str | None = None,
) -> Sink:
    """A sink of type ``kind``; relative paths in its options resolve against ``base_dir``
    (the pipeline file's folder). ``pipeline_id`` (name and query id, see WritePlan) lets a
    sink that keeps per-pipeline bookkeeping find it before the first batch (``verify``)."""
    declared = sink_type(kind)
    return declared.create(declared.parse(options), base_dir, pipeline_id)

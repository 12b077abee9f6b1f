"""A source without old rows never feeds a sink whose targets keep them.

PostgreSQL's ``changelog-mode: upsert`` (docs/postgres.md) gives updates as their new row
and deletes as their key: an upsert target (Delta upsert, JDBC, Kafka ``upsert``) stays
exact, while a history or a changelog topic would hold updates without their ``-U`` row
and deletes without their values. Such a pipeline is refused when it is loaded, before
anything connects, naming both ways out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparkcdc.core.errors import OptionError
from sparkcdc.sinks.registry import sink_capabilities


def refuse_missing_before_images(
    source_config: Any, sink_type: str, sink_options: Mapping[str, str]
) -> None:
    """Raise when the source leaves old rows out (its config's ``upsert``) and the sink's
    declaration says its targets need them (``SinkCapabilities.needs_before_images``)."""
    if not getattr(source_config, "upsert", False):
        return
    if not sink_capabilities(sink_type, sink_options).needs_before_images:
        return
    raise OptionError(
        f"option 'changelog-mode' is upsert: updates and deletes then carry no old rows, "
        f"and this {sink_type} sink keeps every change with its old row (a history, a "
        "changelog topic). Write to an upsert target (delta with changelog-mode: upsert, "
        "jdbc, kafka with value.format: upsert), or capture with changelog-mode: all "
        "(tables with REPLICA IDENTITY FULL)"
    )

"""A source without old rows never feeds a sink whose targets keep them.

PostgreSQL's ``changelog-mode: upsert`` (docs/postgres.md) gives updates as their new row
and deletes as their key: an upsert target (Delta upsert, JDBC, Kafka ``upsert``) stays
exact, while a history or a changelog topic would hold updates without their ``-U`` row
and deletes without their values. Such a pipeline is refused when it is loaded, before
anything connects, naming both ways out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparkcdc.core.errors import OptionError
from sparkcdc.pipeline.rules import TransformRule
from sparkcdc.pipeline.yaml_file import PipelineFileError
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


def refuse_transforms_needing_old_rows(source_config: Any, rules: Sequence[TransformRule]) -> None:
    """Raise when the source leaves old rows out and a transform needs a row's values to
    place its changes: a ``filter`` (a delete's image holds the key alone, so the filter
    drops it, and an update leaving the filter has no old row to remove) or
    ``primary-keys`` (a key made of other columns is NULL on a delete)."""
    if not getattr(source_config, "upsert", False):
        return
    for rule in rules:
        if rule.filter is not None or rule.primary_keys:
            what = "filter" if rule.filter is not None else "primary-keys"
            raise PipelineFileError(
                f"{rule.where}: option '{what}' needs each change's old row, and with "
                "changelog-mode: upsert deletes carry only the key and updates no old row "
                "(a filtered-out delete or update would stay in the target). Remove the "
                f"transform's '{what}', or capture with changelog-mode: all (tables with "
                "REPLICA IDENTITY FULL)"
            )

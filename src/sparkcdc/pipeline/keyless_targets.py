"""Tables without a primary key meet their targets: refused up front where a key is needed.

A keyless table's rows are a multiset (docs/design.md, "Tables without a primary key"):
an append (history) target takes every change as it is and replays to the table, but an
upsert target matches rows by a key, and none exists. Only the user can say which columns
identify the rows (a transform's ``primary-keys``, Flink CDC's pipeline syntax); a key is
never chosen for them, so a pipeline routing a keyless table to an upsert target without
one is refused before anything runs, naming the table and both ways out.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparkcdc.pipeline.targets import Target
from sparkcdc.pipeline.yaml_file import PipelineFileError
from sparkcdc.sinks.capabilities import UPSERT


def refuse_keyless_upserts(write_mode: str, targets: Sequence[Target]) -> None:
    """Raise naming the first table without a key (its own or a transform's
    ``primary-keys``) that ``targets`` would write to an upsert target."""
    if write_mode != UPSERT:
        return
    for target in targets:
        for source in target.sources:
            if source.key:
                continue
            table = source.table.source
            raise PipelineFileError(
                f"table {table} has no primary key, and the sink writes upserts, which match "
                "rows by a key; sparkcdc never picks one. Either write it to an append "
                "(history) target (a Delta sink with 'changelog-mode: append'), or declare "
                "the columns that identify its rows with a transform: "
                f"'- source-table: {table}' with 'primary-keys: <col>[,<col>...]' (rows "
                "sharing those values would overwrite each other in the target)"
            )

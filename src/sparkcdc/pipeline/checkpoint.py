"""What a pipeline reads from Spark's checkpoint folder.

Spark writes a batch's end offsets to ``offsets/<batch id>`` *before* it runs the batch
(the write-ahead log that makes replays deterministic), and the query's id to
``metadata`` when the checkpoint is created. Sinks store the offset next to the data (for
``verify``) and key their exactly-once bookkeeping by the query id, which stays the same
across restarts from the same checkpoint and changes when the checkpoint is reset.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from sparkcdc.core.table import TableId
from sparkcdc.core.table_events import TableEvent
from sparkcdc.snapshot.offset import LogJson, SourceOffset


def batch_offset(checkpoint: Path, batch_id: int) -> str | None:
    """The source's end offset of batch ``batch_id`` (JSON text), or None if not found.

    The file is ``v1``, a line of batch metadata, then one line per source."""
    try:
        lines = (checkpoint / "offsets" / str(batch_id)).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    sources = [line for line in lines[2:] if line.strip() and line.strip() != "-"]
    return sources[0] if len(sources) == 1 else None


def last_committed_offset(checkpoint: Path) -> str | None:
    """The end offset of the last batch Spark committed (JSON text), or None before the
    first commit: where a restarted query continues."""
    try:
        ids = [int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit()]
    except OSError:
        return None
    return batch_offset(checkpoint, max(ids)) if ids else None


def query_id(checkpoint: Path) -> str:
    """The streaming query's id recorded in the checkpoint."""
    data = json.loads((checkpoint / "metadata").read_text(encoding="utf-8"))
    return str(data["id"])


def private_folder(folder: Path) -> Path:
    """``folder``, made if missing, readable by its owner only (0700): a checkpoint holds
    the source's positions and table names, its log the pipeline's messages, and the
    signal and pause files in it steer the pipeline. An existing folder of ours is made
    private too; one of another user is left as it is."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if folder.stat().st_uid == os.geteuid():
        folder.chmod(0o700)
    return folder


def ensure_query_id(checkpoint: Path) -> str:
    """The query id of ``checkpoint``, written first when it has none.

    Spark keeps the id it finds in ``metadata`` (a JSON object ``{"id": ...}``, the form it
    writes itself) and makes one only when there is none. Writing it before the query
    starts tells the sink the pipeline's identity when it creates the targets of a first
    run, so it can create them as this pipeline's own (sinks/delta: their snapshot rows
    are appended) instead of marking each with a commit of its own at its first batch.

    Only a missing file is written: one that cannot be read fails as it would in Spark,
    since a new id would be a new identity, and every batch's commits would look new to
    the sinks. The file is linked into place, which fails if another process was first;
    then its id is the one."""
    try:
        return query_id(checkpoint)
    except FileNotFoundError:
        pass
    private_folder(checkpoint)
    scratch = checkpoint / f".metadata.{uuid.uuid4()}"
    scratch.write_text(json.dumps({"id": str(uuid.uuid4())}, separators=(",", ":")), "utf-8")
    try:
        os.link(scratch, checkpoint / "metadata")
    except FileExistsError:
        pass
    finally:
        scratch.unlink()
    return query_id(checkpoint)


@dataclass(frozen=True)
class BatchOffsets:
    """A micro-batch's end offset and the previous batch's end offset (where it starts),
    as Spark's checkpoint has them: ``foreachBatch`` gets the rows and the batch id only,
    and the source's planner, in a process of its own, has no other way to tell the
    pipeline what the batch carries besides rows (table events, progress). Each is
    decoded once (``SourceOffset.parse``)."""

    batch_id: int
    #: The end offset's JSON text (None: not found).
    text: str | None
    #: The previous batch's end offset's JSON text (None: the first batch, or not found).
    previous_text: str | None

    @classmethod
    def read(cls, checkpoint: Path, batch_id: int, before: BatchOffsets | None) -> BatchOffsets:
        """Batch ``batch_id``'s offsets; the previous one from ``before`` (the batch this
        process wrote last) when that is the batch before, else from the checkpoint."""
        text = batch_offset(checkpoint, batch_id)
        previous = None
        if batch_id and text is not None:
            if before is not None and before.batch_id == batch_id - 1:
                previous = before.text
            else:
                previous = batch_offset(checkpoint, batch_id - 1)
        return cls(batch_id, text, previous)

    @property
    def end(self) -> SourceOffset[LogJson] | None:
        return None if self.text is None else SourceOffset.parse(self.text)

    @property
    def start(self) -> SourceOffset[LogJson] | None:
        return None if self.previous_text is None else SourceOffset.parse(self.previous_text)

    def events(self, known: Collection[TableId]) -> list[TableEvent]:
        """The batch's table events for a consumer that holds the tables ``known``
        (``SourceOffset.table_events``); none when the end offset is not known."""
        end = self.end
        return [] if end is None else end.table_events(self.start, known)

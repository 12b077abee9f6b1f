"""``debezium-json``: one message per row change, with before and after images.

The envelope is Debezium's: ``before``, ``after``, ``op`` (``c`` insert, ``u`` update,
``d`` delete, ``r`` snapshot read), ``source`` (``db``, ``table``, binlog ``file``, ``pos``,
``gtid``) and ``ts_ms`` (the commit time in epoch milliseconds). Row images are row JSON
(:mod:`sparkcdc.formats.row_json`). A sparkcdc changelog has an update as two rows
(pre/post image); this format folds them into one ``u`` message, and :func:`to_changes`
unfolds it again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import Row
from sparkcdc.formats.row_json_decode import MalformedRecordError, RowJson, dumps, loads

OPS = ("c", "u", "d", "r")


@dataclass(frozen=True)
class SourceInfo:
    """Where a change came from (Debezium's ``source`` block, the fields sparkcdc knows)."""

    db: str | None = None
    table: str | None = None
    file: str | None = None
    pos: int | None = None
    gtid: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "db": self.db,
            "table": self.table,
            "file": self.file,
            "pos": self.pos,
            "gtid": self.gtid,
        }


@dataclass(frozen=True)
class DebeziumRecord:
    """One debezium-json message: ``op`` says which of ``before``/``after`` are set."""

    op: str
    before: Row | None
    after: Row | None
    source: SourceInfo = SourceInfo()
    ts_ms: int | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise MalformedRecordError(f"unknown debezium op {self.op!r}")
        needs_before = self.op in ("u", "d")
        needs_after = self.op in ("c", "u", "r")
        if (self.before is not None) != needs_before or (self.after is not None) != needs_after:
            raise MalformedRecordError(
                f"debezium op {self.op!r} with before={'set' if self.before else 'null'}, "
                f"after={'set' if self.after else 'null'}"
            )


def to_changes(record: DebeziumRecord) -> list[tuple[ChangeType, Row]]:
    """The changelog rows of one message (an update gives its pre- and post-image)."""
    if record.op == "u":
        assert record.before is not None and record.after is not None
        return [
            (ChangeType.UPDATE_PREIMAGE, record.before),
            (ChangeType.UPDATE_POSTIMAGE, record.after),
        ]
    if record.op == "d":
        assert record.before is not None
        return [(ChangeType.DELETE, record.before)]
    assert record.after is not None
    return [(ChangeType.INSERT, record.after)]


class DebeziumJsonCodec:
    """Encodes and decodes one table's changes as debezium-json values."""

    def __init__(
        self, names: Sequence[str], types: Sequence[pa.DataType], key: Sequence[str] = ()
    ) -> None:
        self.rows = RowJson(names, types, key)

    def _image(self, row: Row | None) -> dict[str, Any] | None:
        return None if row is None else self.rows.encode_values(row)

    def encode(self, record: DebeziumRecord) -> str:
        return dumps(
            {
                "before": self._image(record.before),
                "after": self._image(record.after),
                "op": record.op,
                "source": record.source.as_json(),
                "ts_ms": record.ts_ms,
            }
        )

    def decode(self, text: str | bytes) -> DebeziumRecord:
        message = loads(text)
        if not isinstance(message, Mapping):
            raise MalformedRecordError(f"expected a debezium-json object, got {message!r}")
        if "payload" in message and isinstance(message["payload"], Mapping):
            message = message["payload"]  # Kafka Connect's schemas.enable=true wrapping
        source = message.get("source") or {}
        if not isinstance(source, Mapping):
            raise MalformedRecordError(f"debezium source is not an object: {source!r}")
        ts_ms = message.get("ts_ms")
        if ts_ms is not None and (not isinstance(ts_ms, int) or isinstance(ts_ms, bool)):
            raise MalformedRecordError(f"debezium ts_ms is not an integer: {ts_ms!r}")
        before, after = message.get("before"), message.get("after")
        return DebeziumRecord(
            op=message.get("op"),  # type: ignore[arg-type]
            before=None if before is None else self.rows.decode_values(before),
            after=None if after is None else self.rows.decode_values(after),
            source=SourceInfo(
                db=source.get("db"),
                table=source.get("table"),
                file=source.get("file"),
                pos=source.get("pos"),
                gtid=source.get("gtid"),
            ),
            ts_ms=ts_ms,
        )

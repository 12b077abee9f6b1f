"""``upsert`` messages (Flink's upsert-kafka): key JSON, value JSON, tombstone for a delete;
and the keep-last-row normalisation that turns them back into a changelog.

The Kafka key is the primary key as a JSON object, the value the whole row as row JSON
(:mod:`sparkcdc.formats.row_json`), and a delete is a tombstone (null value), so a
compacted topic keeps each key's last row. A pre-image carries no message of its own:
the post-image that follows overwrites the key. An update that moves the primary key
leaves the old key, so its pre-image becomes a tombstone of the old key.

:func:`normalize` is Flink's ``ChangelogNormalize`` (keep last row) for one key: it needs
only the key's stored row, which a streaming engine keeps in its state store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import Row
from sparkcdc.formats.row_json_decode import RowJson


@dataclass(frozen=True)
class UpsertMessage:
    """A Kafka message of the upsert format: ``value`` None is a tombstone."""

    key: str
    value: str | None


class UpsertJsonCodec:
    """Encodes one table's changelog rows as upsert messages and reads them back."""

    def __init__(self, names: Sequence[str], types: Sequence[pa.DataType], key: Sequence[str]):
        if not key:
            raise ValueError("the upsert format needs the primary key columns")
        self.rows = RowJson(names, types, key)

    def encode(self, kind: ChangeType, row: Row, moves_key: bool = False) -> UpsertMessage | None:
        """The message for one changelog row. A pre-image gives none, unless the update
        moves the key (``moves_key``): then it is the old key's tombstone."""
        key = self.rows.encode_key(row)
        if kind in (ChangeType.INSERT, ChangeType.UPDATE_POSTIMAGE):
            return UpsertMessage(key, self.rows.encode(row))
        if kind == ChangeType.DELETE or moves_key:
            return UpsertMessage(key, None)
        return None

    def decode(self, message: UpsertMessage) -> tuple[tuple[object, ...], Row | None]:
        """``(key values, row or None for a tombstone)``; the row's key must match."""
        key = self.rows.decode_key(message.key)
        if message.value is None:
            return key, None
        return key, self.rows.decode(message.value)


def normalize(stored: Row | None, incoming: Row | None) -> list[tuple[ChangeType, Row]]:
    """The changelog rows one upsert message gives, given the key's stored row.

    ``+I`` for a new key, ``-U``/``+U`` for a changed row, nothing for an identical row
    (so replayed messages are harmless), ``-D`` of the stored row for a tombstone, and
    nothing for a tombstone of a key never seen. The key's new stored row is ``incoming``.
    """
    if incoming is None:
        return [] if stored is None else [(ChangeType.DELETE, stored)]
    if stored is None:
        return [(ChangeType.INSERT, incoming)]
    if stored == incoming:
        return []
    return [(ChangeType.UPDATE_PREIMAGE, stored), (ChangeType.UPDATE_POSTIMAGE, incoming)]

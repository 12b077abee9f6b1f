"""``changelog-json``: one message per changelog row, ``{"data":{...},"op":"+I"}``.

This is the layout Flink CDC's changelog-json format writes (``data`` first, then ``op``
with Flink's row kind ``+I``, ``-U``, ``+U`` or ``-D``), so Flink jobs and sparkcdc can read
each other's topics. Row values are row JSON (:mod:`sparkcdc.formats.row_json`), lossless
for every type the MySQL source emits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from sparkcdc.core.changes import ChangeType
from sparkcdc.core.rows import Row
from sparkcdc.formats.row_json_decode import MalformedRecordError, RowJson, dumps, loads

#: Flink row kind (changelog-json ``op``) -> ``_change_type``.
CHANGE_TYPES: Mapping[str, ChangeType] = {t.row_kind: t for t in ChangeType}


class ChangelogJsonCodec:
    """Encodes and decodes one table's changelog rows as changelog-json values."""

    def __init__(
        self, names: Sequence[str], types: Sequence[pa.DataType], key: Sequence[str] = ()
    ) -> None:
        self.rows = RowJson(names, types, key)

    def encode(self, kind: ChangeType, row: Row) -> str:
        return dumps({"data": self.rows.encode_values(row), "op": kind.row_kind})

    def decode(self, text: str | bytes) -> tuple[ChangeType, Row]:
        """``(change type, row)``; raises :class:`MalformedRecordError` for anything else."""
        message = loads(text)
        if not isinstance(message, Mapping):
            raise MalformedRecordError(f"expected a changelog-json object, got {message!r}")
        kind = CHANGE_TYPES.get(message.get("op"))  # type: ignore[arg-type]
        if kind is None:
            raise MalformedRecordError(f"unknown changelog-json op {message.get('op')!r}")
        data = message.get("data")
        if data is None:
            raise MalformedRecordError("changelog-json message without data")
        return kind, self.rows.decode_values(data)

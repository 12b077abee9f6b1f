"""Compiled decoding of binlog row events (docs/binlog-decoder.md).

:class:`FastRowDecoder` turns one rows event's body into row tuples equal to what the
reference path (python-mysql-replication's ``event.rows`` + ``binlog.RowDecoder``) gives,
about 10-20x faster. The C extension is built by ``pip install``; without it
(:data:`AVAILABLE` False) callers use the reference path.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sparkcdc.connectors.mysql.binlog.rowdecode.plan import Plan, WireColumn, build_plan
from sparkcdc.connectors.mysql.server.discovery import CapturedTable
from sparkcdc.core.rows import Row

if TYPE_CHECKING:
    import pyarrow as pa

    from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import ColumnSink, Layout

try:
    from sparkcdc.connectors.mysql.binlog.rowdecode import _rowdecode  # type: ignore[attr-defined]

    AVAILABLE = True
    IMPORT_ERROR = ""
except ImportError as exc:  # a source tree without the build (see README: pip install -e .)
    _rowdecode = None
    AVAILABLE = False
    IMPORT_ERROR = str(exc)


def refuse_images_without_columns(
    present: bytes | None, present2: bytes | None, remaining: int
) -> None:
    """Raise ValueError for a rows event whose row images have no column (an all-zero
    columns-present bitmap) while body bytes remain: such images take no bytes, so
    python-mysql-replication would read them until memory runs out. The C decoder refuses
    the same bodies; the reference path calls this before ``event.rows`` (``present`` is
    None for an event the library did not parse: it has no rows)."""
    if present is None or remaining <= 0:
        return
    if not any(present) and not (present2 and any(present2)):
        raise ValueError(
            "rows event body is malformed: no column is present in its row images "
            "(all-zero columns-present bitmap)"
        )


class FastRowDecoder:
    """One table map's compiled decoder; ``plan.entries is None`` means "not covered"."""

    def __init__(self, wire: Sequence[WireColumn], table: CapturedTable) -> None:
        self.plan: Plan = build_plan(wire, table)
        self.ncolumns = len(wire)
        self._decoder: Any = None
        self._layouts: dict[tuple[Any, ...], Layout | None] = {}
        self._last: tuple[Sequence[pa.DataType] | None, Layout | None] = (None, None)
        if self.plan.entries is not None:
            if _rowdecode is None:
                self.plan = Plan(None, self.plan.width, f"no compiled decoder: {IMPORT_ERROR}")
            else:
                self._decoder = _rowdecode.Decoder(self.plan.entries, self.plan.width, Decimal)

    @property
    def covered(self) -> bool:
        return self._decoder is not None

    def decode(
        self,
        buf: bytes,
        start: int,
        end: int,
        present: bytes,
        present2: bytes | None = None,
    ) -> list[Row]:
        """Rows of ``buf[start:end]`` (a rows event's row images); with ``present2`` (update
        events) the list alternates before and after images."""
        rows: list[Row] = self._decoder.decode(buf, start, end, present, present2)
        return rows

    def arrow_layout(self, types: Sequence[pa.DataType]) -> Layout | None:
        """The C code's Arrow layout per output column when it writes exactly ``types``
        (the table's Arrow types) for every column; None: only :meth:`decode` applies."""
        if types is self._last[0]:  # the same list every event of a table: no hashing
            return self._last[1]
        key = tuple(types)
        if key not in self._layouts:
            from sparkcdc.connectors.mysql.binlog.rowdecode.arrow import entry_matches

            layout: Layout | None = None
            entries = self.plan.entries
            if self._decoder is not None and entries is not None and len(types) == self.plan.width:
                matches = all(e[1] < 0 or entry_matches(e, types[e[1]]) for e in entries)
                layout = self._decoder.layout() if matches else None
            self._layouts[key] = layout
        self._last = (types, self._layouts[key])
        return self._layouts[key]

    def decode_into(
        self,
        sink: ColumnSink,
        buf: bytes,
        start: int,
        end: int,
        present: bytes,
        present2: bytes | None = None,
        version: int = 0,
        seconds: int = 0,
        kind: int = 0,
    ) -> int:
        """:meth:`decode`'s row images appended to ``sink``'s Arrow buffers; returns how
        many. A sink with change columns also gets each image's ``_change_type`` (``kind``,
        see ``arrow.KIND_CODES``), ``_commit_version`` (``version`` + row index) and
        ``_commit_timestamp`` (``seconds``). On an error nothing of this event stays in the
        sink."""
        count: int = self._decoder.decode_into(
            sink._sink, buf, start, end, present, present2, version, seconds, kind
        )
        return count


__all__ = [
    "AVAILABLE",
    "FastRowDecoder",
    "Plan",
    "WireColumn",
    "build_plan",
    "refuse_images_without_columns",
]

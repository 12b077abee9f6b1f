"""Compiled decoding of binlog row events (docs/binlog-decoder.md).

:class:`FastRowDecoder` turns one rows event's body into row tuples equal to what the
reference path (python-mysql-replication's ``event.rows`` + ``binlog.RowDecoder``) gives,
about 10-20x faster. The C extension is built by ``pip install``; without it
(:data:`AVAILABLE` False) callers use the reference path.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sparkcdc.connectors.mysql.discovery import CapturedTable
from sparkcdc.connectors.mysql.rowdecode.plan import Plan, WireColumn, build_plan
from sparkcdc.core.rows import Row

try:
    from sparkcdc.connectors.mysql.rowdecode import _rowdecode  # type: ignore[attr-defined]

    AVAILABLE = True
    IMPORT_ERROR = ""
except ImportError as exc:  # a source tree without the build (see README: pip install -e .)
    _rowdecode = None
    AVAILABLE = False
    IMPORT_ERROR = str(exc)


class FastRowDecoder:
    """One table map's compiled decoder; ``plan.entries is None`` means "not covered"."""

    def __init__(self, wire: Sequence[WireColumn], table: CapturedTable) -> None:
        self.plan: Plan = build_plan(wire, table)
        self.ncolumns = len(wire)
        self._decoder: Any = None
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


__all__ = ["AVAILABLE", "FastRowDecoder", "Plan", "WireColumn", "build_plan"]

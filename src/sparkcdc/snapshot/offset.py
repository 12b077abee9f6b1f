"""The stream offset: one log position and one small progress entry per table.

```json
{"log": {...the connector's position...},
 "tables": {"shop.orders": {"cursor": {"int": "80960"}}},
 "bounded": false}
```

O(tables), whatever the table sizes (docs/design.md, "Offsets"). ``bounded`` (startup mode
``snapshot``) freezes the log position. With signal channels (``signal.file``, a Kafka
topic), ``signals`` holds each channel's position read up to and ``paused`` whether
re-reads are paused (snapshot/signal.py); both are left out of the JSON until used.
Spark stores offsets as JSON; the framework works on this typed form.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic

from sparkcdc.core.position import P
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.progress import TableProgress


@dataclass(frozen=True)
class SourceOffset(Generic[P]):
    log: P
    tables: Mapping[TableId, TableProgress] = field(default_factory=dict)
    bounded: bool = False
    #: Each signal channel's position read up to, by channel name (JSON values).
    signals: Mapping[str, Any] = field(default_factory=dict)
    #: Re-reads asked for by signals are paused (``pause-snapshot``).
    paused: bool = False

    @property
    def snapshotting(self) -> bool:
        """Chunks are to be read: some table's snapshot has not finished, or a re-read
        runs (and is not paused)."""
        tables = self.tables.values()
        return any(not p.done for p in tables) or (
            not self.paused and any(p.reading for p in tables)
        )

    def to_json(self) -> dict[str, Any]:
        data = {
            "log": self.log.to_json(),
            "tables": {t.key: p.to_json() for t, p in sorted(self.tables.items())},
            "bounded": self.bounded,
        }
        if self.signals:
            data["signals"] = dict(self.signals)
        if self.paused:
            data["paused"] = True
        return data

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], position: Callable[[Mapping[str, Any]], P]
    ) -> SourceOffset[P]:
        return cls(
            position(data["log"]),
            {TableId.from_key(t): TableProgress.from_json(p) for t, p in data["tables"].items()},
            bool(data.get("bounded", False)),
            dict(data.get("signals", {})),
            bool(data.get("paused", False)),
        )

"""The stream offset: one log position and one small progress entry per table.

```json
{"log": {...the connector's position...},
 "tables": {"shop.orders": {"cursor": {"int": "80960"}}},
 "bounded": false}
```

O(tables), whatever the table sizes (docs/design.md, "Offsets"). ``bounded`` (startup mode
``snapshot``) freezes the log position. Spark stores offsets as JSON; the framework works
on this typed form.
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

    @property
    def snapshotting(self) -> bool:
        """Some table's snapshot has not finished."""
        return any(not p.done for p in self.tables.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "log": self.log.to_json(),
            "tables": {t.key: p.to_json() for t, p in sorted(self.tables.items())},
            "bounded": self.bounded,
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], position: Callable[[Mapping[str, Any]], P]
    ) -> SourceOffset[P]:
        return cls(
            position(data["log"]),
            {TableId.from_key(t): TableProgress.from_json(p) for t, p in data["tables"].items()},
            bool(data.get("bounded", False)),
        )

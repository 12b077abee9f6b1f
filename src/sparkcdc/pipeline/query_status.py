"""Reading a Spark streaming query's status (``StreamingQuery.status``) for a clean stop.

A stop interrupts the query's thread. Between two triggers that cuts only the wait
for the next one. While the query still initializes its sources it can cut the start
of the source's Python process (``PythonStreamingSourceRunner``), and Spark builds its
error report by initializing the sources again, on the interrupted thread, which fails at
once and leaves a JVM stack and a Python traceback ("Can not open socket") in Spark's log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: How Spark's status messages start before the query runs its first trigger
#: ("Initializing StreamExecution", then "Initializing sources").
INITIALIZING = "Initializing"


def between_triggers(status: Mapping[str, Any]) -> bool:
    """Whether a stop now interrupts nothing: the query has initialized its sources and
    no trigger runs (none plans, reads or writes a batch)."""
    if str(status.get("message", "")).startswith(INITIALIZING):
        return False
    return not status["isTriggerActive"]

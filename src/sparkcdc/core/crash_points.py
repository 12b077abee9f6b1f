"""Named points where ``sparkcdc run`` (or any process of sparkcdc's) can be made to die by
SIGKILL, for the tests of what a crash there leaves behind.

A kill at a random moment seldom lands in the few milliseconds that matter most, e.g.
after the sink applied a schema change to the target and before Spark committed the
batch that carries it; the restart then replays the batch, and the change must not be
applied twice (a rename twice, or a rename taken as a drop and an add, loses the column's
values). With ``SPARKCDC_CRASH_AT=<point>`` in its environment, a run kills itself (its
process group when it leads one, as ``kill -9 -PGID`` would, JVM and Python workers
included) the first time it reaches ``<point>``. Without the variable nothing happens.
"""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger(__name__)

#: The environment variable naming the point to die at.
CRASH_AT = "SPARKCDC_CRASH_AT"
#: After the sink applied a schema change to the target, before the run state records it.
SCHEMA_ALTERED = "schema-altered"
#: After the sink applied a schema change and the run state recorded it, before the batch
#: is written and committed.
SCHEMA_APPLIED = "schema-applied"
#: After a JDBC sink's CREATE TABLE of a new target (its open transaction not committed:
#: on PostgreSQL nothing is kept; MySQL commits each DDL statement at once).
JDBC_TARGET_CREATED = "jdbc-target-created"
#: After the native writer staged a new Delta target's first commit in a temporary file,
#: before linking it into place as commit 0.
DELTA_COMMIT_STAGED = "delta-commit-staged"
POINTS = (SCHEMA_ALTERED, SCHEMA_APPLIED, JDBC_TARGET_CREATED, DELTA_COMMIT_STAGED)


def crash_point(name: str) -> None:
    """Die here by SIGKILL if ``SPARKCDC_CRASH_AT`` names this point."""
    assert name in POINTS, name
    if os.environ.get(CRASH_AT) != name:
        return
    log.warning("%s=%s: killing this run (SIGKILL)", CRASH_AT, name)
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)

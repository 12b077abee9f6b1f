"""Random concurrent writes for source tests: inserts, updates, primary-key moves and
deletes, in multi-statement transactions that span two tables.

The statements are the database's (each connector's test fixture supplies them); the mix and
the transactions are the same for every connector, so every source is checked against the
same kind of history.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WriteStatements:
    """DML on ``orders (id, name, qty)`` and ``audit (note)``, with ``%s`` parameters."""

    upsert: str  #: (id, name, qty): insert, or bump qty when the key exists
    update: str  #: (id,): change the row's non-key columns
    move: str  #: (new id, id): move a key; nothing when the new key is taken
    delete: str  #: (id,)
    audit: str  #: (note,): a row in the second table


class RandomWriter(threading.Thread):
    """Writes until stopped (or ``limit`` transactions); ``stop()`` raises its failure."""

    def __init__(
        self,
        connect: Callable[[], Any],
        statements: WriteStatements,
        seed: int,
        key_space: int,
    ) -> None:
        super().__init__(daemon=True)
        self.connect, self.statements = connect, statements
        self.rng, self.key_space = random.Random(seed), key_space
        self.stop_event = threading.Event()
        self.limit = 4000
        self.pause = 0.002  #: seconds between transactions
        self.transactions = 0
        self.rollbacks = 0  #: transactions the server rolled back (deadlocks), not retried
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.connect() as conn, conn.cursor() as cur:
                while not self.stop_event.is_set() and self.transactions < self.limit:
                    try:
                        cur.execute("BEGIN")
                        for _ in range(self.rng.randint(1, 4)):
                            self.one(cur)
                        cur.execute("COMMIT")
                    except Exception as exc:
                        if not rolled_back(exc):
                            raise
                        # a deadlock with a test's own statement: the server undid the
                        # transaction (or, on a lock wait timeout, its statement)
                        cur.execute("ROLLBACK")
                        self.rollbacks += 1
                        continue
                    self.transactions += 1
                    self.stop_event.wait(self.pause)
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def one(self, cur: Any) -> None:
        s, k, op = self.statements, self.rng.randrange(self.key_space), self.rng.random()
        if op < 0.35:
            cur.execute(s.upsert, (k, f"n{k}-{self.rng.random():.4f}", self.rng.randint(0, 99)))
        elif op < 0.7:
            cur.execute(s.update, (k,))
        elif op < 0.8:
            cur.execute(s.move, (self.rng.randrange(self.key_space), k))
        elif op < 0.9:
            cur.execute(s.delete, (k,))
        else:
            cur.execute(s.audit, (f"touched {k}",))

    def stop(self) -> None:
        self.stop_event.set()
        self.join(60)
        if self.error:
            raise self.error


def rolled_back(error: BaseException) -> bool:
    """A deadlock or a lock wait timeout (SQLSTATE class 40, or MariaDB's 1205, whose
    SQLSTATE is HY000): the writes go on, as an application's would after a retry."""
    return str(getattr(error, "sqlstate", "") or "").startswith("40") or (
        getattr(error, "args", (None,))[:1] == (1205,)
    )

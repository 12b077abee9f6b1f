"""Which PostgreSQL tables without a primary key can be captured, and the fix for the others.

A keyless table is captured as a multiset of rows (docs/design.md, "Tables without a
primary key") when all of these hold; each one missing leaves it out with a warning that
names what would capture it (``snapshot/keyless.py``), never failing the tables around it:

* a chunk key column (``scan.incremental.snapshot.chunk.key-column``) for its chunks, or
  at most ``scan.incremental.snapshot.chunk.size`` rows when it joins the capture: it is
  then read as one chunk (discovery counts them: ``snapshot/keyless.py: too_large``);
* ``REPLICA IDENTITY FULL``: an UPDATE or DELETE of a keyless row names the row by its old
  values, which the WAL carries only under FULL (DEFAULT has no key to carry, NOTHING
  carries nothing), and the multiset normalisation needs the old image;
* ``changelog-mode: all``: ``upsert`` matches rows by the key the WAL's changes carry, and a
  keyless table has none.
"""

from __future__ import annotations

from sparkcdc.connectors.postgres.server.sql import quote_table
from sparkcdc.core.table import TableId
from sparkcdc.snapshot.keyless import KeylessHelp

_OPTION = "scan.incremental.snapshot.chunk.key-column"
_SILENCE = "or leave it out of 'tables' to silence this"
_AS_MULTISET = (
    "its rows are then captured as a multiset: an append target, or a transform's "
    "primary-keys for an upsert target"
)

#: ``changelog-mode: upsert``: no key in the WAL, whatever the table's identity.
UNDER_UPSERT = KeylessHelp(
    "changelog-mode: upsert matches rows by the primary key the WAL's changes carry, and a "
    "table without one has none",
    "capture it in a source with changelog-mode: all, REPLICA IDENTITY FULL and a chunk key "
    f"column ('{_OPTION}'), give it a primary key, {_SILENCE}",
    "Capture them with changelog-mode: all, REPLICA IDENTITY FULL and a chunk key column "
    f"('{_OPTION}'), add a primary key, or select tables that have one",
)


def keyless_help(table_id: TableId, identity: str, upsert: bool) -> KeylessHelp | None:
    """Why the keyless ``table_id`` (``pg_class.relreplident`` ``identity``) cannot be
    captured, with the fix; None: it can (chunked by its chunk key column, or without one
    read as one chunk if it is small enough, which discovery counts)."""
    if upsert:
        return UNDER_UPSERT
    full = f"ALTER TABLE {quote_table(table_id)} REPLICA IDENTITY FULL;"
    if identity != "f":
        return KeylessHelp(
            "a table without a primary key needs REPLICA IDENTITY FULL: only then do the WAL's "
            "updates and deletes carry the old row, the one thing that tells which row they "
            "change",
            f"run {full} ({_AS_MULTISET}), give it a primary key, {_SILENCE}",
            "Make them REPLICA IDENTITY FULL, add a primary key, or select tables that have one",
        )
    return None

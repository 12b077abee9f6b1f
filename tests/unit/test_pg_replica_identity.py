"""Which replica identities each ``changelog-mode`` captures, and the fix it names; which
tables without a primary key are captured, and the fix named for the others."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparkcdc.connectors.postgres.config import parse_config
from sparkcdc.connectors.postgres.server.keyless import UNDER_UPSERT, keyless_help
from sparkcdc.connectors.postgres.server.validation import identity_problem
from sparkcdc.core.errors import OptionError
from sparkcdc.core.table import TableId
from tests.unit.test_pg_decode import CAPTURED

TABLE = CAPTURED[TableId("s", "a")]


@pytest.mark.parametrize("ident", ["d", "n", "i"])
def test_changelog_mode_all_needs_full(ident: str) -> None:
    assert identity_problem(replace(TABLE, replica_identity="f"), upsert=False) == ""
    problem = identity_problem(replace(TABLE, replica_identity=ident), False, ("id",))
    assert 'ALTER TABLE "s"."a" REPLICA IDENTITY FULL;' in problem
    assert "changelog-mode: upsert" in problem


def test_changelog_mode_upsert_needs_the_key_in_every_delete() -> None:
    for ident in ("d", "f"):
        assert identity_problem(replace(TABLE, replica_identity=ident), upsert=True) == ""
    indexed = replace(TABLE, replica_identity="i")
    assert identity_problem(indexed, True, ("id",)) == ""
    other_index = identity_problem(indexed, True, ("v",))
    assert "USING INDEX on (v), not the primary key" in other_index
    nothing = identity_problem(replace(TABLE, replica_identity="n"), upsert=True)
    assert "REPLICA IDENTITY NOTHING" in nothing
    for problem in (other_index, nothing):
        assert 'ALTER TABLE "s"."a" REPLICA IDENTITY DEFAULT;' in problem


def test_changelog_mode_option() -> None:
    base = {
        "hostname": "h",
        "username": "u",
        "password": "p",
        "database-name": "d",
        "schema-name": "s",
        "table-name": "t",
        "slot.name": "slot",
    }
    assert not parse_config(base).upsert
    assert parse_config({**base, "changelog-mode": "UPSERT"}).upsert
    with pytest.raises(OptionError, match="changelog-mode") as raised:
        parse_config({**base, "changelog-mode": "retract"})
    assert "all, upsert" in str(raised.value)


def test_a_keyless_table_needs_full_identity_and_changelog_mode_all() -> None:
    """Its chunk key column, or its size when it has none, is discovery's to check (a
    small one is read as one chunk: ``snapshot/keyless.py: too_large``)."""
    table = TableId("s", "log")
    assert keyless_help(table, "f", upsert=False) is None
    full = 'ALTER TABLE "s"."log" REPLICA IDENTITY FULL;'
    for ident in ("d", "n", "i"):
        not_full = keyless_help(table, ident, upsert=False)
        assert not_full is not None and full in not_full.fix
    for ident in ("d", "f"):
        assert keyless_help(table, ident, upsert=True) is UNDER_UPSERT
    assert "REPLICA IDENTITY FULL" in UNDER_UPSERT.fix
    assert "changelog-mode: all" in UNDER_UPSERT.fix

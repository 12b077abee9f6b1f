"""The random writer's statements on the harness's PostgreSQL (tests/support/random_writer.py)."""

from __future__ import annotations

from tests.support.random_writer import WriteStatements

POSTGRES_WRITES = WriteStatements(
    upsert="INSERT INTO orders VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
    "SET qty = orders.qty + 1",
    update="UPDATE orders SET qty = qty + 1, name = name || 'u' WHERE id = %s",
    move="UPDATE orders o SET id = m.id FROM (SELECT %s::bigint AS id) m "
    "WHERE o.id = %s AND NOT EXISTS (SELECT 1 FROM orders WHERE id = m.id)",
    delete="DELETE FROM orders WHERE id = %s",
    audit="INSERT INTO audit (note) VALUES (%s)",
)

"""WAL volume of an UPDATE-heavy run under REPLICA IDENTITY DEFAULT vs FULL (issue 64).

    .venv/bin/python -m benchmarks.postgres_wal_identity [--rows N] [--updates N]

Starts a private PostgreSQL (``wal_level=logical``), and for each identity loads a fresh
table of ``--rows`` rows (bigint key, two int, a 100-character text, and a ~4 kB jsonb
document that PostgreSQL stores TOASTed), then runs ``--updates`` single-row UPDATEs of
one int column (random keys, 100 per transaction) and reads ``pg_current_wal_lsn()``
before and after. The difference is WAL bytes written, a count, not a timing: it does
not depend on the machine's load. FULL writes each updated row's old values (its TOASTed
values flattened) into the WAL; DEFAULT writes only the new row (and, for a changed key,
the old key). Nothing is asserted.
"""

from __future__ import annotations

import argparse

from sparkcdc.embedded import EmbeddedPostgres

DATABASE = "walbench"

TABLE = """
CREATE TABLE public.items (
    id BIGINT PRIMARY KEY,
    qty INT NOT NULL,
    price INT NOT NULL,
    label TEXT NOT NULL,
    doc JSONB NOT NULL
)
"""

LOAD = """
INSERT INTO public.items
SELECT g, mod(g, 100), mod(g, 977), repeat(md5(g::text), 3) || repeat('l', 4),
       jsonb_build_object('id', g, 'body',
           (SELECT string_agg(md5((g * 1000 + i)::text), '') FROM generate_series(1, 120) i))
FROM generate_series(1, %s) g
"""

UPDATES = """
DO $$
DECLARE t INT;
BEGIN
  FOR t IN 1..%(transactions)s LOOP
    UPDATE public.items SET qty = qty + 1
    WHERE id IN (SELECT 1 + floor(random() * %(rows)s)::bigint FROM generate_series(1, 100));
    COMMIT;
  END LOOP;
END $$
"""


def wal_bytes(postgres: EmbeddedPostgres, identity: str, rows: int, updates: int) -> int:
    """WAL bytes the updates wrote under ``identity`` (on a freshly loaded table)."""
    with postgres.connect(DATABASE) as conn:
        conn.execute("DROP TABLE IF EXISTS public.items")
        conn.execute(TABLE)
        conn.execute(f"ALTER TABLE public.items REPLICA IDENTITY {identity}")
        conn.execute(LOAD, (rows,))
        conn.execute("CHECKPOINT")  # full-page images after it are the same in both runs
        ((start,),) = conn.execute("SELECT pg_current_wal_lsn()").fetchall()
        conn.execute(UPDATES % {"transactions": max(1, updates // 100), "rows": rows})
        ((bytes_written,),) = conn.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (start,)
        ).fetchall()
    return int(bytes_written)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--updates", type=int, default=50_000)
    args = parser.parse_args()
    postgres = EmbeddedPostgres().start()
    try:
        postgres.create_database(DATABASE)
        with postgres.connect(DATABASE) as conn:
            ((version,),) = conn.execute("SHOW server_version").fetchall()
            ((toasted,),) = conn.execute(
                "SELECT pg_column_size(jsonb_build_object('body', (SELECT string_agg("
                "md5(i::text), '') FROM generate_series(1, 120) i)))"
            ).fetchall()
        print(f"PostgreSQL {version}; rows {args.rows}; updates {args.updates}")
        print(f"jsonb document: {toasted} bytes stored (over 2 kB: TOASTed)")
        results = {}
        for identity in ("DEFAULT", "FULL"):
            results[identity] = wal_bytes(postgres, identity, args.rows, args.updates)
            per = results[identity] / args.updates
            print(f"{identity:8} WAL {results[identity]:>14,} bytes  ({per:,.0f} per update)")
        print(f"FULL / DEFAULT: {results['FULL'] / results['DEFAULT']:.1f}x")
    finally:
        postgres.stop()


if __name__ == "__main__":
    main()

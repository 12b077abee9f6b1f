"""JDBC sink for PostgreSQL and MySQL/MariaDB targets (see docs/sinks-jdbc.md).

Batched upserts and deletes, one target transaction per micro-batch that also records the
batch id, so replays change nothing. ``config`` holds the options, ``dialects`` what
differs between the targets, ``sink`` the algorithm.
"""

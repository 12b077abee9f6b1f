"""PostgreSQL connector: wal part."""
